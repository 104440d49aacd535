"""`--max-flows`: a run over the budget is refused up front in one line, exit 2."""

from __future__ import annotations

import subprocess
import sys


def test_ps_over_the_budget_is_refused_in_one_line() -> None:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "tensorwire",
            "simulate",
            "--model",
            "resnet50",
            "-n",
            "16",
            "-b",
            "25Gbps",
            "-s",
            "ps",
            "--max-flows",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tensorwire: error: max_flows: ps on 16 workers"), p.stderr
    assert "ps:placement=sharded" in lines[0] and "--max-flows" in lines[0]
    assert p.stdout == ""
