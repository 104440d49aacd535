"""The report's plots, as plotly figures built from sweep rows and timeline spans.

Times are shown in milliseconds, rates in Gbps. Each strategy keeps one colour on every
plot of the page.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Sequence

import plotly.graph_objects as go  # type: ignore[import-untyped,import-not-found,unused-ignore]
from plotly.colors import qualitative  # type: ignore[import-untyped,import-not-found,unused-ignore]

from tensorwire.report.scenario import Scenario, common_baseline
from tensorwire.report.timeline import Span
from tensorwire.result import folded_shown, simulated_workers
from tensorwire.sweep.table import Row
from tensorwire.units import counted, format_count, format_rate

#: Timeline rows drawn at most: workers 0..N-1 (then links not tied to a worker).
TIMELINE_ROWS = 8


def _layout(**overrides: Any) -> dict[str, Any]:
    """The page's common layout with ``overrides`` (a ``legend`` dict is merged, not replaced)."""
    layout: dict[str, Any] = dict(
        template="plotly_white",
        margin=dict(l=70, r=20, t=50, b=50),
        font=dict(family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif", size=13),
    )
    layout.update(overrides)
    layout["legend"] = {"font": {"size": 11}, **overrides.get("legend", {})}
    return layout


def palette(specs: Sequence[str]) -> dict[str, str]:
    """One colour per strategy spec, stable across the page: Plotly's Dark24 first (24
    colours chosen to be told apart; Plotly's default 10 followed by D3's repeated near-equal
    oranges and reds), then Light24."""
    colours = list(qualitative.Dark24) + list(qualitative.Light24)
    return {s: colours[i % len(colours)] for i, s in enumerate(dict.fromkeys(specs))}


def versus(rows: list[Row], scenario: Scenario, vary: str, colours: dict[str, str]) -> go.Figure:
    """Speedup over the baseline (:func:`tensorwire.report.scenario.common_baseline`; else
    throughput) against ``vary`` (bandwidth or workers), one line per strategy."""
    mine = scenario.rows(rows, vary=vary)
    baseline = common_baseline(mine)
    use_speedup = baseline is not None
    shown = "speedup_over_baseline" if use_speedup else "throughput_samples_per_s"  # None: no compute
    by_strategy: dict[str, list[Row]] = defaultdict(list)
    for r in mine:
        by_strategy[str(r["strategy"])].append(r)
    fig = go.Figure()
    for spec, rs in by_strategy.items():
        key = "bandwidth" if vary == "bandwidth" else "workers"
        rs = sorted(rs, key=lambda r: float(r[key]))
        x = [float(r["bandwidth"]) * 8 / 1e9 if vary == "bandwidth" else int(r["workers"]) for r in rs]
        y = [None if r[shown] is None else float(r[shown]) for r in rs]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                name=spec,
                legendgroup=spec,
                mode="lines+markers",
                line=dict(color=colours.get(spec)),
                customdata=[[float(r["iteration_time_s"]) * 1e3, scaling_text(r), samples_text(r)] for r in rs],
                hovertemplate=f"<b>{spec}</b><br>%{{x}} {'Gbps' if vary == 'bandwidth' else 'workers'}"
                + ("<br>speedup %{y:.2f}x" if use_speedup else "<br>%{customdata[2]} samples/s")
                + "<br>iteration %{customdata[0]:.2f} ms<br>scaling factor %{customdata[1]}<extra></extra>",
            )
        )
    xs = sorted({v for t in fig.data for v in t.x})
    if vary == "bandwidth":
        title = f"against bandwidth ({counted(scenario.workers, 'worker')})"
        xaxis = dict(title="host link bandwidth (Gbps)", type="log", tickvals=xs, ticktext=[f"{v:g}" for v in xs])
    else:
        title = f"against workers ({format_rate(scenario.bandwidth)})"
        xaxis = dict(title="workers", type="log", tickvals=xs, ticktext=[str(v) for v in xs])
    ytitle = f"speedup over {baseline} (x)" if use_speedup else "throughput (samples/s)"
    fig.update_layout(
        **_layout(
            title=dict(text=("Speedup " if use_speedup else "Throughput ") + title, x=0.01),
            xaxis=xaxis,
            yaxis=dict(title=ytitle, rangemode="tozero"),
            height=max(430, 150 + 24 * len(by_strategy)),
            hovermode="closest",
        )
    )
    return fig


