"""The rail-optimised fat-tree through the Python API: specs, listings, folding."""

from __future__ import annotations

import pytest
import tensorwire as tw
from tensorwire import _core
from tensorwire._core import InputError


def test_rail_is_listed_with_its_options() -> None:
    rail = next(t for t in _core.topologies() if t["name"] == "rail")
    names = [o["name"] for o in rail["options"]]
    assert names[:6] == ["node", "nodes_per_group", "spines", "oversubscription", "nic", "nvlink"]
    assert set(names[6:]) == {
        "transport",
        "sharp",
        "nvls",
        "intra_efficiency",
        "inter_efficiency",
        "intra_latency",
        "inter_latency",
        "intra_fill",
        "inter_fill",
        "intra_step",
        "inter_step",
        "nvls_efficiency",
        "nvls_fill",
        "nvlstree_efficiency",
        "nvlstree_fill",
    }
    assert "dgx-h100" in rail["options"][0]["accepts"] and "dgx-a100" in rail["options"][0]["accepts"]


def test_bad_rail_options_name_the_field() -> None:
    with pytest.raises(InputError) as e:
        tw.Cluster(16, "1Gbps", topology="rail:node=dgx-2")
    assert e.value.args[0] == "topology.node"
    with pytest.raises(InputError):
        tw.Cluster(16, "1Gbps", topology="rail:oversubscription=0")


def test_folding_on_rail_changes_nothing_but_speed() -> None:
    w = tw.Workload.collective("allreduce:4MB")
    # 2 groups of 2 DGX A100 nodes: ring all-reduce folds over the groups.
    cluster = tw.Cluster(32, "400Gbps", latency="1us", topology="rail:node=dgx-a100,nodes_per_group=2")
    folded = tw.simulate(w, cluster, "ring", iterations=2)
    full = tw.simulate(w, cluster, "ring", iterations=2, fold=False)
    assert folded.folded and not full.folded
    assert folded.flows * 2 == full.flows
    assert folded.completions_s == pytest.approx(full.completions_s, rel=1e-9)
    for link, u in full.link_utilization.items():
        assert folded.link_utilization[link] == pytest.approx(u, rel=1e-9, abs=1e-12)
    # Ring traffic crosses the NVSwitch inside nodes and the spines between them.
    assert full.link_utilization["h0->nvsw0"] > 0 and full.link_utilization["h7->leaf0.7"] > 0
