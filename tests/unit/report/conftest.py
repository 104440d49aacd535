"""A small sweep shared by the report tests, and its page."""

from __future__ import annotations

from pathlib import Path

import pytest
from tensorwire.report import build_report, write_report
from tensorwire.sweep import run_grid, write_rows

Rows = list[dict[str, object]]


@pytest.fixture(scope="session")
def rows() -> Rows:
    """Two models, 4 and 8 workers, 1 and 25 Gbps, three strategies with the ps baseline."""
    return run_grid("resnet50,vgg16", "4,8", "1Gbps,25Gbps", "ps,ring,ps+multicast", jobs=2)


@pytest.fixture(scope="session")
def page_file(rows: Rows, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_report(path, build_report(rows))
    return path


@pytest.fixture(scope="session")
def sweep_file(rows: Rows, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sweep") / "sweep.csv"
    write_rows(path, rows)
    return path
