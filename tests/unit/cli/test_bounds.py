"""Inputs that would pass the simulation horizon or the memory limits (the core's
limits.rs) end in one line and exit 2, fast: no hang, no abort (exit 134), no traceback.
Before the limits these hung at 100% CPU, gave a wrong answer, or aborted in Rust."""

from __future__ import annotations

import subprocess
import sys

import pytest
import tensorwire as tw
from tensorwire import _core
from tensorwire._core import InputError

SIM = ["simulate", "-m", "resnet50", "-n", "8", "-b", "25Gbps"]

CASES: list[tuple[list[str], str]] = [
    (["simulate", "-m", "resnet50", "-n", "8", "-b", "1e-30Gbps", "-s", "ring"], "bandwidth"),
    (["simulate", "-m", "resnet50", "-n", "8", "-b", "1e-300bps", "-s", "ring"], "bandwidth"),
    (["simulate", "--collective", "allreduce:1e20B", "-n", "8", "-b", "25Gbps", "-s", "ring"], "collective"),
    (["simulate", "--collective", "allreduce:1e30B", "-n", "8", "-b", "25Gbps", "-s", "ring"], "collective"),
    ([*SIM, "-s", "ring", "--compute-speedup", "1e-300"], "compute_speedup"),
    ([*SIM, "-s", "ring", "--stragglers", "normal:1e308"], "stragglers"),
    ([*SIM, "-s", "ring", "--stragglers", "lognormal:700"], "stragglers"),
    ([*SIM, "-s", "ring", "--latency", "1e9s"], "latency"),
    ([*SIM, "-s", "ring", "--latency", "1e300s"], "latency"),
    ([*SIM, "-s", "ring", "--overhead", "1e300s"], "overhead"),
    ([*SIM, "-s", "ring:overhead=1e300s"], "strategy.overhead"),
    ([*SIM, "-s", "ring:dispatch=1e300s"], "strategy.dispatch"),
    (["simulate", "-m", "resnet50", "-n", "1000000000", "-b", "25Gbps", "-s", "ring"], "workers"),
    (["simulate", "-m", "resnet50", "-n", "4294967297", "-b", "25Gbps", "-s", "ring"], "workers"),
    ([*SIM, "-s", "ring", "--iterations", "1000000000"], "iterations"),
    ([*SIM, "-s", "ps:num_ps=1000000000"], "strategy.num_ps"),
    ([*SIM, "-s", "ring", "--topology", "leaf-spine:spines=1000000000"], "topology.spines"),
    ([*SIM, "-s", "ring", "--topology", "rail:spines=1000000000"], "topology.spines"),
    ([*SIM, "-s", "ring:partition=1B", "--max-flows", "20000000"], "strategy.partition"),
    ([*SIM, "-s", "ps:pipeline=1B"], "strategy.pipeline"),
    ([*SIM, "-s", "ring+multicast:partition=1B"], "strategy.partition"),
    ([*SIM, "-s", "zero1:bucket=1B"], "strategy.bucket"),
    # The option given is named (it was strategy.bucket, an option zero3 does not take).
    ([*SIM, "-s", "zero3:reduce_bucket=1"], "strategy.reduce_bucket"),
    ([*SIM, "-s", "zero2:allgather_bucket=1"], "strategy.allgather_bucket"),
    # nccl's per-call cost is launch= (it was strategy.dispatch, which nccl refuses), paid once
    # a call whatever the ranks (5 s was refused on a million, a 15 s run).
    (
        ["simulate", "--collective", "allreduce:1MiB", "-n", "1000000", "--topology", "rail", "-s", "nccl:launch=1e7s"],
        "strategy.launch",
    ),
    (["topology", "--preset", "dgx-a100", "--trees", "1000000000"], "trees"),
    (["compare", "-m", "resnet50", "-n", "1000000000", "-b", "25Gbps", "--strategies", "ps,ring"], "workers"),
    (
        ["jobs", "-b", "25Gbps", "--job", "a:resnet50:1000000000:ring", "--job", "b:vgg16:4:ring"],
        "job",
    ),  # the --job named, with the core's limit
    ([*SIM, "-s", "ring:credit=0B"], "strategy.credit"),
    ([*SIM, "-s", "ring:fusion=0B"], "strategy.fusion"),
    ([*SIM, "-s", "double-tree:chunk=0B"], "strategy.chunk"),
    ([*SIM, "-s", "fsdp:min_unit=0B"], "strategy.min_unit"),
    ([*SIM, "-s", "ps:barrier=yes"], "strategy.barrier"),
    ([*SIM, "-s", "ps:barrier=1"], "strategy.barrier"),
    ([*SIM, "-s", "ring:=4MiB"], "strategy"),
]


