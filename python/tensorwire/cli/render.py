"""Human-readable output with rich: tables and progress bars (on stderr, only on a terminal)."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any, Callable, Iterator, Optional

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tensorwire.api import Progress as RunProgress
from tensorwire.cluster import Cluster
from tensorwire.result import Result
from tensorwire.strategy import OptionInfo, StrategyInfo
from tensorwire.units import format_bytes, format_rate, format_seconds
from tensorwire.workload import Workload
from tensorwire.workloads import ModelInfo

# Piped output (files, other programs) gets a wide fixed width instead of wrapped cells.
console = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 160)


@contextlib.contextmanager
def progress(total: int, what: str) -> Iterator[Callable[[], None]]:
    """A progress bar on stderr when it is a terminal; yields a function to advance it."""
    if not sys.stderr.isatty() or total <= 1:
        yield lambda: None
        return
    bar = Progress(
        TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True), transient=True
    )
    with bar:
        task = bar.add_task(what, total=total)
        yield lambda: bar.advance(task)


@contextlib.contextmanager
def run_progress(after_s: float = 1.0) -> Iterator[Callable[[RunProgress], bool]]:
    """A progress bar for one long simulation: on stderr when it is a terminal, shown only
    once the run has taken ``after_s`` seconds; yields the ``simulate(progress=...)`` callback."""
    start = time.monotonic()
    bar: Optional[Progress] = None
    task = None

    def report(p: RunProgress) -> bool:
        nonlocal bar, task
        if not sys.stderr.isatty() or time.monotonic() - start < after_s:
            return True
        if bar is None:
            bar = Progress(
                TextColumn("simulating"), BarColumn(), MofNCompleteColumn(), TextColumn("iterations"),
                TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), console=Console(stderr=True), transient=True,
            )
            bar.start()
            task = bar.add_task("simulating", total=p.iterations, detail="")
        assert task is not None
        bar.update(task, completed=p.iterations_done, detail=f"{p.simulated_s:.3f} s simulated, {p.flows:,} flows")
        return True

    try:
        yield report
    finally:
        if bar is not None:
            bar.stop()


#: Longest text from an input file (a workload's description) shown in a title, characters.
TITLE_CHARS = 200


def short(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (with an ellipsis) if longer."""
    line = " ".join(text[: limit + 1].split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def result(r: Result, workload: Workload, healthy: Optional[Result] = None) -> None:
    """Metrics of one simulation and its busiest links (``healthy``: the same run without
    its failures, shown beside it)."""
    title = f"{short(workload.description or workload.name)}: {r.strategy}, {r.workers} workers, {format_rate(r.bandwidth)}"
    t = Table(title=Text(title))
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_row("iteration time", format_seconds(r.iteration_time_s))
    if healthy is not None:
        slower = r.iteration_time_s / healthy.iteration_time_s if healthy.iteration_time_s > 0 else float("inf")
        t.add_row("iteration time without failures", f"{format_seconds(healthy.iteration_time_s)} ({slower:.2f}x slower with)")
    t.add_row("throughput", f"{r.throughput_samples_per_s:,.1f} samples/s")
    t.add_row("scaling factor", f"{r.scaling_factor:.3f}")
    t.add_row("compute per iteration", format_seconds(r.compute_time_s))
    t.add_row("communication (rank 0 busy)", format_seconds(r.comm_time_s))
    t.add_row("exposed communication", format_seconds(r.exposed_comm_s))
    t.add_row("gradient bytes per worker", format_bytes(workload.total_bytes))
    t.add_row("bytes sent per worker", format_bytes(round(r.sent_bytes_per_worker)))
    if r.nap is not None:
        t.add_row("active processes per round (NAP)", f"{r.nap:.2f} of {r.workers}")
    for name, u in r.busiest_links(3):
        t.add_row(f"link {name}", f"{u:.1%}")
    console.print(t)


def comparison(results: dict[str, list[Result]], baseline: str, cluster: Cluster) -> None:
    """One ranked table per model."""
    for model, rs in results.items():
        base = next(r for r in rs if r.strategy == baseline)
        t = Table(title=f"{model} on {cluster.describe()}")
        for col, just in (("#", "right"), ("strategy", "left"), ("iteration", "right"), ("samples/s", "right"),
                          ("scaling", "right"), ("exposed", "right"), ("max link", "right"), (f"vs {baseline}", "right")):
            t.add_column(col, justify=just)  # type: ignore[arg-type]
        for i, r in enumerate(sorted(rs, key=lambda r: r.iteration_time_s), start=1):
            t.add_row(
                str(i),
                r.strategy,
                format_seconds(r.iteration_time_s),
                f"{r.throughput_samples_per_s:,.0f}",
                f"{r.scaling_factor:.3f}",
                format_seconds(r.exposed_comm_s),
                f"{r.max_link_utilization:.0%}",
                f"{base.iteration_time_s / r.iteration_time_s:.2f}x",
            )
        console.print(t)


def model_dict(m: ModelInfo) -> dict[str, Any]:
    """JSON form of a model summary."""
    return {
        "name": m.name,
        "display_name": m.display_name,
        "family": m.family,
        "sample": m.sample,
        "tokens_per_sample": m.tokens_per_sample,
        "dtype_bytes": m.dtype_bytes,
        "parameters": m.parameters,
        "bytes": m.bytes,
        "tensors": m.tensors,
        "largest_tensor_bytes": m.largest_tensor_bytes,
        "default_device": m.default_device,
        "devices": {d.name: {"batch_size": d.batch_size, "forward_s": d.forward_s, "backward_s": d.backward_s, "source": d.source} for d in m.devices},
    }


def models(infos: list[ModelInfo]) -> None:
    """Table of the zoo and the LLMs."""
    t = Table(title="built-in models (zoo: measured, gradients fp32; llm: FLOPs / (peak x MFU 0.40), gradients bf16)")
    for col in ("name", "model", "parameters", "gradients", "tensors", "largest", "devices: batch, fwd / bwd"):
        t.add_column(col, justify="left" if col in ("name", "model", "devices: batch, fwd / bwd") else "right")
    for m in infos:
        devices = "; ".join(
            f"{d.name}: {d.batch_size}, {format_seconds(d.forward_s)} / {format_seconds(d.backward_s)}" for d in m.devices
        )
        model = m.display_name if m.tokens_per_sample is None else f"{m.display_name}, {m.tokens_per_sample} tokens/sample"
        t.add_row(m.name, model, f"{m.parameters:,}", format_bytes(m.bytes), str(m.tensors), format_bytes(m.largest_tensor_bytes), devices)
    console.print(t)


def strategies(infos: list[StrategyInfo], common: tuple[OptionInfo, ...], topologies: list[dict[str, Any]]) -> None:
    """Strategies with their own options, the options every strategy takes, then topologies."""
    t = Table(title="strategies: NAME[:key=value,...]", show_lines=True)
    t.add_column("strategy")
    t.add_column("what it does")
    t.add_column("options (default)")
    for s in infos:
        opts = "\n".join(f"{o.name}={o.accepts}" + (f" ({o.default})" if o.default else "") + f": {o.help}" for o in s.options)
        t.add_row(s.name, s.summary, opts or "-")
    console.print(t)
    t = Table(title="options every strategy takes (e.g. ring:partition=4MiB,schedule=priority,credit=8MiB)")
    t.add_column("option")
    t.add_column("accepts")
    t.add_column("default")
    t.add_column("what it does")
    for o in common:
        t.add_row(o.name, o.accepts, o.default or "-", o.help)
    console.print(t)
    t = Table(title="topologies (--topology)")
    t.add_column("topology")
    t.add_column("what it is")
    t.add_column("options (default)")
    for topo in topologies:
        opts = "\n".join(f"{o['name']}={o['accepts']}" + (f" ({o['default']})" if o["default"] else "") for o in topo["options"])
        t.add_row(topo["name"], topo["summary"], opts or "-")
    console.print(t)
