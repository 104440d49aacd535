"""Multi-GPU machines behind an oversubscribed leaf layer: ``nodes:nodes_per_leaf=N,oversubscription=X``
(each leaf's uplinks one trunk of ``N x NIC / X``; docs/simulator.md, "Multi-GPU machines")."""

from __future__ import annotations

import subprocess
import sys

import pytest
import tensorwire as tw
from tensorwire import _core
from tensorwire._core import InputError

MIB = 2**20


def _leaves(over: float, per_leaf: int = 1, machine: str = "dgx-a100") -> str:
    return f"nodes:machine={machine},nodes_per_leaf={per_leaf},oversubscription={over}"


def test_nodes_lists_its_leaf_options() -> None:
    nodes = next(t for t in _core.topologies() if t["name"] == "nodes")
    assert [o["name"] for o in nodes["options"]][:3] == ["machine", "nodes_per_leaf", "oversubscription"]


@pytest.mark.parametrize("over", [1.0, 2.0, 4.0])
def test_a_ring_between_two_leaves_runs_at_the_trunk_s_rate(over: float) -> None:
    # Two DGX A100 (16 GPUs) at 10 Gbit/s NICs, one machine a leaf: the rank-order ring crosses
    # each leaf's trunk (1.25 GB/s / over) once each way, so at zero latency the all-reduce takes
    # 2 (n-1)/n x S over the trunk's rate (NVSwitch and PCIe are faster), to the nanosecond
    # each of its 2 (n-1) steps is rounded to.
    cluster = tw.Cluster(16, "10Gbps", latency="0s", topology=_leaves(over))
    r = tw.simulate(tw.Workload.collective("allreduce:64MiB"), cluster, "ring", iterations=1)
    assert r.iteration_time_s == pytest.approx(2 * 15 / 16 * 64 * MIB / (1.25e9 / over), abs=30e-9)
    if over == 1.0:
        flat = tw.Cluster(16, "10Gbps", latency="0s", topology="nodes:machine=dgx-a100")
        assert (
            r.iteration_time_s == tw.simulate(tw.Workload.collective("allreduce:64MiB"), flat, "ring").iteration_time_s
        )


@pytest.mark.parametrize(
    ("collective", "strategy"), [("allreduce", "ring"), ("allreduce", "hierarchical"), ("alltoall", "ring")]
)
def test_folding_behind_leaves_changes_nothing_but_speed(collective: str, strategy: str) -> None:
    # 4 leaves of 2 machines (64 GPUs) at 3:1: folded over machines-in-leaf and leaves (an
    # all-to-all runs as every rank sending to every other at once, whatever the strategy).
    workload = tw.Workload.collective(f"{collective}:8MiB")
    cluster = tw.Cluster(64, "25Gbps", latency="1us", topology=_leaves(3, per_leaf=2, machine="pcie-8"))
    folded = tw.simulate(workload, cluster, strategy, iterations=2)
    full = tw.simulate(workload, cluster, strategy, iterations=2, fold=False)
    assert folded.folded and not full.folded
    assert folded.flows < full.flows
    assert folded.completions_s == pytest.approx(full.completions_s, rel=1e-9)
    for link, u in full.link_utilization.items():
        assert folded.link_utilization[link] == pytest.approx(u, rel=1e-9, abs=1e-12)
    assert full.link_utilization["leaf0->top"] > 0


def test_oversubscription_slows_traffic_that_crosses_leaves_and_not_traffic_that_stays() -> None:
    # An all-to-all of 32 GPUs on 4 pcie-8 machines, 2 to a leaf: half of every rank's data
    # leaves its leaf, so 4:1 is slower than 1:1; a ring within one leaf is unchanged.
    a2a = tw.Workload.collective("alltoall:64MiB")
    time = {
        over: tw.simulate(a2a, tw.Cluster(32, "25Gbps", topology=_leaves(over, 2, "pcie-8")), "ring").iteration_time_s
        for over in (1, 4)
    }
    assert time[4] > 1.5 * time[1]
    ring = tw.Workload.collective("allreduce:64MiB")
    inside = [
        tw.simulate(ring, tw.Cluster(16, "25Gbps", topology=_leaves(over, 2, "pcie-8")), "ring").iteration_time_s
        for over in (1, 4)
    ]
    assert inside[0] == inside[1]


def test_nccl_is_floored_by_a_leaf_s_trunk() -> None:
    # 16 p3.16xlarge at 25 Gbit/s, 4 to a leaf at 4:1: a leaf's 32 GPUs reach the other 96
    # through one NIC's rate, 3.125 GB/s; an all-to-all of 64 MiB a rank sends 32 x 96 / 128 of
    # it across (the cut's floor, docs/collectives.md).
    cluster = tw.Cluster(128, "25Gbps", topology="nodes:nodes_per_leaf=4,oversubscription=4")
    r = tw.simulate(tw.Workload.collective("alltoall:64MiB"), cluster, "nccl", iterations=1)
    assert r.iteration_time_s == pytest.approx(32 * 96 / 128 * 64 * MIB / 3.125e9, rel=1e-6)


@pytest.mark.parametrize(
    ("topology", "field"),
    [
        ("nodes:oversubscription=3", "topology.oversubscription"),
        ("nodes:nodes_per_leaf=0", "topology.nodes_per_leaf"),
        ("nodes:nodes_per_leaf=4,oversubscription=0", "topology.oversubscription"),
    ],
)
def test_bad_leaf_options_name_the_field(topology: str, field: str) -> None:
    with pytest.raises(InputError) as e:
        tw.Cluster(64, "25Gbps", topology=topology)
    assert e.value.args[0] == field
    p = subprocess.run(
        [sys.executable, "-m", "tensorwire", "simulate", "--collective", "allreduce:1MiB", "-n", "64", "-b", "25Gbps",
         "--topology", topology, "-s", "ring"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and field in p.stderr, p.stderr
