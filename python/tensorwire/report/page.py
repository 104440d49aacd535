"""The report page: one self-contained HTML file (plotly.js inlined once, no network needed).

Per model: the reference scenario (see :mod:`tensorwire.report.scenario`), speedup against
bandwidth and against workers per strategy, the breakdown of an iteration, a ranked table,
and a per-worker timeline of one iteration for the baseline and the fastest strategy.
The page is deterministic: the same rows give the same bytes.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any, Callable, Optional, Union

import plotly.io as pio  # type: ignore[import-untyped,import-not-found,unused-ignore]
from plotly.offline import get_plotlyjs  # type: ignore[import-untyped,import-not-found,unused-ignore]

from tensorwire._core import InputError, __version__
from tensorwire.cluster import per_hop
from tensorwire.io import write_atomic
from tensorwire.report import figures, timeline
from tensorwire.report.scenario import Scenario, common_baseline, models_in, reference
from tensorwire.result import OVERLOAD
from tensorwire.strategy import latency_seen
from tensorwire.sweep.table import COLUMNS, Row, overloaded, with_derived
from tensorwire.units import counted, format_rate, format_seconds
from tensorwire.workloads import models as zoo_models

#: Records a timeline for a row, or says why it cannot (swappable for tests).
Recorder = Callable[[Row], Union[list[timeline.Span], str]]

_CONFIG = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"format": "svg"}}

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0;
       color: #1f2933; background: #f7f8fa; }
header { background: #1f2933; color: #fff; padding: 18px 32px; }
header h1 { margin: 0 0 4px 0; font-size: 22px; }
header p { margin: 2px 0; color: #cbd2d9; font-size: 14px; }
nav { padding: 8px 32px; background: #e4e7eb; font-size: 14px; }
nav a { margin-right: 16px; color: #1f2933; }
main { padding: 8px 32px 32px 32px; }
section.model { background: #fff; border-radius: 6px; box-shadow: 0 1px 3px rgba(0,0,0,.1);
                padding: 12px 20px 20px 20px; margin: 18px 0; }
section.model h2 { margin: 6px 0; }
p.scenario, p.note { color: #52606d; font-size: 14px; margin: 4px 0 10px 0; }
.plot { min-height: 200px; }
table.rank { border-collapse: collapse; font-size: 13px; margin: 10px 0 16px 0; }
table.rank th, table.rank td { padding: 4px 10px; border-bottom: 1px solid #e4e7eb; text-align: right; }
table.rank th:nth-child(2), table.rank td:nth-child(2) { text-align: left; font-family: ui-monospace, monospace; }
footer { padding: 12px 32px 32px 32px; color: #52606d; font-size: 13px; }
"""


def build_report(
    rows: list[Row], *, title: str = "tensorwire report", record: Optional[Recorder] = None, with_timeline: bool = True
) -> str:
    """The HTML page for sweep ``rows`` (as :func:`tensorwire.sweep.run_grid` returns them).

    ``with_timeline=False`` leaves the timeline out; ``record`` replaces the recorder of a
    timeline (default: one simulation with ``timeline=True`` when the core supports it).
    """
    if not rows:
        raise InputError("sweep", "no rows to report on")
    rows = with_derived(rows)
    missing = [c.name for c in COLUMNS if c.name not in rows[0]]
    if missing:
        raise InputError("sweep", f"rows lack the columns {', '.join(missing)}")
    recorder: Recorder = record or timeline.record
    colours = figures.palette([str(r["strategy"]) for r in rows])
    display = {m.name: m.display_name for m in zoo_models()}
    names = models_in(rows)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style>",
        f'<script type="text/javascript">{get_plotlyjs()}</script>',
        "</head><body>",
        f"<header><h1>{html.escape(title)}</h1>",
        f"<p>{counted(len(rows), 'simulated configuration')} &middot; tensorwire {html.escape(__version__)}</p>",
        f"<p>{html.escape(_grid_summary(rows))}</p></header>",
        "<nav>" + "".join(f'<a href="#{_id(m)}">{html.escape(display.get(m, m))}</a>' for m in names) + "</nav>",
        "<main>",
    ]
    for name in names:
        parts.append(_section(rows, name, display.get(name, name), colours, recorder if with_timeline else None))
    parts += [
        "</main>",
        "<footer><p><b>Speedup</b> is the iteration time of the baseline in the same scenario divided by the "
        "strategy's; the baseline is chosen as <code>tensorwire compare</code> chooses it: plain <code>ddp</code> "
        "(PyTorch DDP) for LLMs and on GPU fabrics, else plain <code>ps</code>, or the first strategy of the sweep "
        "where it lacks that one. <b>Breakdown</b>: a bar's length is the iteration time; compute under which "
        "communication overlaps is drawn separately from compute alone; exposed communication is the time the "
        "iteration waits for the network. <b>Timeline</b>: one simulated iteration, compute and the transfers each "
        "worker sends. Hover over any plot for values; drag to zoom, double-click to reset.</p></footer>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def write_report(path: str | Path, page: str) -> Path:
    """Writes the page atomically (temporary file, then rename)."""
    p = Path(path)
    write_atomic(p, page)
    return p


def _id(model: str) -> str:
    return "model-" + re.sub(r"[^A-Za-z0-9_-]", "-", model)


def _plot(fig: Any, div_id: str) -> str:
    body: str = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=div_id, config=_CONFIG)
    return f'<div class="plot">{body}</div>'


