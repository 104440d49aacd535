"""Every documented example in the package runs and prints what it says.

The modules are collected automatically: every module of ``python/tensorwire`` whose source
has a ``>>>`` example (no hand-kept list to forget a module in). A module that needs an
optional dependency that is not installed (torch, optuna, plotly, pyarrow, ray) is skipped
with the reason.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest
import tensorwire

PACKAGE = Path(tensorwire.__file__).parent
OPTIONAL = ("torch", "torchvision", "optuna", "plotly", "pyarrow", "ray")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__main__.py" or ">>>" not in path.read_text(encoding="utf-8"):
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = _modules_with_examples()


def test_the_collector_finds_the_packages_examples() -> None:
    assert {"tensorwire.api", "tensorwire.failures", "tensorwire.stragglers", "tensorwire.sweep.grid"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ImportError as e:
        if e.name is not None and e.name.split(".")[0] in OPTIONAL:
            pytest.skip(f"{name} needs {e.name}, which is not installed")
        raise
    failures, tried = doctest.testmod(module, optionflags=FLAGS)
    if tried == 0:
        pytest.skip(f"{name}'s examples are sketches of a multi-process job, marked +SKIP")
    assert failures == 0