def scaling_text(row: Row) -> str:
    """A row's scaling factor as the page shows it (``-`` for a workload without compute).

    >>> scaling_text({"scaling_factor": 0.6964}), scaling_text({"scaling_factor": None})
    ('0.696', '-')
    """
    value = row["scaling_factor"]
    return "-" if value is None else f"{float(value):.3f}"


def samples_text(row: Row) -> str:
    """A row's samples/s as the page shows it (``-`` for a workload without compute).

    >>> samples_text({"throughput_samples_per_s": 3407.2}), samples_text({"throughput_samples_per_s": None})
    ('3,407', '-')
    """
    value = row["throughput_samples_per_s"]
    return "-" if value is None else format_count(float(value))


def breakdown(rows: list[Row]) -> go.Figure:
    """One bar per strategy, fastest on top: compute with no communication under it,
    compute overlapped with communication, compute slowed by communication kernels beside it
    (interference, NCCL-timed strategies), and the time not covered by compute (exposed:
    communicating, or waiting for a peer or a server); the bar's length is the iteration
    time. The overlap is what the rows give, ``comm_time_s - exposed_comm_s``, a lower bound:
    where a rank waits with nothing in flight (a parameter server serving the others) the
    exposed time holds more than its own communication, and the overlap shows as less."""
    rs = sorted(rows, key=lambda r: float(r["iteration_time_s"]), reverse=True)
    names = [str(r["strategy"]) for r in rs]
    compute = [float(r["compute_time_s"]) * 1e3 for r in rs]
    slowed = [float(r["compute_interference_s"]) * 1e3 for r in rs]
    exposed = [float(r["exposed_comm_s"]) * 1e3 for r in rs]
    overlapped = [
        min(max(float(r["comm_time_s"]) - float(r["exposed_comm_s"]), 0.0) * 1e3, c) for r, c in zip(rs, compute)
    ]
    parts = (
        ("compute, no communication", [c - o for c, o in zip(compute, overlapped)], "#4c78a8"),
        ("communication overlapped with compute (at least)", overlapped, "#72b7b2"),
        ("compute slowed by communication kernels", slowed, "#f2cf5b"),
        ("exposed: communicating or waiting for it", exposed, "#e45756"),
    )
    fig = go.Figure()
    for label, values, colour in parts:
        fig.add_trace(
            go.Bar(
                y=names,
                x=values,
                name=label,
                orientation="h",
                marker=dict(color=colour),
                hovertemplate=f"<b>%{{y}}</b><br>{label}: %{{x:.2f}} ms<extra></extra>",
            )
        )
    fig.update_layout(
        **_layout(
            barmode="stack",
            title=dict(text="Breakdown of an iteration", x=0.01),
            xaxis=dict(title="time per iteration (ms)"),
            yaxis=dict(automargin=True),
            height=140 + 30 * len(names),
            legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right", traceorder="normal"),
        )
    )
    return fig


_SENDER = re.compile(r"^h(\d+)->")
_RECEIVER = re.compile(r"->h(\d+)$")


def _host(k: int, workers: int) -> str:
    return f"worker {k}" if k < workers else f"server {k - workers}"


def _busy(spans: list[Span]) -> list[tuple[float, float, int, float, str, str]]:
    """Merges overlapping or touching spans into busy periods:
    (start_s, end_s, spans merged, bytes, first name, last name)."""
    out: list[tuple[float, float, int, float, str, str]] = []
    for s in sorted(spans, key=lambda s: (float(s["start_s"]), float(s["end_s"]))):
        a, b, n = float(s["start_s"]), float(s["end_s"]), float(s.get("bytes") or 0.0)
        if out and a <= out[-1][1]:
            pa, pb, pc, pn, first, _ = out[-1]
            out[-1] = (pa, max(pb, b), pc + 1, pn + n, first, str(s.get("name", "")))
        else:
            out.append((a, b, 1, n, str(s.get("name", "")), str(s.get("name", ""))))
    return out