@pytest.mark.parametrize(("args", "field"), CASES, ids=[" ".join(a[-3:]) for a, _ in CASES])
def test_cli_refuses_in_one_line(args: list[str], field: str) -> None:
    # The timeout is a hang detector (these looped forever or aborted), not a speed check.
    p = subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=60)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2, p.stderr[-2000:]
    assert len(lines) == 1, p.stderr[-2000:]
    assert lines[0].startswith(f"tensorwire: error: {field}: "), lines[0]
    assert "Traceback" not in p.stderr


def _workload(*layers: tw.Layer) -> tw.Workload:
    return tw.Workload("w", 32, layers)


def _field(f: object) -> str:
    with pytest.raises(InputError) as e:
        assert callable(f)
        f()
    return str(e.value.args[0])


def test_api_inputs_past_the_limits_raise_input_error_naming_them() -> None:
    w = tw.Workload.collective("allreduce:4MiB")
    c = tw.Cluster(8, "25Gbps")
    assert _field(lambda: tw.simulate(w, tw.Cluster(8, "25Gbps", per_message_overhead=1e300), "ring")) == (
        "per_message_overhead"
    )
    assert _field(lambda: tw.simulate(w, tw.Cluster(8, "25Gbps", copy_bandwidth=1e-300), "ring")) == "copy_bandwidth"
    assert _field(lambda: tw.simulate(w, tw.Cluster(8, 1e-300), "ring")) == "bandwidth"
    computes = _workload(tw.Layer("a", 1e-3, 2e-3, (tw.Tensor("t", 1000),)))
    slow = [1e308] * 8
    assert _field(lambda: tw.simulate(computes, c, "ring", stragglers="fixed", slowdowns=slow)) == "slowdowns"
    huge = _workload(tw.Layer("a", 1e308, 1e308, (tw.Tensor("t", 1),)))
    assert _field(lambda: tw.simulate(huge, c, "ring")).startswith("workload.layers[0]")
    big = _workload(tw.Layer("a", 1e-3, 1e-3, (tw.Tensor("t", 2**64 - 1),)))
    assert _field(lambda: tw.simulate(big, c, "ring")) == "workload.tensors[0].bytes"
    # refused when the workload is made (its total does not fit the core's bytes) or when simulated
    two = (tw.Tensor("t", 2**63), tw.Tensor("u", 2**63))
    assert _field(lambda: tw.simulate(_workload(tw.Layer("a", 1e-3, 1e-3, two)), c, "ring")).startswith(
        "workload.tensors"
    )
    assert _field(lambda: tw.simulate(w, tw.Cluster(2**31, "25Gbps"), "ring")) == "workers"
    assert _field(lambda: _core.placement("star", 10**9, "random", 0)) == "workers"


def test_the_horizon_is_exported_and_a_long_legitimate_latency_still_runs() -> None:
    assert _core.HORIZON_S == pytest.approx(2**53 / 1e9)
    w = tw.Workload.collective("allreduce:4MiB")
    short = tw.simulate(w, tw.Cluster(8, "25Gbps", latency="5us"), "ring", iterations=1).iteration_time_s
    long = tw.simulate(w, tw.Cluster(8, "25Gbps", latency="100s"), "ring", iterations=1).iteration_time_s
    assert long > short


def test_a_collective_count_past_u32_and_pat_s_collectives_are_stated() -> None:
    """A COUNT too large was "not an integer"; the algorithms allowed on a fabric listed PAT
    without saying that it runs only all-gather and reduce-scatter."""
    import tensorwire as tw

    with pytest.raises(tw.InputError, match="has a COUNT above 1048576, the buffers a run can hold"):
        tw.Workload.collective("allreduce:1MiBx99999999999")
    with pytest.raises(tw.InputError, match="not an integer"):
        tw.Workload.collective("allreduce:1MiBx2.5")
    with pytest.raises(tw.InputError, match=r"allowed here: .*pat \(all-gather and reduce-scatter only\)"):
        tw.simulate(tw.Workload.collective("allreduce:1MiB"), tw.Cluster(4, "25Gbps"), "nccl:algo=nvls")
