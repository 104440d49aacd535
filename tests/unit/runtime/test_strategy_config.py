"""The runtime is configured by strategy specs, parsed by the core: the settings it runs
are the simulator's for the same spec, and ``mode=`` is sugar for a spec."""

from __future__ import annotations

import pytest
import tensorwire as tw
from tensorwire import _core
from tensorwire.testbed.jobs.ring import scheduler_policy
from tensorwire.testbed.jobs.spec import StrategyOptions
from tensorwire.torch.tasks import SchedulerConfig

SPECS = [
    "ring",
    "ring:partition=1MiB",
    "ring:schedule=priority,partition=4MiB,credit=16MiB",
    "ring:schedule=priority,partition=512KiB,credit=1MiB,inflight=2",
    "ring:fusion=64MiB",
    "ring:fusion=1MiB,cycle=1ms",
    "ring:execution=stream",
    "ring:credit=8MiB",
    "ps:num_ps=2,partition=1MiB",
]


@pytest.mark.parametrize("spec", SPECS)
def test_runtime_settings_are_the_cores(spec: str) -> None:
    core = _core.Strategy(spec)
    c = SchedulerConfig.from_strategy(spec)
    assert c.policy == core.policy
    assert (c.partition_bytes, c.credit_bytes, c.max_groups) == (
        core.partition_bytes,
        core.credit_bytes,
        core.max_in_flight,
    )
    assert (c.fusion_bytes, c.fusion_cycle_s) == (core.fusion_bytes, core.fusion_cycle_s)
    assert c.mode == ("priority" if "schedule=priority" in spec else "fusion" if "fusion=" in spec else "fifo")
    assert scheduler_policy(spec) == (core.policy, core.credit_bytes, core.max_in_flight)


@pytest.mark.parametrize(
    "mode,kwargs,spec",
    [
        ("priority", {}, "ring:schedule=priority,partition=4MiB,credit=16MiB"),
        ("fifo", {}, "ring"),
        ("fifo", {"partition": "1MiB", "in_flight": 2}, "ring:partition=1MiB,inflight=2"),
        ("fusion", {}, "ring:fusion=64MiB,cycle=5ms"),
        ("priority", {"partition": "1MiB", "credit": "2MiB"}, "ring:schedule=priority,partition=1MiB,credit=2MiB"),
    ],
)
def test_mode_is_sugar_for_a_spec(mode: str, kwargs: dict[str, object], spec: str) -> None:
    sugar = SchedulerConfig.make(mode, **kwargs).for_transport(all_reduce=True)  # type: ignore[arg-type]
    parsed = SchedulerConfig.from_strategy(spec).for_transport(all_reduce=True)
    assert sugar == parsed


def test_sharded_strategies_are_not_run_by_the_scheduler() -> None:
    with pytest.raises(tw.InputError) as e:
        SchedulerConfig.from_strategy("fsdp")
    assert e.value.args[0] == "strategy"


@pytest.mark.parametrize(
    "spec,placement,distribution,barrier",
    [
        ("ps", "round-robin", "round-robin", True),
        ("ps:num_ps=3,placement=balanced,distribution=block,barrier=false", "balanced", "block", False),
    ],
)
def test_testbed_reads_ps_options_from_the_core(spec: str, placement: str, distribution: str, barrier: bool) -> None:
    o = StrategyOptions.parse(spec)
    assert (o.placement, o.distribution, o.barrier) == (placement, distribution, barrier)
    assert o.num_ps == _core.Strategy(spec).servers


def test_ps_tensor_placement_is_the_simulators() -> None:
    sizes = [100, 1, 1, 50, 7]
    assert _core.Strategy("ps:num_ps=2,placement=balanced").place_tensors(sizes) == [0, 1, 1, 1, 1]
    assert _core.Strategy("ps:num_ps=2").place_tensors(sizes) == [0, 1, 0, 1, 0]
    with pytest.raises(tw.InputError):
        _core.Strategy("ring").place_tensors(sizes)


@pytest.mark.parametrize(
    "spec, names, why",
    [
        ("ps", ("ring",), "runs 'ring' specs, not 'ps'"),
        ("butterfly", ("ring",), "not 'butterfly'"),
        ("ring", ("ps",), "runs 'ps' specs, not 'ring'"),
        ("ring:compression=8", ("ring",), "option(s) compression"),
        ("ring:partial=solo", ("ring",), "option(s) partial"),
        ("ps:num_ps=2", ("ps",), "option(s) num_ps"),
        ("ring:execution=stream", ("ring",), "option(s) execution"),
    ],
)
def test_a_spec_the_runtime_would_run_as_something_else_is_refused(spec: str, names: tuple[str, ...], why: str) -> None:
    """``ScheduledDataParallel(strategy=...)`` ran ``ps``, ``butterfly`` and
    ``ring:compression=8`` as plain ring all-reduce (the same checksums), predicted as
    written: refused now, before any process group is needed."""
    from tensorwire.torch.tasks import runtime_strategy

    with pytest.raises(tw.InputError) as e:
        runtime_strategy(spec, names)
    assert e.value.args[0] == "strategy" and why in e.value.args[1]
    assert runtime_strategy("ring:schedule=priority,partition=1MiB,credit=2MiB").mode == "priority"
    assert runtime_strategy("ps:schedule=priority,partition=1MiB", ("ps",)).mode == "priority"


def test_scheduled_data_parallel_refuses_such_a_spec_before_any_process_group() -> None:
    torch = pytest.importorskip("torch")
    from tensorwire.torch import ScheduledDataParallel

    net = torch.nn.Linear(2, 2)
    with pytest.raises(tw.InputError, match="option\\(s\\) compression"):
        ScheduledDataParallel(net, torch.optim.SGD(net.parameters(), lr=0.1), strategy="ring:compression=8")
