"""Placement of ranks on hosts: packed, spread, random."""

from __future__ import annotations

import pytest
import tensorwire as tw
from tensorwire import _core


def test_spread_puts_consecutive_ranks_on_different_leaves() -> None:
    hosts = _core.placement("leaf-spine:hosts_per_leaf=4,spines=2", 12, "spread")
    assert sorted(hosts) == list(range(12))
    assert [h // 4 for h in hosts[:6]] == [0, 1, 2, 0, 1, 2]
    assert _core.placement("star", 5, "packed") == [0, 1, 2, 3, 4]
    assert _core.placement("star", 64, "random", 3) == _core.placement("star", 64, "random", 3)
    assert _core.placement("star", 64, "random", 3) != _core.placement("star", 64, "random", 4)


def test_a_ring_spread_over_oversubscribed_leaves_is_slower_than_packed() -> None:
    w = tw.load_model("resnet50")
    fabric = "leaf-spine:hosts_per_leaf=8,spines=2,uplink=25Gbps"  # 4:1 oversubscribed
    packed = tw.simulate(w, tw.Cluster(32, "25Gbps", topology=fabric), "ring")
    spread = tw.simulate(w, tw.Cluster(32, "25Gbps", topology=fabric, placement="spread"), "ring")
    assert packed.folded and not spread.folded
    # Packed, 4 of 32 ring hops cross leaves (one per leaf, no uplink shared); spread, all
    # do, 8 flows per leaf over 2 uplinks of the host rate: the ring's steps slow down.
    assert spread.iteration_time_s > 1.5 * packed.iteration_time_s
    unfolded = tw.simulate(w, tw.Cluster(32, "25Gbps", topology=fabric), "ring", fold=False)
    assert unfolded.iteration_time_s == pytest.approx(packed.iteration_time_s, rel=1e-9)


def test_unknown_placements_name_the_field() -> None:
    with pytest.raises(tw.InputError) as e:
        tw.Cluster(8, "25Gbps", rank_placement="diagonal")
    assert e.value.args == ("rank_placement", "'diagonal' is not a placement; choose one of packed, spread, random")
    with pytest.raises(tw.InputError) as e:
        tw.Cluster(8, "25Gbps", placement="diagonal")
    assert e.value.args[0] == "rank_placement" and "(placement is its old name)" in e.value.args[1]
    with pytest.raises(tw.InputError) as e:
        _core.placement("star", 4, "diagonal")
    assert e.value.args[0] == "placement"


def test_rank_placement_keeps_its_old_name_placement() -> None:
    """``placement`` (rank -> host; the PS option of that name is tensor -> server) is the old
    name of ``rank_placement``: accepted as a keyword, readable, the same cluster."""
    import pickle

    new = tw.Cluster(8, "25Gbps", rank_placement="spread")
    old = tw.Cluster(8, "25Gbps", placement="spread")
    assert new == old and new.rank_placement == old.placement == "spread"
    assert tw.Cluster(8, "25Gbps").rank_placement == "packed"
    assert tw.Cluster(8, "25Gbps", 5e-6, "star", "flow", 0.0, None, "random").placement == "random"
    with pytest.raises(AttributeError):
        new.placement = "packed"  # type: ignore[misc]
    with pytest.raises(tw.InputError) as e:
        tw.Cluster(8, "25Gbps", rank_placement="spread", placement="spread")
    assert e.value.args == ("rank_placement", "given twice (placement is its old name)")
    assert pickle.loads(pickle.dumps(new)) == new
    # A Cluster pickled before the rename (its state has "placement") loads as rank_placement.
    state = {("placement" if k == "rank_placement" else k): v for k, v in new.__getstate__().items()}
    restored = tw.Cluster.__new__(tw.Cluster)
    restored.__setstate__(state)
    assert restored == new


def test_the_cli_takes_rank_placement_and_its_old_name() -> None:
    from click.testing import CliRunner
    from tensorwire.cli.app import cli

    args = ["simulate", "--model", "resnet50", "-n", "8", "-b", "25Gbps", "-s", "ring", "--json"]
    args += ["--topology", "leaf-spine:hosts_per_leaf=4,spines=1,uplink=25Gbps"]
    runner = CliRunner()
    new = runner.invoke(cli, [*args, "--rank-placement", "spread"])
    old = runner.invoke(cli, [*args, "--placement", "spread"])
    packed = runner.invoke(cli, args)
    assert new.exit_code == old.exit_code == 0 and new.output == old.output != packed.output
