"""The report page: its sections, self-containment, determinism, and the figures' data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tensorwire as tw
from tensorwire.report import build_report, figures, timeline
from tensorwire.report.scenario import reference
from tensorwire.sweep import run_grid

Rows = list[dict[str, object]]


def plot_ids(page: str) -> list[str]:
    return re.findall(r'<div id="([^"]+)" class="plotly-graph-div"', page)


def test_every_model_has_its_plots(page_file: Path) -> None:
    page = page_file.read_text()
    assert page.startswith("<!DOCTYPE html>")
    ids = plot_ids(page)
    for model in ("resnet50", "vgg16"):
        for kind in ("bandwidth", "workers", "breakdown"):
            assert f"model-{model}-{kind}" in ids
    if timeline.supported():
        assert "model-resnet50-timeline-ps" in ids
    assert page.count("Plotly.newPlot(") == len(ids)
    assert '<table class="rank">' in page and "speedup over ps" in page


def test_the_page_is_self_contained(page_file: Path) -> None:
    page = page_file.read_text()
    assert re.search(r"""<(script|link|img|iframe)[^>]+(src|href)=["']?(https?:)?//""", page) is None
    assert page.count("<script") == 1 + len(plot_ids(page))  # plotly.js once, then one per plot
    assert len(page) > 3_000_000  # plotly.js itself is inlined


def test_the_page_is_deterministic(rows: Rows) -> None:
    assert build_report(rows, with_timeline=False) == build_report(rows, with_timeline=False)


def test_reference_scenario_prefers_32_workers_and_25gbps(rows: Rows) -> None:
    s = reference(rows, "vgg16")
    assert (s.workers, s.bandwidth) == (8, 25e9 / 8)  # no 32 in this sweep: the most workers
    assert len(s.rows(rows)) == 3
    assert {r["bandwidth_gbps"] for r in s.rows(rows, vary="bandwidth")} == {1.0, 25.0}
    assert {r["workers"] for r in s.rows(rows, vary="workers")} == {4, 8}


def test_without_ps_the_first_strategy_is_the_baseline_as_in_compare() -> None:
    page = build_report(run_grid("vgg16", "4,8", "10Gbps", "ring,tree", jobs=1), with_timeline=False)
    assert "Speedup against workers" in page and "speedup over ring (x)" in page
    assert "<th>speedup over ring</th>" in page
    assert "model-vgg16-bandwidth" not in page  # one bandwidth: no bandwidth curve


def test_rows_of_several_baselines_show_throughput() -> None:
    rows = run_grid("vgg16", "4,8", "10Gbps", "ring,tree", jobs=1)
    rows[-1]["baseline"] = "tree"  # as if the 8-worker rows came from another sweep
    page = build_report(rows, with_timeline=False)
    assert "no one baseline" in page and "Throughput against workers" in page


def test_an_llm_report_is_over_ddp_and_shows_no_latency_nccl_ignores() -> None:
    """An LLM sweep on a rail: its speedup column was "-" over a `ps` it does not have, and
    its scenario said "5 us/hop", a latency none of its strategies (timed by NCCL's model)
    sees."""
    rows = run_grid("llama3_8b", "16,64", None, "ddp,fsdp", topologies="rail:node=dgx-h100", gpus="h100", jobs=1)
    page = build_report(rows, with_timeline=False)
    assert "<th>speedup over ddp</th>" in page and "speedup over ddp (x)" in page
    assert "speedup over ps" not in page and "plain <code>ps</code> baseline" not in page
    assert "<td>1.00x</td>" in page  # ddp's own speedup cell, a number ("-" before)
    assert re.search(r"Reference scenario: 64 workers, 400 Gbps, rail:node=dgx-h100 topology", page)
    flows = run_grid("llama3_8b", 16, None, "ddp,hierarchical", topologies="rail:node=dgx-h100", gpus="h100", jobs=1)
    assert "Reference scenario: 16 workers, 400 Gbps, 5 us/hop, rail" in build_report(flows, with_timeline=False)


def test_breakdown_adds_up_to_the_iteration_time(rows: Rows) -> None:
    here = reference(rows, "resnet50").rows(rows)
    fig = figures.breakdown(here)
    by_strategy = {r["strategy"]: float(r["iteration_time_s"]) * 1e3 for r in here}  # type: ignore[arg-type]
    totals = [sum(values) for values in zip(*(trace.x for trace in fig.data))]
    for name, total in zip(fig.data[0].y, totals):
        assert total == pytest.approx(by_strategy[name], rel=1e-9)
    # The exposed part is iteration minus compute, waiting included (a ps worker waits for
    # the server with nothing in flight): named so, and the overlap as the bound it is.
    assert [t.name for t in fig.data][1:] == [
        "communication overlapped with compute (at least)",
        "compute slowed by communication kernels",
        "exposed: communicating or waiting for it",
    ]


def test_breakdown_of_nccl_timed_strategies_shows_the_compute_their_kernels_slowed() -> None:
    # The bars fell short of the iteration by the interference once it was its own figure.
    here = run_grid(["llama3_8b"], [16], ["400Gbps"], ["ddp", "fsdp"], topologies=["rail:node=dgx-h100"], gpus=["h100"])
    fig = figures.breakdown(here)
    slowed = next(t for t in fig.data if t.name == "compute slowed by communication kernels")
    assert all(x > 0 for x in slowed.x)
    by_strategy = {r["strategy"]: float(r["iteration_time_s"]) * 1e3 for r in here}
    for name, total in zip(fig.data[0].y, (sum(v) for v in zip(*(t.x for t in fig.data)))):
        assert total == pytest.approx(by_strategy[name], rel=1e-9)


