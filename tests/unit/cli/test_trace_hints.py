"""What `simulate --trace` advises about the workers it shows and a trace cut at MAX_SPANS:
only advice that can help. It said "fewer --trace-workers shows all of it" at
--trace-workers 1, and "--trace-workers N for more" of a folded run, which simulated worker
0 alone and has no other worker to show."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tensorwire.cli import app


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


@pytest.mark.parametrize("trace_workers", ["1", "32"])
def test_a_cut_trace_of_a_folded_run_names_what_makes_fewer_spans(tmp_path: Path, trace_workers: str) -> None:
    """ResNet-50 in 64 KiB pieces on 32 workers, folded to worker 0: over 150,000 spans at
    every --trace-workers, so neither fewer nor more of them is the way to the whole trace."""
    p = run(
        "simulate", "--model", "resnet50", "-n", "32", "-b", "25Gbps", "-s", "ring:partition=64KiB",
        "--trace", "t.json", "--trace-workers", trace_workers, cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    wrote, note = p.stderr.splitlines()
    assert wrote.endswith("(worker 0 of 32: the run folded ranks that behave alike and simulated only this one)")
    assert "for more" not in wrote
    assert note.startswith("tensorwire: note: the trace stops at 150,000 spans")
    assert "fewer --trace-workers" not in note and "--iterations" not in note
    one = "one worker alone" if trace_workers == "1" else "even one worker (--trace-workers 1)"
    assert note.endswith(f"({one} has more spans than that: a larger partition= or fewer workers (-n) gives fewer)")


def _result(workers: int, per_worker: int, strategy: str = "ring", folded: bool = False) -> Any:
    """A stand-in for a traced Result: ``per_worker`` sends of each worker, no links."""
    spans = [{"worker": w, "link": None, "kind": "flow"} for w in range(workers) for _ in range(per_worker)]
    return SimpleNamespace(workers=workers, folded=folded, timeline=spans, strategy=strategy)


@pytest.mark.parametrize(
    "trace_workers, fits",
    [(8, 3), (4, 3), (3, 2), (2, 1)],
)
def test_fewer_trace_workers_is_advised_only_as_many_as_fit(
    monkeypatch: pytest.MonkeyPatch, trace_workers: int, fits: int
) -> None:
    monkeypatch.setattr(app, "MAX_SPANS", 30)  # 10 spans a worker: 3 workers fit
    assert app._cut_advice(_result(8, 10), trace_workers) == f"--trace-workers {fits} shows all of it"


def test_one_worker_too_many_names_the_options_that_make_fewer_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app, "MAX_SPANS", 5)
    assert app._cut_advice(_result(8, 10), 4) == (
        "even one worker (--trace-workers 1) has more spans than that: fewer workers (-n) gives fewer"
    )
    # partition= only where the spec gave one: a larger one makes fewer, larger messages.
    assert app._cut_advice(_result(8, 10, "ring:partition=64KiB"), 1) == (
        "one worker alone has more spans than that: a larger partition= or fewer workers (-n) gives fewer"
    )


def test_more_trace_workers_is_advised_only_where_there_are_more_to_show() -> None:
    assert app._traced(_result(16, 1), 1) == "worker 0 of 16; --trace-workers N for more"
    assert app._traced(_result(16, 1), 16) == "workers 0-15 of 16"
    # Folded to 8 simulated ranks (a rail of 8-GPU nodes): up to 8, no further.
    eight: Any = SimpleNamespace(workers=16, folded=True, simulated_ranks=8, timeline=_result(8, 1).timeline)
    assert app._traced(eight, 8) == "workers 0-7 of 16: the run folded ranks that behave alike and simulated only these"
    assert app._traced(eight, 2) == (
        "workers 0-1 of 16: the run folded ranks that behave alike and simulated 8 (--trace-workers 8 shows them all)"
    )


def test_a_folded_run_with_stragglers_says_it_simulated_the_ranks_its_result_says(tmp_path: Path) -> None:
    """Stragglers make every worker compute on its own, but the folded run still simulates
    rank 0's messages alone (``simulated_ranks`` 1): the note said "simulated 16
    (--trace-workers 16 shows them all)", and the trace has worker 0's messages only."""
    args = ("simulate", "-m", "resnet50", "-n", "16", "-b", "25Gbps", "-s", "ring",
            "--stragglers", "fixed:1,1,2" + ",1" * 13)  # fmt: skip
    p = run(*args, "--trace", "t.json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    wrote = p.stderr.splitlines()[-1]
    assert wrote.endswith(
        "(compute of workers 0-7 of 16 (--trace-workers N for more); messages of worker 0 of 16: "
        "the run folded ranks that behave alike and simulated only this one)"
    ), wrote
    assert "simulated 16" not in wrote
    data = run(*args, "--json", cwd=tmp_path)
    assert json.loads(data.stdout)["simulated_ranks"] == 1


def test_a_cut_trace_of_a_partial_collective_calls_its_window_no_iteration(tmp_path: Path) -> None:
    """Under a partial collective the iteration time is the mean of the workers' paces
    (150.9 ms here); the trace's window is the period between completions of every worker
    (192 ms), which the note called "the 192 ms iteration"."""
    p = run(
        "simulate", "-m", "resnet50", "-n", "16", "-b", "25Gbps", "-s", "ring:partial=solo",
        "--stragglers", "fixed:1,1,1,1,1.5,1,1,1,1,1,1,1,2,1,1,1", "--trace", "t.json", "--trace-workers", "16",
        cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    note = p.stderr.splitlines()[-1]
    assert note.startswith("tensorwire: note: the trace stops at 150,000 spans"), note
    assert " iteration;" not in note
    assert "ms period between completions of every worker (the iteration time, " in note
    assert "is the mean of the workers' paces)" in note
