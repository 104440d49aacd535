"""Every name list and default Python shows is the core's (one table per concept).

The core exports its lists and defaults as ``tensorwire._core`` constants
(crates/tensorwire-py/src/catalog.rs); these tests fail when a Python list, a click choice
or a default is typed again and drifts.
"""

from __future__ import annotations

import inspect
from typing import get_args

import click
import pytest
from tensorwire import _core, api, cluster, gputopo, hardware, workload
from tensorwire.cli.app import cli
from tensorwire.sweep import grid, run
from tensorwire.workloads.formats import FORMATS


def _option(command: str, name: str) -> click.Option:
    cmd = cli.commands[command]
    return next(p for p in cmd.params if isinstance(p, click.Option) and name in p.opts)


def test_network_models_and_placements_are_the_cores() -> None:
    assert cluster.NETWORK_MODELS == _core.NETWORK_MODELS == ("flow", "analytical")
    assert cluster.PLACEMENTS == _core.PLACEMENTS
    for command in ("simulate", "compare"):
        net = _option(command, "--network").type
        assert isinstance(net, click.Choice) and tuple(net.choices) == _core.NETWORK_MODELS
        place = _option(command, "--placement").type
        assert isinstance(place, click.Choice) and tuple(place.choices) == _core.PLACEMENTS


def test_bad_network_names_the_cores_choices() -> None:
    with pytest.raises(_core.InputError) as e:
        cluster.Cluster(4, "1Gbps", network="packet")
    assert e.value.args[0] == "network"
    for name in _core.NETWORK_MODELS:
        assert name in e.value.args[1]


def test_collectives_are_the_cores() -> None:
    assert workload.COLLECTIVES == get_args(workload.CollectiveName) == _core.COLLECTIVES


def _choices(option: dict[str, str]) -> list[str]:
    accepts = option["accepts"]
    assert accepts.startswith("one of "), option
    return accepts.removeprefix("one of ").split(", ")


def test_dtype_choices_are_the_cores() -> None:
    dtype_options = [o for o in _core.host_options() if o["name"].endswith("_dtype")]
    assert dtype_options, "the strategy tables have dtype options"
    for o in dtype_options:
        assert tuple(_choices(o)) == _core.DTYPES, o


def test_gpu_tree_presets_are_the_cores() -> None:
    assert gputopo.PRESETS == _core.GPU_PRESETS


def test_node_presets_are_the_cores() -> None:
    core = {p["name"]: p for p in _core.NODE_PRESETS}
    shown = {n.name: n for n in hardware.nodes()}
    assert set(shown) == set(core)
    for name, node in shown.items():
        assert node.gpus == core[name]["gpus"]
        assert node.nvlink_bytes_per_s == core[name]["nvlink_bytes_per_s"]
        assert node.nic_bits_per_s == core[name]["nic_bytes_per_s"] * 8
    rail = next(t for t in _core.topologies() if t["name"] == "rail")
    node_option = next(o for o in rail["options"] if o["name"] == "node")
    assert set(_choices(node_option)) == set(core)


def test_workload_formats_are_one_list() -> None:
    fmt = _option("simulate", "--workload-format").type
    assert isinstance(fmt, click.Choice) and tuple(fmt.choices) == ("auto", *FORMATS)


def test_defaults_are_the_cores() -> None:
    assert _option("simulate", "--iterations").default == _core.DEFAULT_ITERATIONS
    latency = _option("simulate", "--latency").default
    assert isinstance(latency, str)
    assert _core.parse_duration("latency", latency) == pytest.approx(_core.DEFAULT_LATENCY_S)
    for f in (api.simulate, api.simulate_jobs, grid.expand, run.run_grid):
        assert inspect.signature(f).parameters["iterations"].default == _core.DEFAULT_ITERATIONS, f
    assert inspect.signature(cluster.Cluster.__init__).parameters["latency"].default == _core.DEFAULT_LATENCY_S
    assert grid.DEFAULTS["latency"] == (_core.DEFAULT_LATENCY_S,)
    assert cluster.Cluster(4, "1Gbps").latency == _core.DEFAULT_LATENCY_S
