"""What the testbed's own jobs run of a spec: refusals before anything starts (no namespaces
needed: the testbed is never started), sharded parameter servers (a live job), and the
``--out`` checks of ``tensorwire validate``."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import tensorwire as tw
from click.testing import CliRunner
from tensorwire import _core
from tensorwire.testbed import Testbed
from tensorwire.testbed import cli as testbed_cli
from tensorwire.testbed import validate as v
from tensorwire.testbed.jobs import run_job
from tensorwire.testbed.jobs.context import Context
from tensorwire.testbed.jobs.registry import job_strategy
from tensorwire.testbed.jobs.spec import JobSpec, StrategyOptions
from tensorwire.testbed.shaping import PAYLOAD_EFFICIENCY
from tensorwire.workload import Layer, Tensor, Workload

# Six layers of 2 ms forward and 4 ms backward, each with a 1 MB weight and a 4 kB bias
# (round-robin over two servers puts every weight on server 0).
TOY = Workload(
    "toy",
    8,
    tuple(Layer(f"l{i}", 0.002, 0.004, (Tensor(f"l{i}.w", 1_000_000), Tensor(f"l{i}.b", 4000))) for i in range(6)),
)


@pytest.mark.parametrize(
    "spec,field,says",
    [
        ("ring:compression=8", "strategy.compression", "compression=8"),
        ("ps:compression=4", "strategy.compression", "compression=4"),
        ("ring:partial=solo", "strategy.partial", "partial=solo"),
        ("ring:fusion=4MiB", "strategy.fusion", "runtime=True"),
        ("ring:schedule=priority,partition=256KiB,credit=512KiB", "strategy", "runtime=True"),
        ("ps:schedule=priority", "strategy.schedule", "schedule=priority"),
        ("ps:num_ps=2,placement=sharded,pipeline=1MiB", "strategy.placement", "splits tensors itself"),
    ],
)
def test_options_the_job_does_not_run_are_refused_before_starting(spec: str, field: str, says: str) -> None:
    with pytest.raises(tw.InputError) as e:
        run_job(Testbed(hosts=3), TOY, spec, workers=2)  # never started: refused first
    assert e.value.args[0] == field and says in e.value.args[1] and "\n" not in e.value.args[1]


@pytest.mark.parametrize(
    "spec", ["ring", "ring:partition=1MiB,schedule=fifo", "ps:num_ps=2,placement=sharded,colocated=false,barrier=false"]
)
def test_options_the_job_runs_are_accepted(spec: str) -> None:
    options = StrategyOptions.parse(spec)
    job_strategy(options.name).check(options)


def test_more_servers_than_hosts_names_num_ps() -> None:
    with pytest.raises(tw.InputError) as e:
        run_job(Testbed(hosts=3), TOY, "ps:num_ps=5")
    assert e.value.args[0] == "strategy.num_ps"
    assert "5 servers plus at least one worker need 6 hosts; the testbed has 3" in e.value.args[1]


def test_ring_job_refuses_a_rank_dependent_policy_on_every_rank() -> None:
    pytest.importorskip("torch", reason="torch is not installed (pip install torch)")
    from tensorwire.testbed.jobs.ring import run_ring

    spec = JobSpec("ring", StrategyOptions("ring"), TOY.to_dict(), 2, 2, "127.0.0.1", 1, 3, 1, 0.0, 1e8, "", 1.0)
    with pytest.raises(tw.InputError):  # before any collective: no process group exists
        run_ring(Context(spec, 0), ("priority", 512 << 10, None))


def test_sharded_pieces_are_the_engines() -> None:
    spec = JobSpec("ps:num_ps=3,placement=sharded", StrategyOptions.parse("ps:num_ps=3,placement=sharded"),
                   TOY.to_dict(), 2, 5, "127.0.0.1", 1, 3, 1, 0.0, 1e8, "", 1.0)  # fmt: skip
    ctx = Context(spec, 0)
    assert len(ctx.tasks) == 3 * len(TOY.tensors)
    w0 = [t.bytes for t in ctx.tasks if t.tensor == 0]
    assert w0 == [333_334, 333_333, 333_333] and sum(t.bytes for t in ctx.tasks) == TOY.total_bytes
    assert ctx.server_of_task == [t.piece for t in ctx.tasks]  # piece p on server p
    round_of = _core.Strategy("ps:num_ps=2,placement=sharded").ps_worker_round
    assert (round_of(0, 4), round_of(1, 4)) == ([0, 1, 2, 3], [2, 3, 0, 1])


@pytest.mark.testbed
@pytest.mark.needs_torch
def test_sharded_servers_split_every_tensor_as_predicted() -> None:
    cluster = tw.Cluster(2, 125e6 * PAYLOAD_EFFICIENCY, latency="10us", per_message_overhead="100us")
    measured, predicted = {}, {}
    with Testbed(hosts=4, rate="1Gbps") as tb:
        for spec in ("ps:num_ps=2", "ps:num_ps=2,placement=sharded"):
            job = run_job(tb, TOY, spec, workers=2, iterations=6, warmup=2)
            measured[spec] = job.iteration_time_s
            predicted[spec] = tw.simulate(TOY, cluster, spec, iterations=5).iteration_time_s
            if "sharded" in spec:  # per iteration, each server sends its piece of all 12 tensors to both workers
                assert [r["notes"]["messages_sent"] for r in job.ranks if r["role"] == "server"] == [6 * 24] * 2
    print(f"measured {measured}, predicted {predicted}")
    for spec in measured:
        assert 0.75 * predicted[spec] <= measured[spec] <= 1.35 * predicted[spec], (spec, measured, predicted)


def _fake_run(calls: list[bool]) -> Any:
    def run(quick: bool, **kw: Any) -> list[dict[str, Any]]:
        calls.append(quick)
        row = {"scenario": "ring/vgg/2x1Gbps", "workers": 2, "rate_bps": 1e9, "measured_s": 0.5, "predicted_s": 0.51}
        return [{**row, "error": 0.02, "spread": 0.01}]

    return run


@pytest.mark.parametrize("bad", ["dir-in-the-way", "under-a-file"])
def test_validate_checks_the_out_folder_before_running(
    bad: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[bool] = []
    monkeypatch.setattr(v, "validate", _fake_run(calls))
    if bad == "dir-in-the-way":
        out = tmp_path / "out"
        (out / "results.html").mkdir(parents=True)
    else:
        (tmp_path / "afile").write_text("x")
        out = tmp_path / "afile" / "sub"
    result = CliRunner().invoke(testbed_cli.validate, ["--quick", "--out", str(out)])
    assert isinstance(result.exception, tw.InputError) and result.exception.args[0] == "out", result.output
    assert calls == []  # refused before the run
    assert not (tmp_path / "out" / "results.json").exists()


def test_validate_prints_then_writes_all_files_or_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[bool] = []
    monkeypatch.setattr(v, "validate", _fake_run(calls))
    real_mkstemp = tempfile.mkstemp

    def mkstemp(prefix: str, suffix: str, dir: str) -> tuple[int, str]:
        if prefix == ".results.md." and list(Path(dir).glob(".results.html.*.tmp")):
            raise OSError(28, "No space left on device")  # the third file's temporary
        return real_mkstemp(prefix=prefix, suffix=suffix, dir=dir)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    out = tmp_path / "out"
    result = CliRunner().invoke(testbed_cli.validate, ["--quick", "--json", "--out", str(out)])
    assert isinstance(result.exception, tw.InputError) and "nothing was written" in result.exception.args[1]
    assert calls == [True] and "ring/vgg/2x1Gbps" in result.output  # the results were printed first
    assert list(out.iterdir()) == []  # no file, no temporary
