"""Reports: one self-contained HTML page with interactive plots of a sweep.

>>> from tensorwire.sweep import run_grid
>>> from tensorwire.report import build_report
>>> page = build_report(run_grid("resnet50", "4,8", "10Gbps,25Gbps", "ps,ring", jobs=1))
>>> page.startswith("<!DOCTYPE html>") and "resnet50-breakdown" in page
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tensorwire.report.page import build_report, write_report

__all__ = ["build_report", "write_report"]


def __getattr__(name: str) -> Any:
    """plotly (the ``report`` extra) is imported on first use, so that the CLI starts without it."""
    if name in __all__:
        from tensorwire.report import page

        return getattr(page, name)
    raise AttributeError(f"module 'tensorwire.report' has no attribute {name!r}")
