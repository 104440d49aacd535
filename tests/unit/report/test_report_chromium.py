"""The report page in headless Chromium: it loads with no console error, no failed load (the
network is blocked) and no uncaught exception, and every plot is drawn as SVG with its traces.

Chromium comes from Debian's package (scripts/setup-chromium.sh, run by `make test`); the
tests skip, saying so, only where it is not installed. Set TENSORWIRE_SCREENSHOT_DIR to keep
the screenshot of the page.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterator

import pytest
from headless import Browser, find

EXECUTABLE = find()
pytestmark = pytest.mark.skipif(
    EXECUTABLE is None, reason="chromium is not installed (scripts/setup-chromium.sh installs Debian's package as root)"
)

PLOTS = """
Array.from(document.querySelectorAll('.plotly-graph-div')).map(div => ({
  id: div.id,
  svg: div.querySelectorAll('svg.main-svg').length,
  traces: div.querySelectorAll('g.trace, g.barlayer g.points path').length,
  width: div.getBoundingClientRect().width,
  height: div.getBoundingClientRect().height,
}))
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert EXECUTABLE is not None
    with Browser(EXECUTABLE) as b:
        yield b


def test_the_report_loads_cleanly_and_draws_every_plot(browser: Browser, page_file: Path, tmp_path: Path) -> None:
    loaded = browser.load(page_file, PLOTS)
    assert loaded.errors == []
    plots = loaded.value
    ids = [p["id"] for p in plots]
    assert {
        "model-resnet50-bandwidth",
        "model-resnet50-workers",
        "model-resnet50-breakdown",
        "model-vgg16-breakdown",
    } <= set(ids)
    for p in plots:
        assert p["svg"] >= 1 and p["traces"] >= 1, p
        assert p["width"] > 300 and p["height"] > 150, p
    assert loaded.screenshot.startswith(b"\x89PNG") and len(loaded.screenshot) > 50_000
    keep = os.environ.get("TENSORWIRE_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / "report.png").write_bytes(loaded.screenshot)
        shutil.copy(page_file, Path(keep) / "report.html")


def test_the_checker_sees_errors(browser: Browser, tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><body><img src="https://example.invalid/x.png">'
        "<script>console.error('boom'); missingFunction();</script></body></html>"
    )
    errors = browser.load(bad).errors
    assert any("boom" in e for e in errors), errors
    assert any("missingFunction" in e for e in errors), errors
    assert any("example.invalid" in e for e in errors), errors
