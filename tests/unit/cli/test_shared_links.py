"""Collectives timed by NCCL's model that run at once on different communicators share
the links they both use (docs/simulator.md, "Concurrent collectives"): HSDP's all-reduce
across replicas beside a reduce-scatter of a shard group that spans nodes both hold the
NICs, and each runs at half speed while the other does.

The program of a two-unit model, prefetching one unit each way, with compute of about
nothing and no compute slowdown, is short enough to time by hand from the collectives'
durations alone (a: all-gather, r: reduce-scatter, R: all-reduce, f and b: each layer's
forward and backward):

    forward   AG0 [0, a], AG1 [a, 2a], f0 from a, f1 from max(a + f, 2a): ends F1
    backward  AG1' [F1, F1 + a], AG0' [F1 + a, F1 + 2a], b1 from F1 + a, b0 from s1 =
              F1 + a + max(a, b); RS1 [s1, s1 + r]; at t1 = s1 + r (b <= r) both RS0 and
              the all-reduce AR1 of RS1's output start; AR0 follows AR1 and RS0.

At full speed each (the model before this change), AR0 starts at t1 + max(r, R) and the
iteration lasts t1 + max(r, R) + R. Sharing the NICs, AR1 and RS0 both run at half speed
until the shorter ends (at t1 + 2 min(r, R)), the longer then alone: both are done at
t1 + r + R, and the iteration lasts t1 + r + 2R, min(r, R) longer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tensorwire as tw

RAIL = "rail:node=dgx-h100"
MIB = 2**20
NS = 1e-9


def _two_units(backward_s: float) -> tw.Workload:
    layers = tuple(tw.Layer(f"l{i}", 1e-6, backward_s, (tw.Tensor(f"l{i}.w", 256 * MIB),)) for i in range(2))
    return tw.Workload("two-units", 1, layers)


def _durations(result: tw.Result) -> dict[str, float]:
    """Each collective's span in a run where none overlaps another: NCCL's time for it."""
    spans: dict[str, set[float]] = {}
    for s in result.timeline:
        if s["kind"] == "collective":
            spans.setdefault(s["name"].split()[0], set()).add(round(s["end_s"] - s["start_s"], 9))
    assert all(len(v) == 1 for v in spans.values()), spans  # alone: the same each time
    return {k: v.pop() for k, v in spans.items()}


def _iteration(a: float, r: float, big: float, f: float, b: float, shared: bool) -> float:
    f1 = max(a + f, 2 * a) + f
    t1 = f1 + a + max(a, b) + r
    return t1 + (r + 2 * big if shared else max(r, big) + big)


def _run(workers: int, strategy: str, backward_s: float) -> tw.Result:
    cluster = tw.Cluster(workers, "400Gbps", topology=RAIL)
    return tw.simulate(_two_units(backward_s), cluster, strategy, timeline=True)


def test_an_all_reduce_beside_a_reduce_scatter_across_nodes_shares_the_nics(tmp_path: Path) -> None:
    # Shard groups of 16 span two 8-GPU nodes: reduce-scatters and all-reduces both
    # cross the network. Backward compute of 1 s keeps them apart, to read their times.
    strategy = "hsdp:shard_group=16,compute_slowdown=0"
    d = _durations(_run(32, strategy, 1.0))
    a, r, big = d["allgather"], d["reducescatter"], d["allreduce"]
    f = b = 1e-6
    assert b <= r and min(a, r, big) > 100e-6
    together = _run(32, strategy, b).iteration_time_s
    upper = _iteration(a, r, big, f, b, shared=False)  # every collective at full speed
    assert abs(together - _iteration(a, r, big, f, b, shared=True)) < 10 * NS
    assert together > upper and abs(together - upper - min(r, big)) < 10 * NS
    # The CLI reports the same.
    path = tmp_path / "two.json"
    _two_units(b).save(path)
    args = ["--workload", str(path), "-n", "32", "-b", "400Gbps", "--topology", RAIL, "-s", strategy, "--json"]
    done = subprocess.run([sys.executable, "-m", "tensorwire", "simulate", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["iteration_time_s"] == together


def test_a_shard_group_inside_a_node_does_not_slow_the_all_reduce_across_nodes() -> None:
    # Shard groups of 8 GPUs: reduce-scatters on NVLink, the all-reduce on the network;
    # they overlap as before and each runs at NCCL's full speed.
    strategy = "hsdp:shard_group=8,compute_slowdown=0"
    d = _durations(_run(16, strategy, 1.0))
    a, r, big = d["allgather"], d["reducescatter"], d["allreduce"]
    f = b = 1e-6
    assert b <= r
    apart_upper = _iteration(a, r, big, f, b, shared=False)
    assert abs(_run(16, strategy, b).iteration_time_s - apart_upper) < 10 * NS