SPANS = [
    {
        "kind": "compute",
        "worker": 0,
        "link": None,
        "name": "backward fc",
        "start_s": 1.0,
        "end_s": 1.002,
        "bytes": None,
    },
    {
        "kind": "compute",
        "worker": 1,
        "link": None,
        "name": "backward fc",
        "start_s": 1.0,
        "end_s": 1.002,
        "bytes": None,
    },
    {
        "kind": "flow",
        "worker": 0,
        "link": None,
        "name": "worker 0 -> server 0",
        "start_s": 1.002,
        "end_s": 1.004,
        "bytes": 100.0,
    },
    {
        "kind": "flow",
        "worker": None,
        "link": "h0->sw",
        "name": "worker 0 -> server 0",
        "start_s": 1.002,
        "end_s": 1.004,
        "bytes": 100.0,
    },
    {
        "kind": "flow",
        "worker": None,
        "link": "h0->sw",
        "name": "worker 0 -> server 0",
        "start_s": 1.003,
        "end_s": 1.005,
        "bytes": 50.0,
    },
    {
        "kind": "flow",
        "worker": None,
        "link": "sw->h2",
        "name": "worker 0 -> server 0",
        "start_s": 1.002,
        "end_s": 1.005,
        "bytes": 150.0,
    },
    {
        "kind": "flow",
        "worker": None,
        "link": "h2->sw",
        "name": "server 0 -> 2 hosts",
        "start_s": 1.005,
        "end_s": 1.006,
        "bytes": 10.0,
    },
    {
        "kind": "flow",
        "worker": None,
        "link": "sw->h1",
        "name": "server 0 -> 2 hosts",
        "start_s": 1.005,
        "end_s": 1.006,
        "bytes": 10.0,
    },
]


def test_timeline_rows_lanes_and_merged_busy_periods() -> None:
    fig, note = figures.timeline(SPANS, workers=2, title="t")
    assert note == ""
    assert list(fig.layout.yaxis.categoryarray) == ["server 0", "worker 1", "worker 0"]
    lanes = {t.name: t for t in fig.data}
    assert list(lanes["compute"].y) == ["worker 0", "worker 1"]
    sending = lanes["sending"]
    assert list(sending.y) == ["worker 0", "server 0"]
    assert sending.base[0] == pytest.approx(2.0) and sending.x[0] == pytest.approx(3.0)  # 1.002..1.005 s merged
    assert sending.customdata[0][1] == 2 and sending.customdata[0][2] == "150 B"
    assert list(lanes["receiving"].y) == ["worker 1", "server 0"]


def test_timeline_shows_at_most_eight_workers() -> None:
    spans = [
        {"kind": "compute", "worker": w, "link": None, "name": "c", "start_s": 0.0, "end_s": 1.0, "bytes": None}
        for w in range(12)
    ]
    fig, note = figures.timeline(spans, workers=12, title="t")
    assert len(fig.layout.yaxis.categoryarray) == 8 and note == "Workers 0–7 of 12 shown."


def test_timeline_section_with_a_recorder_and_without_one(rows: Rows) -> None:
    page = build_report(rows, record=lambda row: [dict(s) for s in SPANS])
    assert "model-vgg16-timeline-ps" in page
    page = build_report(rows, record=lambda row: "this build of the core cannot record an iteration yet")
    assert "Timeline: this build of the core cannot record an iteration yet." in page and "timeline-ps" not in page
    assert "timeline" not in "".join(plot_ids(build_report(rows, with_timeline=False)))


@pytest.mark.skipif(not timeline.supported(), reason="this build of the core records no timeline")
def test_the_core_timeline_has_every_worker(rows: Rows) -> None:
    row = next(r for r in rows if r["model"] == "resnet50" and r["workers"] == 8 and r["strategy"] == "ring")
    spans = timeline.record(row)
    assert spans is not None
    assert {s["worker"] for s in spans if s["kind"] == "compute"} == set(range(8))
    fig, _ = figures.timeline(spans, workers=8, title="t")
    assert {t.name for t in fig.data if len(t.y)} == {"compute", "sending", "receiving"}


def test_no_rows_is_an_input_error() -> None:
    with pytest.raises(tw.InputError, match="no rows"):
        build_report([])


def test_every_built_in_strategy_gets_a_colour_far_from_the_others() -> None:
    # 17 strategies shared a palette in which ring and hierarchical were both orange.
    import itertools

    from tensorwire.report.figures import palette
    from tensorwire.strategy import strategies

    colours = list(palette([s.name for s in strategies()]).values())

    def rgb(h: str) -> tuple[int, ...]:
        return tuple(int(h.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4))

    nearest = min(
        sum((a - b) ** 2 for a, b in zip(rgb(x), rgb(y))) ** 0.5 for x, y in itertools.combinations(colours, 2)
    )
    assert len(set(colours)) == len(colours) and nearest >= 55


def test_the_timeline_draws_nccl_timed_collectives_as_sending() -> None:
    # NCCL's collectives are timed in closed form: spans of the worker's own, on no link.
    r = tw.simulate(
        tw.Workload.collective("allreduce:64MiB"),
        tw.Cluster(16, None, topology="rail:node=dgx-h100"),
        "nccl",
        iterations=1,
        timeline=True,
        fold=False,
    )
    spans = [dict(s) for s in r.timeline]
    assert any(s["kind"] == "collective" for s in spans)
    fig, _ = figures.timeline(spans, workers=16, title="t")
    lanes = {t.name: t for t in fig.data}
    assert "worker 0" in list(lanes["sending"].y)
