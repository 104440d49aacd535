"""Every script in examples/ prints exactly the output recorded beside it (``NAME.out``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))


def test_every_example_has_its_output() -> None:
    assert len(SCRIPTS) >= 3
    assert {p.stem for p in SCRIPTS} == {p.stem for p in EXAMPLES.glob("*.out")}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_example_prints_its_recorded_output(script: Path) -> None:
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert run.stdout == script.with_suffix(".out").read_text()
