"""Answers that must agree between entry points: one job run by ``simulate_jobs`` is the
same run as ``simulate``; every strategy gives a valid Chrome trace; ``InputError``'s
documented attributes."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import tensorwire as tw
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorwire.chrome_trace import chrome_trace, write_trace

COLLECTIVES = ("allreduce", "reducescatter", "allgather", "broadcast", "alltoall")
STRATEGIES = tuple(s.name for s in tw.strategies())
MEASURES = (
    "iteration_time_s",
    "comm_time_s",
    "exposed_comm_s",
    "sent_bytes_per_worker",
    "throughput_samples_per_s",
    "compute_time_s",
)


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(COLLECTIVES),
    # nccl and ddp time collectives in closed form, refused in multi-job runs (tested there)
    strategy=st.sampled_from([s for s in STRATEGIES if s not in ("nccl", "ddp")]),
    workers=st.integers(2, 8),
    kib=st.integers(1, 4096),
    count=st.integers(1, 3),
)
def test_one_job_alone_reports_what_simulate_reports(
    kind: str, strategy: str, workers: int, kib: int, count: int
) -> None:
    w = tw.Workload.collective(f"{kind}:{kib}KiBx{count}")
    try:
        alone = tw.simulate(w, tw.Cluster(workers, "25Gbps"), strategy)
    except tw.InputError:
        return  # the strategy does not take this collective (or needs another fabric)
    job = tw.Job("a", w, workers, strategy)
    (r,) = tw.simulate_jobs([job], tw.Cluster(job.hosts_needed, "25Gbps"))
    for m in MEASURES:
        # (NaN samples/s and scaling factor: a microbenchmark has no samples)
        assert getattr(r, m) == pytest.approx(getattr(alone, m), rel=1e-9, abs=1e-12, nan_ok=True), m


def test_an_allgather_job_is_an_allgather() -> None:
    w = tw.Workload.collective("allgather:64MiB")
    c = tw.Cluster(8, "25Gbps")
    (r,) = tw.simulate_jobs([tw.Job("a", w, 8, "ring")], c)
    # A ring all-gather moves (n-1)/n of the buffer over each host link: half an all-reduce.
    assert r.iteration_time_s == pytest.approx(tw.simulate(w, c, "ring").iteration_time_s, rel=1e-12)
    assert r.sent_bytes_per_worker == pytest.approx(7 / 8 * 64 * 2**20)


def test_the_workload_crosses_whole() -> None:
    w = tw.Workload.collective("alltoall:1MiB")
    assert (w.core.dtype_bytes, w.core.collective) == (w.dtype_bytes, "alltoall")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_gives_a_valid_trace(strategy: str, tmp_path: Path) -> None:
    w = tw.load_model("resnet50")
    # multitree runs inside one multi-GPU machine.
    cluster = (
        tw.Cluster(8, "25Gbps", topology="nodes:machine=p3.16xlarge")
        if strategy == "multitree"
        else tw.Cluster(4, "25Gbps")
    )
    try:
        r = tw.simulate(w, cluster, strategy, timeline=True, fold=False)
    except tw.InputError:
        pytest.skip(f"{strategy} does not run on 4 workers of this fabric")
    path = tmp_path / "t.json"
    write_trace(path, r)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert all(isinstance(e["pid"], int) for e in events)
    slices = [e for e in events if e["ph"] in "be"]
    assert slices and len([e for e in slices if e["ph"] == "b"]) == len([e for e in slices if e["ph"] == "e"])
    if strategy.startswith("ps"):
        # The servers' messages have a track of their own.
        names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
        assert "server 0 sends" in names
        assert any(e["pid"] == 3 for e in slices)


def test_a_trace_cut_at_its_span_cap_says_what_it_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The cut had been silent: a 64-worker trace at the cap looked like a whole iteration.
    import tensorwire.chrome_trace as ct

    r = tw.simulate(tw.load_model("resnet50"), tw.Cluster(4, "25Gbps"), "ring", timeline=True, fold=False)
    whole = write_trace(tmp_path / "whole.json", r, 4)
    assert whole[2] is None and "cut" not in json.loads((tmp_path / "whole.json").read_text())["metadata"]
    spans = len([s for s in r.timeline if ct.shown_in_trace(s, 4)])
    monkeypatch.setattr(ct, "MAX_SPANS", spans // 2)
    _, events, cut = write_trace(tmp_path / "cut.json", r, 4)
    assert cut is not None and cut["spans_shown"] == spans // 2 and cut["spans_left_out"] == spans - spans // 2
    assert 0 < cut["shown_until_s"] < cut["iteration_s"]
    assert json.loads((tmp_path / "cut.json").read_text())["metadata"]["cut"] == cut


def test_a_server_span_names_its_server() -> None:
    r = tw.simulate(tw.load_model("resnet50"), tw.Cluster(4, "25Gbps"), "ps:num_ps=2", timeline=True, fold=False)
    servers = {s["server"] for s in r.timeline if s["kind"] == "flow" and s["link"] is None and s["worker"] is None}
    assert servers == {0, 1}
    assert chrome_trace(r)["traceEvents"]


def test_input_error_has_field_and_message() -> None:
    e = tw.InputError("workers", "need at least 1")
    assert (e.field, e.message, e.args) == ("workers", "need at least 1", ("workers", "need at least 1"))
    assert isinstance(e, ValueError)
    assert tw.InputError.__module__ == "tensorwire" and repr(tw.InputError) == "<class 'tensorwire.InputError'>"
    assert pickle.loads(pickle.dumps(e)).args == e.args
    with pytest.raises(tw.InputError) as raised:
        tw.simulate(tw.load_model("resnet50"), tw.Cluster(4, "25Gbps"), "nope")
    assert raised.value.field == "strategy" and "unknown strategy" in raised.value.message


@pytest.mark.parametrize("spec", ["ps:num_ps=4,placement=balanced", "ps", "ps+multicast:num_ps=2"])
def test_parameter_server_accounting_is_per_iteration(spec: str) -> None:
    # Every worker pushes its whole gradient once per iteration, whatever the iterations
    # simulated and however far ahead of the others it runs.
    w = tw.load_model("resnet50")
    cluster = tw.Cluster(16, "100Gbps")
    runs = [tw.simulate(w, cluster, spec, iterations=k) for k in (3, 6)]
    for r in runs:
        assert r.sent_bytes_per_worker == pytest.approx(w.total_bytes, rel=1e-9)
        # Each worker's uplink carries its gradient once per iteration.
        up = [u for name, u in r.link_utilization.items() if name.startswith("h") and int(name[1:].split("-")[0]) < 16]
        assert up and max(up) == pytest.approx(min(up), rel=1e-6)
        assert max(up) == pytest.approx(w.total_bytes / (cluster.bandwidth * r.iteration_time_s), rel=1e-4)
    assert runs[0].comm_time_s == pytest.approx(runs[1].comm_time_s, rel=1e-6)


@pytest.mark.parametrize(
    "strategy, cluster, field",
    [
        ("fsdp:reduce=1Kbps", {}, "strategy.reduce"),
        ("ddp", {"per_message_overhead": "1ms"}, "overhead"),
        ("ddp", {"copy_bandwidth": "1Gbps"}, "copy_bandwidth"),
        ("fsdp", {"copy_bandwidth": "1Gbps"}, "copy_bandwidth"),
        ("fsdp:algorithm=ring", {}, "strategy.algorithm"),
        ("zero2:algorithm=halving-doubling", {}, "strategy.algorithm"),
        ("hsdp", {"rank_placement": "spread"}, "rank_placement"),
        ("nccl", {"rank_placement": "random"}, "rank_placement"),
        ("fsdp", {"network": "analytical"}, "network"),
        ("ddp", {"network": "analytical"}, "network"),
    ],
)
def test_what_nccls_timing_cannot_see_is_refused(strategy: str, cluster: dict[str, str], field: str) -> None:
    """NCCL's closed form has no host overhead, host reduction rate, flow-level algorithm,
    rank placement or network model: each was accepted and changed nothing (the same time to the nanosecond);
    it is refused, naming the option and comm=flows / a flow-level strategy."""
    c = tw.Cluster(16, None, topology="rail:node=dgx-h100", **cluster)
    with pytest.raises(tw.InputError) as e:
        tw.simulate(tw.load_model("llama3_8b"), c, strategy, iterations=1)
    assert e.value.args[0] == field and "NCCL's model" in e.value.args[-1]
    assert "comm=flows" in e.value.args[-1]
    # nccl and ddp refuse reduce= as they parse it, with the other host options they refuse.
    with pytest.raises(tw.InputError) as e:
        tw.Strategy("nccl:reduce=1Kbps")
    assert e.value.args[0] == "strategy.reduce" and "does not apply to nccl" in e.value.args[-1]


def test_on_flows_the_same_options_change_the_time() -> None:
    """What NCCL's timing refuses is what flows show: fsdp's algorithm on comm=flows."""
    c = tw.Cluster(16, None, topology="rail:node=dgx-h100")
    w = tw.load_model("llama3_8b")
    ring = tw.simulate(w, c, "fsdp:comm=flows,algorithm=ring", iterations=1).iteration_time_s
    hier = tw.simulate(w, c, "fsdp:comm=flows,algorithm=hierarchical", iterations=1).iteration_time_s
    assert ring != hier


@pytest.mark.parametrize("strategy", ["nccl", "ddp", "fsdp", "zero1", "ring"])
def test_an_unknown_options_message_lists_only_what_the_strategy_takes(strategy: str) -> None:
    """It listed every host option, most of which nccl and the sharded strategies then refuse;
    it lists what ``tensorwire strategies`` says the strategy takes (nccl's algo and proto
    lists aside, which are parsed before the table)."""
    from tensorwire.strategy import strategies

    with pytest.raises(tw.InputError) as e:
        tw.Strategy(f"{strategy}:foo=1")
    listed = set(e.value.args[-1].split("options: ", 1)[1].split(", "))
    info = next(i for i in strategies() if i.name == strategy)
    assert listed == {o.name for o in info.options} | set(info.host_options)
    assert ("partition" in listed) == (strategy == "ring")


def test_a_latency_nccls_timing_does_not_see_warns_once() -> None:
    """A cluster latency other than the default changes nothing under ddp: simulate warns
    (UnseenOptionWarning) and times it as without; a flow-level strategy sees it, silently."""
    import warnings

    from tensorwire.api import UnseenOptionWarning

    w = tw.load_model("resnet50")
    slow = tw.Cluster(16, None, topology="rail:node=dgx-h100", latency="1ms")
    with pytest.warns(UnseenOptionWarning, match="ddp times its collectives with NCCL's model"):
        r = tw.simulate(w, slow, "ddp")
    assert (
        r.iteration_time_s
        == tw.simulate(w, tw.Cluster(16, None, topology="rail:node=dgx-h100"), "ddp").iteration_time_s
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnseenOptionWarning)
        ring = tw.simulate(w, slow, "ring")
        assert (
            ring.iteration_time_s
            > tw.simulate(w, tw.Cluster(16, None, topology="rail:node=dgx-h100"), "ring").iteration_time_s
        )
    from tensorwire.sweep import run_grid

    with pytest.warns(UnseenOptionWarning) as seen:
        run_grid("resnet50", "8,16", None, "ddp,ring", topologies="rail:node=dgx-h100", latencies="1ms", jobs=1)
    assert len([x for x in seen if x.category is UnseenOptionWarning]) == 1  # once per strategy, not per point


def test_run_grid_keeps_a_rail_presets_nics_without_a_bandwidth() -> None:
    """run_grid without bandwidths ran 25 Gbps NICs on rail:node=dgx-h100 (the CLI and
    Cluster(bandwidth=None) take the preset's 400 Gbps)."""
    from tensorwire.sweep import run_grid

    rows = run_grid("resnet50", 16, None, "ddp", topologies="rail:node=dgx-h100", jobs=1)
    alone = tw.simulate(tw.load_model("resnet50"), tw.Cluster(16, None, topology="rail:node=dgx-h100"), "ddp")
    assert rows[0]["bandwidth_gbps"] == 400.0 and rows[0]["iteration_time_s"] == alone.iteration_time_s
    assert run_grid("resnet50", 8, None, "ring", jobs=1)[0]["bandwidth_gbps"] == 25.0  # a star keeps the default