def timeline(spans: Sequence[Span], workers: int, title: str, rows: int = TIMELINE_ROWS) -> tuple[go.Figure, str]:
    """A Gantt chart of one iteration, one row per host: its compute, what it sends (its
    first link) and what it receives (its last link), each drawn as busy periods
    (overlapping spans merged; hover for their count and bytes). Workers 0..rows-1 and
    up to four parameter servers are drawn; the note returned says what was left out.

    Host ``k`` is the one whose links are named ``hk->...`` and ``...->hk``; hosts from
    ``workers`` on are servers.

    A folded run (some workers own no spans: the run simulated a few ranks that stand for
    the others, see :data:`tensorwire.report.timeline.UNFOLD_UP_TO`) gets rows only for
    the workers it simulated, and a note that says so. Its representatives' messages reach
    their peers' hosts (``sw->h1``, ``sw->h2``, ... of worker 0's halving-doubling), and
    rows made of those were labelled as workers 1, 2, 4, ... under "Workers 0–7 of 256
    shown", as if those had been simulated and received nothing else.
    """
    if not spans:
        raise ValueError("no spans")
    t0 = min(float(s["start_s"]) for s in spans)
    lanes: dict[tuple[int, str], list[Span]] = defaultdict(list)
    by_link = any(s.get("link") for s in spans)
    for s in spans:
        if s.get("kind") == "compute" and s.get("worker") is not None:
            lanes[(int(s["worker"]), "compute")].append(s)
        elif s.get("kind") == "flow" and by_link and s.get("link"):
            link = str(s["link"])
            for pattern, lane in ((_SENDER, "send"), (_RECEIVER, "receive")):
                m = pattern.search(link)
                if m:
                    lanes[(int(m.group(1)), lane)].append(s)
        elif s.get("kind") in ("flow", "collective") and not by_link and s.get("worker") is not None:
            # NCCL's timed collectives are spans of the worker's own, on no link: its sending lane.
            lanes[(int(s["worker"]), "send")].append(s)
    hosts = sorted({k for k, _ in lanes})
    simulated = simulated_workers(spans)
    folded = 0 < len(simulated) < workers
    if folded:
        hosts = [k for k in hosts if k >= workers or k in simulated]
    shown = [k for k in hosts if k < workers][:rows] + [k for k in hosts if k >= workers][:4]
    order = [_host(k, workers) for k in shown]
    fig = go.Figure()
    for lane, colour, label in (
        ("compute", "#4c78a8", "compute"),
        ("send", "#f58518", "sending"),
        ("receive", "#54a24b", "receiving"),
    ):
        ys: list[str] = []
        base: list[float] = []
        width: list[float] = []
        info: list[list[Any]] = []
        for k in shown:
            for a, b, count, nbytes, first, last in _busy(lanes.get((k, lane), [])):
                ys.append(_host(k, workers))
                base.append((a - t0) * 1e3)
                width.append(max(b - a, 0.0) * 1e3)
                what = first if count == 1 else f"{first} … {last}"
                info.append([what, count, _fmt_bytes(nbytes) if lane != "compute" else ""])
        extra = "" if lane == "compute" else ", %{customdata[2]}"
        fig.add_trace(
            go.Bar(
                y=ys,
                base=base,
                x=width,
                orientation="h",
                name=label,
                offsetgroup=lane,
                marker=dict(color=colour, line=dict(width=0)),
                customdata=info,
                hovertemplate=f"<b>%{{y}}</b> {label}<br>%{{base:.3f}} ms for %{{x:.3f}} ms"
                + f"<br>%{{customdata[1]}} spans{extra}<br>%{{customdata[0]}}<extra></extra>",
            )
        )
    fig.update_layout(
        **_layout(
            barmode="group",
            bargap=0.2,
            title=dict(text=title, x=0.01),
            xaxis=dict(title="time since the iteration began (ms)", rangemode="tozero"),
            yaxis=dict(categoryorder="array", categoryarray=list(reversed(order)), automargin=True),
            height=170 + 44 * len(order),
            legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom", traceorder="normal"),
        )
    )
    shown_workers = [k for k in shown if k < workers]
    if folded and shown_workers:
        # As `simulate --trace` says it (tensorwire.result.folded_shown), as a sentence.
        text = folded_shown(shown_workers, len(simulated), workers)
        return fig, f"{text[0].upper()}{text[1:]}."
    hidden = len([k for k in hosts if k < workers]) - len(shown_workers)
    note = f"Workers 0–{rows - 1} of {workers} shown." if hidden > 0 else ""
    return fig, note


def _fmt_bytes(n: Any) -> str:
    if n is None:
        return "-"
    from tensorwire.units import format_bytes

    return format_bytes(float(n))
