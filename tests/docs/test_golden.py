"""What a user sees has not changed: each command of ``benchmarks/golden.py`` (the demo,
``simulate``/``compare``/``jobs``/``sweep``/``strategies``/``models``/``topology``/
``import-trace``, bad inputs and the reproduction scripts) prints, exits with and writes
exactly what ``tests/golden/`` recorded.

One test per case, so a failure names the command and shows the unified diff. Cases the
script marks slow are skipped here (``benchmarks/golden.py --check`` runs them). After an
intended change of output, re-record with ``.venv/bin/python benchmarks/golden.py --record``
and review the diff of ``tests/golden/`` in the commit.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tensorwire_golden", ROOT / "benchmarks" / "golden.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


golden = _load()


@pytest.mark.parametrize("case", golden.CASES, ids=[c.name for c in golden.CASES])
def test_output_is_as_recorded(case: Any) -> None:
    if case.slow:
        pytest.skip("slow: run `benchmarks/golden.py --check`")
    outcome = golden.run(case)
    difference = golden.diff(case, outcome.text)
    assert difference is None, f"{case.command()}\n{difference}{golden.environment_note()}"


def test_every_recording_has_a_case_and_every_case_a_recording() -> None:
    recorded = {p.name for p in golden.GOLDEN.glob("*.txt")}
    cases = {golden.golden_path(c).name for c in golden.CASES}
    assert recorded == cases


def test_every_reproduction_script_is_a_case() -> None:
    scripts = {p.stem for p in golden.SCRIPTS.glob("*.py") if not p.name.startswith("_")}
    assert {c.name.removeprefix("repro_") for c in golden.CASES if c.script} == scripts


def test_normalisation_removes_only_wall_clock_times() -> None:
    err = (
        "tensorwire: [3/48] resnet50 ps+ina: 1.111 s (0.4 s)\n"
        "tensorwire: simulating: 1/3 iterations, 0.052 s simulated, 1,234 flows (10 s)\n"
        'tensorwire: error: latency: "-5us" is negative; durations must be >= 0 (0.4 s)\n'
    )
    assert golden.normalise_stderr(err) == (
        "tensorwire: [3/48] resnet50 ps+ina: 1.111 s (<T> s)\n"
        'tensorwire: error: latency: "-5us" is negative; durations must be >= 0 (0.4 s)\n'
    )
    out = "r.csv: 16 configurations in 12.5 s on local cores\n| ring | 0.5 s |\n"
    assert golden.normalise_stdout(out) == "r.csv: 16 configurations in <T> s on local cores\n| ring | 0.5 s |\n"