def _grid_summary(rows: list[Row]) -> str:
    """``workers 4, 8, 16; bandwidth 1, 10 Gbps; ...``: the columns that vary and the ones that do not
    (an LLM's columns where the rows have LLMs)."""
    parts = []
    for col, fmt in (
        ("model", str),
        ("workers", str),
        ("bandwidth_gbps", lambda v: f"{v:g}"),
        ("strategy", str),
        ("latency_s", lambda v: format_seconds(float(v))),
        ("topology", str),
        ("network", str),
        ("seq_len", str),
        ("mfu", lambda v: f"{v:g}"),
        ("recompute", lambda v: "yes" if v else "no"),
        ("compute_speedup", lambda v: f"{v:g}x"),
        ("seed", str),
    ):
        values = [v for v in dict.fromkeys(r.get(col) for r in rows) if v is not None]
        if not values:  # the LLM columns of a sweep without LLMs
            continue
        label = {
            "bandwidth_gbps": "Gbps",
            "latency_s": "latency",
            "compute_speedup": "compute speedup",
            "seq_len": "tokens per sequence",
            "mfu": "MFU",
        }.get(col, col)
        shown = ", ".join(fmt(v) for v in values[:12]) + (f", … ({len(values)} in all)" if len(values) > 12 else "")
        parts.append(f"{label}: {shown}")
    return "; ".join(parts)


def _scenario_text(s: Scenario, specs: list[str]) -> str:
    """The reference scenario in words; its latency only where one of ``specs`` (the
    strategies on the card) sees it."""
    v = s.values
    hop = per_hop(float(v["latency_s"]), latency_seen(specs, str(v["topology"])))
    tokens = "" if v.get("seq_len") is None else f" x {v['seq_len']} tokens"
    tokens += "" if v.get("mfu") is None else f", MFU {float(v['mfu']):g}"
    tokens += ", recompute" if v.get("recompute") else ""
    return (
        f"Reference scenario: {counted(s.workers, 'worker')}, {format_rate(s.bandwidth)}{hop}, "
        f"{v['topology']} topology, {v['network']} network model, {v['gpu']} batch {v['batch']}{tokens}, "
        f"compute x{float(v['compute_speedup']):g}, "
        f"{v['iterations']} iterations, seed {v['seed']}. The bandwidth plot varies the rate, the workers plot the "
        "worker count; everything else on this card is at this scenario."
    )


def _section(rows: list[Row], model: str, display: str, colours: dict[str, str], recorder: Optional[Recorder]) -> str:
    s = reference(rows, model)
    here = s.rows(rows)
    key = _id(model)
    out = [
        f'<section class="model" id="{key}"><h2>{html.escape(display)}</h2>',
        f'<p class="scenario">{html.escape(_scenario_text(s, [str(r["strategy"]) for r in here]))}</p>',
    ]
    curves = 0
    for vary, column in (("bandwidth", "bandwidth"), ("workers", "workers")):
        if len({r[column] for r in s.rows(rows, vary=vary)}) > 1:
            out.append(_plot(figures.versus(rows, s, vary, colours), f"{key}-{vary}"))
            curves += 1
    if not curves:
        out.append('<p class="note">One bandwidth and one worker count in this sweep: no speedup curves.</p>')
    elif common_baseline(here) is None:
        out.append('<p class="note">The rows have no one baseline: curves show throughput, not speedup.</p>')
    out.append(_plot(figures.breakdown(here), f"{key}-breakdown"))
    out.append(_table(here))
    over = overloaded(here)
    if over:
        out.append(f'<p class="note">{html.escape(OVERLOAD.format(strategies=", ".join(over)))}.</p>')
    if recorder is not None:
        out.append(_timelines(here, key, recorder))
    out.append("</section>")
    return "\n".join(out)


def _table(rows: list[Row]) -> str:
    baseline = common_baseline(rows)
    head = (
        "#",
        "strategy",
        "iteration",
        f"speedup over {html.escape(baseline or 'the baseline')}",
        "samples/s",
        "scaling factor",
        "exposed comm",
        "busiest link",
    )
    body = []
    for i, r in enumerate(sorted(rows, key=lambda r: float(r["iteration_time_s"])), start=1):
        speedup = r.get("speedup_over_baseline")
        cells = (
            str(i),
            html.escape(str(r["strategy"])),
            format_seconds(float(r["iteration_time_s"])),
            "-" if speedup is None else f"{float(speedup):.2f}x",
            figures.samples_text(r),
            figures.scaling_text(r),
            format_seconds(float(r["exposed_comm_s"])),
            "-" if r["max_link_utilization"] is None else f"{float(r['max_link_utilization']):.0%}",
        )
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return (
        '<table class="rank"><thead><tr>'
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )


def _timelines(rows: list[Row], key: str, recorder: Recorder) -> str:
    """Timelines of the baseline and of the fastest strategy."""
    ranked = sorted(rows, key=lambda r: float(r["iteration_time_s"]))
    chosen = [r for r in rows if r["strategy"] == r.get("baseline")][:1]
    if ranked[0] not in chosen:
        chosen.append(ranked[0])
    out = []
    for r in chosen:
        spans = recorder(r)
        if isinstance(spans, str):
            return f'<p class="note">Timeline: {spans}.</p>'
        if not spans:
            continue
        label = "baseline" if r["strategy"] == r.get("baseline") else "fastest"
        fig, note = figures.timeline(spans, int(r["workers"]), f"Timeline of one iteration: {r['strategy']} ({label})")
        slug = re.sub(r"[^A-Za-z0-9_-]", "-", str(r["strategy"]))
        out.append(_plot(fig, f"{key}-timeline-{slug}"))
        if note:
            out.append(f'<p class="note">{html.escape(note)}</p>')
    return "\n".join(out)
