"""The validate matrix, its summary and the CLI's files (no testbed needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tensorwire as tw
from click.testing import CliRunner
from tensorwire.testbed import cli as testbed_cli
from tensorwire.testbed import validate as v


def _row(scenario: str, measured: float, predicted: float) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "workers": 2,
        "rate_bps": 1e9,
        "measured_s": measured,
        "predicted_s": predicted,
        "error": (predicted - measured) / measured,
        "spread": 0.01,
    }


def test_matrix_covers_both_strategies_workloads_and_the_ranges() -> None:
    full = v.scenarios(quick=False)
    assert len(full) >= 12
    assert {s.strategy for s in full} == {"ps", "ring", "fifo", "fusion", "priority"} and {
        s.workload for s in full
    } == {"vgg", "resnet"}
    assert min(s.workers for s in full) == 2 and max(s.workers for s in full) == 8
    rates = {tw.units.to_rate(s.rate) for s in full}
    assert min(rates) == tw.units.to_rate("100Mbps") and max(rates) == tw.units.to_rate("1Gbps")
    assert len(v.scenarios(quick=True)) < len(full)
    # The runtime's modes run at both ends of the rate range, each host with a core.
    runtime = [s for s in full if s.runtime]
    assert {tw.units.to_rate(s.rate) for s in runtime} == {min(rates), max(rates)}
    assert max(s.workers for s in runtime) == v.runtime_max_workers() <= max(2, v.CORES)


def test_scenario_workloads_are_scaled_to_whole_floats() -> None:
    sc = v.Scenario("resnet", "ring", 4, "100Mbps")
    w = v.scenario_workload(sc, 12e6)
    assert all(t.bytes % 4 == 0 and t.bytes >= 4 for t in w.tensors)
    assert w.compute_time_s == pytest.approx(v.COMPUTE_TARGET_S)
    assert len(w.tensors) == len(tw.load_model("resnet50").tensors)


def test_summary_and_html() -> None:
    rows = [_row("a", 1.0, 1.02), _row("b", 1.0, 0.95), _row("c", 2.0, 2.5)]
    s = v.summary(rows)
    assert s["median_abs_error"] == pytest.approx(0.05) and s["max_abs_error"] == pytest.approx(0.25)
    page = testbed_cli.render_html(rows)
    assert page.startswith("<!DOCTYPE html>") and "+25.0%" in page and 'class="bad"' in page


def test_cli_writes_json_and_html(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rows = [_row("ring/vgg/2x1Gbps", 0.5, 0.51)]
    monkeypatch.setattr(v, "validate", lambda quick, **kw: rows)
    out = tmp_path / "out"
    result = CliRunner().invoke(testbed_cli.validate, ["--quick", "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "results.json").read_text()) == rows
    assert "ring/vgg/2x1Gbps" in (out / "results.html").read_text()
    md = (out / "results.md").read_text().splitlines()
    assert md[2].startswith("| ring/vgg/2x1Gbps | testbed job |") and "+2.0%" in md[2]
    assert any(line.startswith("| all | 1 | 2.0% | 2.0% | 1 |") for line in md)
    assert json.loads(result.stdout)[0]["scenario"] == "ring/vgg/2x1Gbps"


def test_bad_matrix_is_an_input_error() -> None:
    with pytest.raises(tw.InputError):
        v.validate(matrix=[("fast", 2)])
    with pytest.raises(tw.InputError):
        v.validate(matrix=[("1Gbps", 1)])


def test_runtime_modes_are_scenarios_with_the_specs_the_runtime_runs() -> None:
    from tensorwire.testbed.jobs.runtime import runtime_config

    full = v.scenarios(quick=False)
    assert {s.strategy for s in full if s.runtime} == {"fifo", "fusion", "priority"}
    modes = {}
    for sc in full:
        spec = sc.spec(3 << 20)
        tw.Strategy(spec)  # the simulator accepts it
        if sc.runtime:
            modes[sc.strategy] = runtime_config(spec).mode
    assert modes == {"fifo": "fifo", "fusion": "fusion", "priority": "priority"}
    prio = runtime_config(v.Scenario("vgg", "priority", 2, "1Gbps").spec(16 << 20))
    assert prio.partition_bytes == 1 << 20 and prio.credit_bytes == 2 << 20


@pytest.mark.parametrize(
    "spec,field",
    [("ps", "strategy"), ("ring:compression=4", "strategy"), ("ring:schedule=priority,fusion=1MiB", "strategy")],
)
def test_specs_the_runtime_does_not_run_are_refused(spec: str, field: str) -> None:
    from tensorwire.testbed.jobs.runtime import runtime_config

    with pytest.raises(tw.InputError) as e:
        runtime_config(spec)
    assert e.value.args[0].startswith(field)


def _attempt(spread: float, drift: float, error: float) -> dict[str, float | str]:
    return {"scenario": "s", "measured_s": 1.0, "predicted_s": 1.0 + error, "error": error, "spread": spread,
            "probe_drift": drift, "wall_s": 1.0}  # fmt: skip


def test_an_unsteady_run_is_repeated_and_the_steadiest_kept_whatever_its_error() -> None:
    # Steady at once: one attempt.
    rows = iter([_attempt(0.01, 0.05, 0.2)])
    best = v.steadiest(lambda: next(rows))
    assert len(best["attempts"]) == 1 and best["error"] == 0.2
    # The probe drifted: a second run; it is steadier, so it is kept although its error is larger.
    rows = iter([_attempt(0.01, 0.6, 0.01), _attempt(0.02, 0.05, 0.09)])
    best = v.steadiest(lambda: next(rows))
    assert best["error"] == 0.09 and [a["probe_drift"] for a in best["attempts"]] == [0.6, 0.05]
    # Never steady: at most MAX_ATTEMPTS runs, the least unsteady kept.
    rows = iter(
        [_attempt(0.20, 0.0, 0.0), _attempt(0.08, 0.0, 0.3), _attempt(0.12, 0.0, 0.0), _attempt(0.01, 0.0, 0.0)]
    )
    best = v.steadiest(lambda: next(rows))
    assert len(best["attempts"]) == v.MAX_ATTEMPTS == 3 and best["spread"] == 0.08
    assert next(rows)["spread"] == 0.01  # the fourth was never run
