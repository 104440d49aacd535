"""Answers that must not depend on how a run is asked for: a job's slowdown beside
another is the same at any ``--iterations``; the NIC rate of a rail or node fabric is the
one the title names, whether ``-b`` or the node preset gives it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tensorwire.cli import main

JOBS = ["jobs", "--job", "a:resnet50:16:ring", "--job", "b:vgg16:16:zero2", "-n", "32", "-b", "25Gbps",
        "--topology", "leaf-spine:hosts_per_leaf=8,spines=2,uplink=25Gbps", "--placement", "spread", "--json"]
PS_JOBS = ["jobs", "--job", "a:resnet50:16:ring", "--job", "ps:vgg16:16:ps:num_ps=4", "-b", "25Gbps",
           "--topology", "leaf-spine:hosts_per_leaf=12,spines=2,uplink=25Gbps", "--placement", "spread", "--json"]


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def _slowdowns(args: list[str], iterations: int, capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    out = _json([*args, "--iterations", str(iterations)], capsys)
    return {j["job"]: j["slowdown"] for j in out}


def test_a_jobs_slowdown_does_not_depend_on_iterations(capsys: pytest.CaptureFixture[str]) -> None:
    # Both jobs share the spines: each is slowed, the longer one (b) too, at 3 iterations as
    # at 10 (b was 1.00x at 3, its measured iterations running after a had finished).
    at3, at10 = _slowdowns(JOBS, 3, capsys), _slowdowns(JOBS, 10, capsys)
    for job in ("a", "b"):
        assert at3[job] > 1.1 and at10[job] > 1.1, (at3, at10)
        assert at3[job] == pytest.approx(at10[job], rel=0.02), (at3, at10)


def test_the_guides_parameter_server_job_is_slowed_by_the_ring_job(capsys: pytest.CaptureFixture[str]) -> None:
    # The ps job (the longer) shares the spines with a's ring all along: no longer 1.00x.
    at3, at6 = _slowdowns(PS_JOBS, 3, capsys), _slowdowns(PS_JOBS, 6, capsys)
    assert at3["ps"] > 1.1
    assert at3["ps"] == pytest.approx(at6["ps"], rel=0.02)
