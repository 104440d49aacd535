"""`zero3` through the CLI: DeepSpeed ZeRO stage 3's prefetch bucket against a tiny one on
an LLM, and one-line refusals of options that are not its own."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest


def _tw(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True)


def _simulate(topology: str, workers: int, spec: str) -> dict[str, Any]:
    done = _tw(
        "simulate", "-m", "llama3_8b", "-n", str(workers), "--topology", topology, "-b", "25Gbps", "-s", spec, "--json"
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize(("topology", "workers"), [("rail:node=dgx-h100", 64), ("nodes:machine=p3.16xlarge", 16)])
def test_the_default_prefetch_bucket_is_never_slower_than_a_tiny_one(topology: str, workers: int) -> None:
    # prefetch_bucket=1 fetches one parameter ahead per fetch. DeepSpeed's 5e7 elements take
    # several small parameters (a block's q/k/v/o projections) into one coalesced
    # all-gather and run ahead of the compute: the same or fewer bytes (a prefetch that
    # passes a parameter's next use keeps it), in fewer, larger calls, issued no later on
    # the one communicator, so neither the communication nor the iteration is longer.
    default = _simulate(topology, workers, "zero3")
    tiny = _simulate(topology, workers, "zero3:prefetch_bucket=1")
    assert default["sent_bytes_per_worker"] <= tiny["sent_bytes_per_worker"]
    assert default["comm_time_s"] <= tiny["comm_time_s"]
    assert default["iteration_time_s"] <= tiny["iteration_time_s"]
    # No prefetch at all exposes every all-gather.
    assert tiny["iteration_time_s"] < _simulate(topology, workers, "zero3:prefetch_bucket=0")["iteration_time_s"]
    # zero3 and fsdp are different systems: DeepSpeed keeps the parameters used again
    # within stage3_max_reuse_distance (the last blocks and the head, at the turn from
    # forward to backward), FSDP2 keeps its root unit (embeddings, final norm and head:
    # 1.05e9 parameters) and gathers every block again. Neither moves 3 Psi.
    psi, root, ring = 2 * 8_030_261_248, 2 * 1_050_677_248, (workers - 1) / workers
    fsdp = _simulate(topology, workers, "fsdp")["sent_bytes_per_worker"]
    assert fsdp == pytest.approx(ring * (3 * psi - root), rel=1e-9)
    assert default["sent_bytes_per_worker"] < ring * 3 * psi
    assert default["sent_bytes_per_worker"] != pytest.approx(fsdp, rel=1e-6)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ("zero3:prefetch=2", "strategy.prefetch"),
        ("zero3:allgather_bucket=1e6", "strategy.allgather_bucket"),
        ("fsdp:prefetch_bucket=1e6", "strategy.prefetch_bucket"),
        ("zero3:prefetch_bucket=-3", "strategy.prefetch_bucket"),
        ("zero3:param_persistence=x", "strategy.param_persistence"),
        ("zero3:reduce_bucket=0", "strategy.reduce_bucket"),
    ],
)
def test_bad_zero3_options_get_one_line_and_exit_2(spec: str, field: str) -> None:
    done = _tw("simulate", "-m", "resnet50", "-n", "8", "-b", "10Gbps", "-s", spec)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tensorwire: error: {field}: "), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
