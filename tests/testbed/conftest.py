"""Testbed tests need root, ``ip``/``tc`` and network namespaces. Where these are missing,
every test marked ``testbed`` is skipped with the reason (shown by ``pytest -ra``); tests
that need torch are skipped with that reason when the ``torch`` extra is not installed."""

from __future__ import annotations

import importlib.util
from typing import Optional

import pytest
from tensorwire.testbed import cleanup_leftovers, unavailable_reason

_reason: Optional[str] = None
_checked = False


def _unavailable() -> Optional[str]:
    global _reason, _checked
    if not _checked:
        _reason, _checked = unavailable_reason(), True
    return _reason


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("testbed") is None:
            continue
        reason = _unavailable()
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"testbed unavailable: {reason}"))
        elif item.get_closest_marker("needs_torch") and importlib.util.find_spec("torch") is None:
            item.add_marker(pytest.mark.skip(reason="torch is not installed (pip install torch)"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_torch: needs torch (Gloo) installed")


@pytest.fixture(autouse=True, scope="session")
def _no_leftovers() -> None:
    """Starts from a clean machine: removes what killed earlier runs left behind."""
    if _unavailable() is None:
        cleanup_leftovers()
