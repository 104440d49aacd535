"""Collectives beyond all-reduce: microbenchmarks, workload files, CLI errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tensorwire as tw


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("kind", ["reducescatter", "allgather", "alltoall"])
def test_ring_halves_and_all_to_all_take_n_minus_1_steps_of_s_over_n(kind: str) -> None:
    n, size = 8, 8_000_000
    cluster = tw.Cluster(n, "8Gbps", latency=1e-6)  # 1 byte/ns, 2 us per path
    r = tw.simulate(tw.Workload.collective(f"{kind}:{size}B"), cluster, "ring", iterations=2)
    assert r.iteration_time_s == pytest.approx((n - 1) * (2e-6 + size / n * 1e-9), rel=1e-9)


def test_ring_all_reduce_is_reduce_scatter_plus_all_gather() -> None:
    cluster = tw.Cluster(16, "100Gbps")
    t = {
        k: tw.simulate(tw.Workload.collective(f"{k}:64MiB"), cluster, "ring").iteration_time_s
        for k in ("allreduce", "reducescatter", "allgather")
    }
    assert t["allreduce"] == pytest.approx(t["reducescatter"] + t["allgather"], rel=1e-12)


def test_the_collective_survives_a_workload_file(tmp_path: Path) -> None:
    w = tw.Workload.collective("broadcast:4MBx2")
    assert w.collective_kind == "broadcast"
    path = tmp_path / "w.json"
    w.save(path)
    assert tw.Workload.from_file(path).collective_kind == "broadcast"
    with pytest.raises(tw.InputError) as e:
        tw.Workload("x", 1, w.layers, collective_kind="gather")
    assert e.value.args[0] == "workload.collective"


@pytest.mark.parametrize(
    "args, field",
    [
        (["--collective", "gather:1MB", "-s", "ring"], "collective"),
        (["--collective", "broadcast:1MB", "-s", "butterfly"], "strategy"),
        (["--collective", "allgather:1MB", "-s", "ps"], "strategy"),
    ],
)
def test_bad_collectives_are_one_line_and_exit_2(args: list[str], field: str) -> None:
    p = run("simulate", "-n", "4", "-b", "10Gbps", *args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tensorwire: error: {field}"), p.stderr


def test_the_python_list_of_collectives_is_the_cores() -> None:
    from tensorwire.workload import COLLECTIVES

    for kind in COLLECTIVES:
        assert tw.Workload.collective(f"{kind}:1MB").collective_kind == kind
    with pytest.raises(tw.InputError) as e:
        tw.Workload.collective("gather:1MB")
    assert f"one of {', '.join(COLLECTIVES)}," in e.value.args[1]


@pytest.mark.parametrize("kind", ["allgather", "reducescatter"])
def test_hierarchical_halves_need_whole_machines_and_say_which(kind: str) -> None:
    """Hierarchical all-gather / reduce-scatter run one level per machine, so 12 workers on
    machines of 8 are refused, listing the divisors that run; the all-reduce of the same
    strategy runs with a partial last machine, and the refusal says so."""
    cluster = tw.Cluster(12, "25Gbps")
    with pytest.raises(tw.InputError) as e:
        tw.simulate(tw.Workload.collective(f"{kind}:64MiB"), cluster, "hierarchical:gpus_per_node=8")
    field, message = e.value.args[0], e.value.args[-1]
    assert field == "strategy.gpus_per_node"
    assert f"hierarchical {kind} runs on whole machines" in message
    assert "one of 1, 2, 3, 4, 6, 12" in message and "all-reduce takes a partial last machine" in message
    ok = tw.simulate(tw.Workload.collective(f"{kind}:64MiB"), cluster, "hierarchical:gpus_per_node=6")
    assert ok.iteration_time_s > 0
    assert (
        tw.simulate(tw.Workload.collective("allreduce:64MiB"), cluster, "hierarchical:gpus_per_node=8").iteration_time_s
        > 0
    )
