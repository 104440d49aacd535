"""The testbed modules' documented examples run (no root needed)."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["tensorwire.testbed.jobs.ps", "tensorwire.testbed.jobs.runtime", "tensorwire.testbed.shaping", "tensorwire.testbed.validate"])
def test_doctests(name: str) -> None:
    failures, tried = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
