"""Every documented example in the public modules runs and prints what it says."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "tensorwire",
    "tensorwire.api",
    "tensorwire.cluster",
    "tensorwire.device_stream",
    "tensorwire.hardware",
    "tensorwire.lazy",
    "tensorwire.strategy",
    "tensorwire.units",
    "tensorwire.workload",
    "tensorwire.workloads",
    "tensorwire.workloads.llm",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert tried > 0, f"{name} has no examples"
    assert failures == 0
