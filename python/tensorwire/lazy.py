"""Lazy package exports: a name is imported from its submodule on first use.

Packages whose modules need optional extras (torch, optuna) export their names this way, so
that importing the package costs nothing and a missing extra is reported, when a name is
used, as one line that says what to install.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping, MutableMapping


def lazy_exports(
    package: str, where: Mapping[str, str], namespace: MutableMapping[str, Any], extras: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``where`` maps each exported name to its
    submodule (relative to ``package``); a resolved name is cached in ``namespace`` (the
    package's ``globals()``); ``extras`` maps a missing module to the pip extra that
    provides it.

    >>> ns: dict[str, Any] = {}
    >>> get, names = lazy_exports("tensorwire", {"to_rate": "units"}, ns, {})
    >>> get("to_rate").__name__, "to_rate" in ns, names()
    ('to_rate', True, ['to_rate'])
    """
    exported = sorted(where)

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(f"{package}.{module}"), name)
        except ModuleNotFoundError as e:
            missing = e.name or ""
            if missing in extras:
                raise ImportError(
                    f"{package}.{name} needs {missing}: pip install 'tensorwire[{extras[missing]}]'"
                ) from e
            raise
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return exported

    return __getattr__, __dir__
