"""The grid: expansion order and size, one parser for text and lists, validation up front."""

from __future__ import annotations

import inspect

import pytest
import tensorwire as tw
from tensorwire.api import DEFAULT_MAX_FLOWS
from tensorwire.sweep import expand, run_grid
from tensorwire.sweep.grid import Config
from tensorwire.sweep.run import check_configs


def test_cross_product_with_strategies_varying_fastest() -> None:
    configs = expand("resnet50,vgg16", "4,8", "1Gbps,10Gbps", "ps,ring:partition=4MiB,credit=1MiB")
    assert len(configs) == 2 * 2 * 2 * 2
    assert [c.strategy for c in configs[:2]] == ["ps", "ring:partition=4MiB,credit=1MiB"]
    assert [(c.model, c.workers, c.bandwidth) for c in configs[:4:2]] == [
        ("resnet50", 4, 125e6),
        ("resnet50", 4, 1.25e9),
    ]
    assert configs[-1].model == "vgg16" and configs[-1].workers == 8


def test_text_and_lists_give_the_same_grid() -> None:
    text = expand(
        "vgg16", "4,8", "10Gbps,25Gbps", "ps,ring:partition=4MiB,credit=1MiB", latencies="5us,1ms", seeds="0,1"
    )
    lists = expand(
        ["vgg16"],
        [4, 8],
        ["10Gbps", 3.125e9],
        ["ps", "ring:partition=4MiB,credit=1MiB"],
        latencies=[5e-6, "1ms"],
        seeds=[0, 1],
    )
    assert text == lists


def test_what_ifs_and_defaults_are_resolved() -> None:
    (c,) = expand("resnet50", 8, "10Gbps", "ring")
    assert (c.gpu, c.batch, c.compute_speedup, c.topology, c.network, c.latency, c.iterations, c.seed) == (
        "v100",
        32,
        1.0,
        "star",
        "flow",
        5e-6,
        3,
        0,
    )
    configs = expand("resnet50", 8, "10Gbps", "ring", batches="16,64", compute_speedups="1,2.5", iterations=2)
    assert {(c.batch, c.compute_speedup) for c in configs} == {(16, 1.0), (16, 2.5), (64, 1.0), (64, 2.5)}
    assert all(c.iterations == 2 for c in configs)


def test_duplicates_are_dropped() -> None:
    configs = expand("vgg16,vgg16", "8,8", "10Gbps,10Gbps,80Gbps", "ring,ring")
    assert len(configs) == 2  # 10 Gbps once, and 80 Gbps


def test_default_strategies_are_every_builtin_that_runs_on_the_grid() -> None:
    specs = [c.strategy for c in expand("vgg16", 8, "10Gbps")]
    builtin = [s.name for s in tw.strategies()]
    assert specs == [s for s in builtin if s in specs]
    assert {"ps", "ring", "ps+multicast", "double-tree"} <= set(specs)
    on_ring = {c.strategy for c in expand("vgg16", 8, "10Gbps", topologies="ring")}
    assert "ps+multicast" not in on_ring and "ring" in on_ring


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"models": "resnet50,resnet5"}, "model"),
        ({"gpus": "a100"}, "gpu"),
        ({"batches": "32,0"}, "batch"),
        ({"workers": "4,x"}, "workers"),
        ({"workers": [4, 0]}, "workers"),
        ({"bandwidths": "10Gbps,10Gbs"}, "bandwidth"),
        ({"bandwidths": [-1]}, "bandwidth"),
        ({"latencies": "5"}, "latency"),
        ({"topologies": "torus"}, "topology"),
        ({"networks": "packet"}, "network"),
        ({"strategies": "ps,rin"}, "strategy"),
        ({"strategies": "ring:partitions=4MiB"}, "strategy.partitions"),
        ({"compute_speedups": "2,0"}, "compute_speedup"),
        ({"seeds": "-1"}, "seed"),
        ({"iterations": 0}, "iterations"),
        ({"models": ""}, "model"),
        ({"topologies": "ring", "strategies": "ps,ps+multicast"}, "topology"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {
        "models": "resnet50",
        "workers": "4",
        "bandwidths": "10Gbps",
        "strategies": "ps",
        **kwargs,
    }
    with pytest.raises(tw.InputError) as e:
        expand(**args)  # type: ignore[arg-type]
    assert e.value.args[0] == field, e.value.args


def test_a_combination_the_core_rejects_is_named() -> None:
    with pytest.raises(tw.InputError) as e:
        expand("vgg16", "4", "10Gbps", "ring,ring+multicast", topologies="ring")
    assert "ring+multicast with 4 workers on topology 'ring'" in e.value.args[1]


def test_a_rail_keeps_its_own_nics_unless_a_bandwidth_is_given() -> None:
    # Without -b the commands pass own_rates: the default 25 Gbps must not replace the
    # DGX A100's 200 Gbit/s NICs (-b sets a rail's NIC rate).
    configs = expand("resnet50", "16", "25Gbps", "ring", topologies="rail:node=dgx-a100,star", own_rates=True)
    assert {c.topology: c.bandwidth for c in configs} == {"rail:node=dgx-a100": 25e9, "star": 25e9 / 8}
    given = expand("resnet50", "16", "25Gbps", "ring", topologies="rail:node=dgx-a100")
    assert [c.bandwidth for c in given] == [25e9 / 8]


def test_a_grid_past_the_largest_sweep_is_refused_before_anything_runs() -> None:
    # 1,000 worker counts x 1,000 rates ran a minute without a line of output.
    from tensorwire.sweep.grid import MAX_POINTS

    rates = [f"{i}Gbps" for i in range(1, 1001)]
    with pytest.raises(tw.InputError) as e:
        expand("resnet50", list(range(2, 1002)), rates, "ring")
    assert e.value.args[0] == "grid" and "1,000,000 configurations" in e.value.args[1]
    # At the limit it expands (100 x 1,000).
    assert len(expand("resnet50", list(range(2, 102)), rates, "ring")) == MAX_POINTS


def test_the_flow_budget_defaults_to_simulates() -> None:
    # run_grid and expand had no budget by default: 1,024 workers ran every built-in strategy,
    # unbounded, where `simulate` and `tensorwire sweep` leave those over 4 million flows out.
    assert inspect.signature(run_grid).parameters["max_flows"].default == DEFAULT_MAX_FLOWS
    assert inspect.signature(tw.simulate).parameters["max_flows"].default == DEFAULT_MAX_FLOWS
    assert Config.__dataclass_fields__["max_flows"].default == DEFAULT_MAX_FLOWS
    configs = expand("resnet50", "1024", "25Gbps", None)
    assert {c.max_flows for c in configs} == {DEFAULT_MAX_FLOWS}
    left_out: dict[Config, str] = {}
    kept = check_configs(configs, default_strategies=True, left_out=left_out)
    assert "ps" in {c.strategy for c in left_out} and set(left_out.values()) == {"max_flows"}
    assert "ring" in {c.strategy for c in kept}
    # None is still no budget at all.
    assert {c.max_flows for c in expand("resnet50", "1024", "25Gbps", "ps", max_flows=None)} == {None}
