"""Distributed runtime tests: real torch.distributed (Gloo on 127.0.0.1) in spawned processes.

Every test here that needs torch is skipped, with the reason shown by ``pytest -ra``, when
torch is not installed (``pip install 'tensorwire[torch]'``). Each multi-process test is
bounded: the processes are killed after a timeout and the test fails.
"""

from __future__ import annotations

import importlib.util

import pytest


def _missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


MISSING = [m for m in ("torch", "torchvision", "optuna") if _missing(m)]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/distributed/runtime/" not in str(item.fspath).replace("\\", "/"):
            continue
        if item.get_closest_marker("needs_torch") is not None and MISSING:
            item.add_marker(
                pytest.mark.skip(reason=f"{', '.join(MISSING)} not installed (pip install 'tensorwire[torch]')")
            )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_torch: needs torch, torchvision and optuna installed")
