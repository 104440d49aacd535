"""The documented examples of the sweep and report modules run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["tensorwire.sweep", "tensorwire.sweep.grid", "tensorwire.sweep.run", "tensorwire.sweep.table", "tensorwire.report"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert tried > 0, f"{name} has no examples"
    assert failures == 0
