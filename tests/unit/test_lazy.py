"""Lazy package exports: unknown names, caching, and a missing extra named in one line."""

from __future__ import annotations

from typing import Any

import pytest
from tensorwire.lazy import lazy_exports


def test_a_missing_extra_is_named_with_what_to_install() -> None:
    ns: dict[str, Any] = {}
    get, names = lazy_exports(
        "tensorwire", {"Thing": "no_such_module_here"}, ns, {"tensorwire.no_such_module_here": "torch"}
    )
    with pytest.raises(
        ImportError, match=r"^tensorwire.Thing needs tensorwire.no_such_module_here: pip install 'tensorwire\[torch\]'$"
    ):
        get("Thing")
    assert names() == ["Thing"] and ns == {}
    # A missing module that no extra provides is not disguised.
    get, _ = lazy_exports("tensorwire", {"Thing": "no_such_module_here"}, ns, {})
    with pytest.raises(ModuleNotFoundError):
        get("Thing")
    with pytest.raises(AttributeError, match="has no attribute 'Other'"):
        get("Other")
