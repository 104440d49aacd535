"""The flow budget: one default, defined in the core; runs over it refused before they start."""

from __future__ import annotations

import inspect

import pytest
import tensorwire as tw
from tensorwire import Cluster, InputError, _core, simulate
from tensorwire.api import DEFAULT_MAX_FLOWS


def test_the_default_budget_is_the_cores_everywhere() -> None:
    assert DEFAULT_MAX_FLOWS == _core.DEFAULT_MAX_FLOWS > 0
    assert inspect.signature(simulate).parameters["max_flows"].default == _core.DEFAULT_MAX_FLOWS
    assert inspect.signature(tw.simulate_jobs).parameters["max_flows"].default == _core.DEFAULT_MAX_FLOWS
    from tensorwire.cli.options import max_flows

    @max_flows
    def f(max_flows: int) -> None: ...

    assert [p.default for p in f.__click_params__] == [_core.DEFAULT_MAX_FLOWS]  # type: ignore[attr-defined]


@pytest.mark.parametrize("strategy", ["ps", "ring", "fsdp", "double-tree", "hsdp:shard_group=2"])
def test_a_run_over_budget_is_refused_before_it_starts(strategy: str) -> None:
    calls: list[tw.Progress] = []
    with pytest.raises(InputError) as e:
        simulate(
            tw.load_model("resnet50"),
            Cluster(4, "25Gbps"),
            strategy,
            max_flows=1,
            progress=lambda p: calls.append(p) is None,
        )
    field, message = e.value.args
    assert field == "max_flows"
    assert "needs about" in message and "more than 1 flows" in message and "--max-flows" in message
    assert "\n" not in message
    assert calls == []  # refused up front, not at the first checkpoint


def test_unfolded_parameter_servers_at_scale_are_refused_with_what_folds() -> None:
    with pytest.raises(InputError) as e:
        simulate(tw.load_model("resnet50"), Cluster(1024, "25Gbps"), "ps:num_ps=16")
    assert e.value.args[0] == "max_flows"
    assert "ps:placement=sharded" in e.value.args[1]
    assert f"more than {_core.DEFAULT_MAX_FLOWS} flows" in e.value.args[1]
    # What it names runs within the budget.
    r = simulate(tw.load_model("resnet50"), Cluster(1024, "25Gbps"), "ps:num_ps=16,placement=sharded")
    assert r.folded


def test_no_budget_is_none() -> None:
    r = simulate(tw.load_model("resnet50"), Cluster(8, "25Gbps"), "ps", max_flows=None)
    assert r.flows > 0


def _progress_run(progress: object) -> tw.Result:
    # 0.8 million events: the callback is called about a dozen times.
    return simulate(
        tw.load_model("resnet50"),
        Cluster(16, "25Gbps"),
        "ring:partition=64KiB",
        fold=False,
        max_flows=None,
        iterations=1,
        progress=progress,  # type: ignore[arg-type]
    )


def test_only_false_from_progress_stops_a_run_and_its_exceptions_are_raised() -> None:
    # A callback that prints (returns None) stopped the run as "interrupted", and one that
    # raised was reported as "interrupted" too, its error lost.
    calls: list[tw.Progress] = []
    done = _progress_run(calls.append)
    assert len(calls) >= 2 and done.iteration_time_s == _progress_run(None).iteration_time_s

    def broken(p: tw.Progress) -> bool:
        raise ZeroDivisionError("in the callback")

    with pytest.raises(ZeroDivisionError, match="in the callback"):
        _progress_run(broken)
    with pytest.raises(TypeError):
        _progress_run(lambda: True)
    with pytest.raises(InputError) as e:
        _progress_run(lambda p: False)
    assert e.value.args[0] == "interrupted"
