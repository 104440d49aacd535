"""Answers that must not depend on how a run is asked for: a job's slowdown beside
another is the same at any ``--iterations``; the NIC rate of a rail or node fabric is the
one the title names, whether ``-b`` or the node preset gives it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tensorwire.cli import main

JOBS = [
    "jobs",
    "--job",
    "a:resnet50:16:ring",
    "--job",
    "b:vgg16:16:zero2:bucket=500MB,overlap_comm=true",  # zero2 as it ran before DeepSpeed's defaults
    "-n",
    "32",
    "-b",
    "25Gbps",
    "--topology",
    "leaf-spine:hosts_per_leaf=8,spines=2,uplink=25Gbps",
    "--placement",
    "spread",
    "--json",
]
PS_JOBS = [
    "jobs",
    "--job",
    "a:resnet50:16:ring",
    "--job",
    "ps:vgg16:16:ps:num_ps=4",
    "-b",
    "25Gbps",
    "--topology",
    "leaf-spine:hosts_per_leaf=12,spines=2,uplink=25Gbps",
    "--placement",
    "spread",
    "--json",
    "--max-flows",
    "50000000",
]  # jobs take no up-front estimate; 6 iterations need ~5 million flows


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
    # It loses 4% (its servers keep up to 4 messages moving where the spines hold them up,
    # engine/ps.rs), the same at 3 iterations as at 6.
    at3, at6 = _slowdowns(PS_JOBS, 3, capsys), _slowdowns(PS_JOBS, 6, capsys)
    assert at3["ps"] > 1.02
    assert at3["ps"] == pytest.approx(at6["ps"], rel=0.02)


RAIL = ["simulate", "--model", "llama3_8b", "-n", "32", "--topology", "rail:node=dgx-h100", "-s", "fsdp", "--json"]


def test_bandwidth_sets_the_rail_nic_rate_and_is_optional_there(capsys: pytest.CaptureFixture[str]) -> None:
    # -b 1Gbps and -b 400Gbps gave the same 1.221 s (the 400G preset), titled "1 Gbps".
    slow = _json([*RAIL, "-b", "1Gbps"], capsys)
    fast = _json([*RAIL, "-b", "400Gbps"], capsys)
    preset = _json(RAIL, capsys)
    assert slow["bandwidth"] == 1e9 / 8 and preset["bandwidth"] == fast["bandwidth"] == 400e9 / 8
    assert slow["iteration_time_s"] > 10 * fast["iteration_time_s"]
    assert preset["iteration_time_s"] == fast["iteration_time_s"]
    nic = _json(
        [
            "simulate",
            "--model",
            "llama3_8b",
            "-n",
            "32",
            "--topology",
            "rail:node=dgx-h100,nic=1Gbps",
            "-s",
            "fsdp",
            "--json",
        ],
        capsys,
    )
    assert nic["iteration_time_s"] == slow["iteration_time_s"]


def test_a_rail_nic_rate_given_twice_or_a_missing_rate_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "simulate",
                "--model",
                "resnet50",
                "-n",
                "8",
                "-b",
                "1Gbps",
                "--topology",
                "rail:nic=100Gbps",
                "-s",
                "ring",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("tensorwire: error: bandwidth:") and "given twice" in err and err.count("\n") == 1
    assert main(["simulate", "--model", "resnet50", "-n", "8", "-s", "ring"]) == 2
    assert capsys.readouterr().err.startswith("tensorwire: error: bandwidth:")
    assert main(["jobs", "--job", "a:resnet50:8:ring", "--topology", "rail:node=dgx-a100", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["iteration_time_s"] > 0


def test_compare_on_a_rail_fabric_keeps_its_nics(capsys: pytest.CaptureFixture[str]) -> None:
    # compare's default 25 Gbps must not replace a DGX A100's 200G NICs.
    rows = _json(
        [
            "compare",
            "--model",
            "resnet50",
            "-n",
            "16",
            "--topology",
            "rail:node=dgx-a100",
            "--strategies",
            "ring",
            "--json",
        ],
        capsys,
    )
    assert {r["bandwidth"] for r in rows} == {200e9 / 8}
