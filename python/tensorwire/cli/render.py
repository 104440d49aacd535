"""Human-readable output with rich: tables, and progress on stderr (a bar on a terminal, a
few plain lines elsewhere)."""

from __future__ import annotations

import contextlib
import math
import sys
import time
from typing import Any, Callable, Iterator, Optional, Sequence

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tensorwire.api import Progress as RunProgress
from tensorwire.cli.terminal import stdout_console
from tensorwire.cluster import Cluster
from tensorwire.result import OVERLOAD, Result, nccl_channels_text, nccl_settings, over_capacity, ranked, speedup
from tensorwire.strategy import OptionInfo, Strategy, StrategyInfo, latency_seen, with_options
from tensorwire.units import counted, format_bytes, format_count, format_rate, format_seconds
from tensorwire.workload import Workload
from tensorwire.workloads import ModelInfo

# Piped output (files, other programs) gets a wide fixed width instead of wrapped cells.
console = stdout_console()


#: Off a terminal, a progress line at least this often (seconds) while one simulation runs.
LINE_EVERY_S = 10.0


def _line(text: str) -> None:
    """One progress line on stderr (off a terminal, where no bar can be drawn)."""
    click.echo(f"tensorwire: {text}", err=True)


@contextlib.contextmanager
def progress(total: int, what: str) -> Iterator[Callable[..., None]]:
    """Progress of ``total`` steps on stderr; yields ``advance(label="")``, called after each.

    On a terminal: a bar (``what``, k/total, elapsed). Elsewhere (a pipe, a log file, CI): a
    line per finished step, ``tensorwire: [k/total] label (T s)``, at most about 20 lines in
    all (every ``ceil(total/20)``-th step and the last one), so that a long run is visibly
    working without flooding a log. Nothing for a single step."""
    start = time.monotonic()
    if total <= 1:
        yield lambda label="": None
        return
    if not sys.stderr.isatty():
        every = max(1, -(-total // 20))
        done = 0

        def line(label: str = "") -> None:
            nonlocal done
            done += 1
            if done % every == 0 or done == total:
                _line(f"[{done}/{total}] {label or what} ({time.monotonic() - start:.1f} s)")

        yield line
        return
    bar = Progress(
        TextColumn(what),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with bar:
        task = bar.add_task(what, total=total, detail="")
        yield lambda label="": bar.update(task, advance=1, detail=label)


@contextlib.contextmanager
def run_progress(after_s: float = 1.0, what: str = "simulating") -> Iterator[Callable[[RunProgress], bool]]:
    """Progress of one long simulation, shown only once the run has taken ``after_s``
    seconds; yields the ``simulate(progress=...)`` callback. On a terminal: a bar on stderr.
    Elsewhere: a line on stderr every :data:`LINE_EVERY_S` seconds (iterations done, simulated
    time, flows), so that a run of minutes in a pipe or a log is visibly alive."""
    start = time.monotonic()
    last_line = start
    bar: Optional[Progress] = None
    task = None

    def report(p: RunProgress) -> bool:
        nonlocal bar, task, last_line
        now = time.monotonic()
        if now - start < after_s:
            return True
        detail = f"{p.simulated_s:.3f} s simulated, {p.flows:,} flows"
        if not sys.stderr.isatty():
            if now - last_line >= LINE_EVERY_S:
                last_line = now
                _line(f"{what}: {p.iterations_done}/{p.iterations} iterations, {detail} ({now - start:.0f} s)")
            return True
        if bar is None:
            bar = Progress(
                TextColumn(what),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("iterations"),
                TextColumn("{task.fields[detail]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            bar.start()
            task = bar.add_task(what, total=p.iterations, detail="")
        assert task is not None
        bar.update(task, completed=p.iterations_done, detail=detail)
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


def titled(workload: Workload) -> str:
    """A workload as a title names it: its name, and its description after it where it has
    one (a workload file's description alone, ``optional``, named nothing); a description
    that starts with the name alone.

    >>> from types import SimpleNamespace as W
    >>> titled(W(name="mlp", description="two layers")), titled(W(name="mlp", description=""))
    ('mlp (two layers)', 'mlp')
    >>> titled(W(name="allgather:64MiB", description="allgather:64MiB: collective microbenchmark"))
    'allgather:64MiB: collective microbenchmark'
    """
    described = workload.description.strip()
    if not described or described.startswith(workload.name):
        return described or workload.name
    return f"{workload.name} ({described})"


def result(
    r: Result,
    workload: Workload,
    healthy: Optional[Result] = None,
    extra: Optional[dict[str, Any]] = None,
    conditions: str = "",
) -> None:
    """Metrics of one simulation and its busiest links (``healthy``: the same run without
    its failures, shown beside it). ``extra``: a collective microbenchmark's time per
    collective and bandwidths (key ``busbw_bytes_per_s``), shown instead of the training
    metrics, or an LLM's tokens/s, model TFLOP/s and memory per GPU. ``conditions``: what else the
    title says of the run (its stragglers)."""
    extra = extra or {}
    bench = "busbw_bytes_per_s" in extra
    title = f"{short(titled(workload))}: {r.strategy}, {counted(r.workers, 'worker')}, {format_rate(r.bandwidth)}"
    title += f", {conditions}" if conditions else ""
    t = Table(title=Text(title))
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_row(
        "iteration time" + (f" ({counted(extra['collectives_per_iteration'], 'collective')})" if bench else ""),
        format_seconds(r.iteration_time_s),
    )
    if healthy is not None:
        slower = r.iteration_time_s / healthy.iteration_time_s if healthy.iteration_time_s > 0 else float("inf")
        t.add_row(
            "iteration time without failures", f"{format_seconds(healthy.iteration_time_s)} ({slower:.2f}x slower with)"
        )
    if bench:
        t.add_row("time per collective", format_seconds(extra["time_per_collective_s"]))
        t.add_row("algorithm bandwidth (size / time)", f"{extra['algbw_bytes_per_s'] / 1e9:,.3f} GB/s")
        t.add_row(
            f"bus bandwidth (algbw x {extra['busbw_factor']:.4g})", f"{extra['busbw_bytes_per_s'] / 1e9:,.3f} GB/s"
        )
        t.add_row("host link rate", f"{r.bandwidth / 1e9:,.3f} GB/s")
    else:
        t.add_row("throughput", f"{format_count(r.throughput_samples_per_s)} samples/s")
        if "tokens_per_s" in extra:
            t.add_row("tokens/s (whole job)", format_count(extra["tokens_per_s"]))
            t.add_row("model TFLOP/s per GPU (achieved)", format_count(extra["model_tflops_per_gpu"]))
            t.add_row(
                "model states per GPU (ZeRO's count + gathered parameters)", gib(extra["model_state_bytes_per_gpu"])
            )
            t.add_row(
                "activations per GPU (peak in the backward, one micro-batch)", gib(extra["activation_bytes_per_gpu"])
            )
            t.add_row("memory per GPU (states + activations)", memory_per_gpu(extra))
        t.add_row("scaling factor", scaling_text(r.scaling_factor))
        t.add_row("compute per iteration", format_seconds(r.compute_time_s))
        if r.compute_interference_s > 0:
            t.add_row(INTERFERENCE_ROW, format_seconds(r.compute_interference_s))
    # Two different measures: rank 0's messages in flight, and the time the iteration is
    # longer than its compute, which also counts waits for other workers or servers (so it
    # may be the larger, e.g. under parameter servers).
    t.add_row("rank 0 communicating", format_seconds(r.comm_time_s))
    t.add_row("exposed (not covered by compute)", format_seconds(r.exposed_comm_s))
    t.add_row(
        "gradient bytes per worker" if not bench else "bytes per iteration", format_bytes(r.gradient_bytes_per_worker)
    )
    t.add_row("bytes sent by rank 0", format_bytes(round(r.sent_bytes_per_worker)))
    if r.active_processes is not None:
        t.add_row("active processes per round (NAP)", f"{r.active_processes:.2f} of {r.workers}")
    for label, value in nccl_rows(r, bench):
        t.add_row(label, value)
    if not r.link_utilization:
        # Nothing measured on the links (rather than every link at 0%).
        t.add_row("links", NO_LINKS)
    else:
        for name, u in r.busiest_links(3):
            t.add_row(f"link {name}", f"{u:.1%}")
    console.print(t)
    if over_capacity(r.max_link_utilization):
        console.print(Text(OVERLOAD.format(strategies=r.strategy)))


def scaling_text(factor: float) -> str:
    """A scaling factor to three decimals, or to two significant digits below 0.001 (GPT-3
    on 16 workers at 1 Gbit/s through one parameter server read 0.000); ``-`` for NaN (a
    workload without compute has none).

    >>> scaling_text(0.9761), scaling_text(0.000034), scaling_text(float("nan"))
    ('0.976', '3.4e-05', '-')
    """
    if math.isnan(factor):
        return "-"
    return f"{factor:.3f}" if factor >= 0.001 or factor == 0 else f"{factor:.2g}"


#: The row of the compute time communication kernels took from rank 0 (interference).
INTERFERENCE_ROW = "compute slowed by collective kernels"
#: The compare table's note on its ``slowed`` column (shown when some strategy has any).
SLOWED_NOTE = (
    f"slowed: {INTERFERENCE_ROW} (rank 0's compute stretched while they hold SMs); "
    "iteration = compute + slowed + exposed"
)

#: What the link section says when no link utilisation was measured.
NO_LINKS = "- (NCCL's collectives are timed in closed form and put no flows on links)"
MEMORY_NOTE = (
    "memory/GPU: model states (weights, gradients and Adam's 12 bytes per parameter as each strategy shards them, "
    "ZeRO's count, plus the parameters it gathers whole at once) + one micro-batch's activations at their peak "
    "in the backward (16-bit, FlashAttention, the logits' fp32 gradient; the same under every strategy); not counted: allocator fragmentation, "
    "NCCL buffers, workspaces; > GPU memory: does not fit, time shown regardless"
)

#: Most NCCL choices listed in ``simulate``'s table (the most used; the rest counted).
NCCL_ROWS = 4


def nccl_rows(r: Result, bench: bool) -> list[tuple[str, str]]:
    """Rows saying what NCCL's tuning model chose: a microbenchmark's one choice, or per
    choice the number of one iteration's collectives that ran with it (the most used
    first, at most :data:`NCCL_ROWS`)."""
    uses = r.nccl_choices
    if not uses:
        return []

    def what(u: dict[str, Any]) -> str:
        return f"{u['algorithm']} / {u['protocol']}, {nccl_channels_text(u)}"

    if bench and len(uses) == 1:
        return [("NCCL's choice (algorithm / protocol)", what(uses[0])), *faster_rows(uses[0], r.strategy)]
    rows = []
    for u in uses[:NCCL_ROWS]:
        rows.append(
            (
                f"NCCL {u['collective']} (per iteration)",
                f"{u['count']:,} x {what(u)}, {format_bytes(round(u['bytes']))}",
            )
        )
        rows.extend(faster_rows(u, r.strategy))
    if len(uses) > NCCL_ROWS:
        rest = sum(int(u["count"]) for u in uses[NCCL_ROWS:])
        rows.append(("NCCL, other choices", f"{len(uses) - NCCL_ROWS} more, {rest:,} collectives"))
    return rows


#: Share of the time of NCCL's choice that a faster algorithm and protocol must save to be
#: named (:func:`faster_rows`): below it the difference is within the model's error.
FASTER_SHARE = 0.05


def faster_rows(use: dict[str, Any], strategy: str) -> list[tuple[str, str]]:
    """A row naming the algorithm and protocol that tensorwire times faster than NCCL's
    choice for the collectives of ``use`` (one entry of ``nccl_choices``), where it saves at
    least :data:`FASTER_SHARE` of their time: NCCL chooses by its tuning model, tensorwire
    adds the pipeline's fill and the fabric's efficiencies (docs/collectives.md, "NCCL's
    choice and the fastest"). With the NCCL settings that force it and, for strategies that
    take ``algo=``/``proto=``, the spec that simulates it.

    >>> u = {"seconds": 9.3e-4, "fastest_seconds": 5.3e-4, "faster_algorithm": "ring", "faster_protocol": "ll128"}
    >>> faster_rows(u, "nccl")
    [("  faster (tensorwire's timing)", 'ring / ll128: 530 us against 930 us (NCCL_ALGO=Ring NCCL_PROTO=LL128; -s nccl:algo=ring,proto=ll128)')]
    >>> faster_rows({**u, "fastest_seconds": 9.0e-4}, "nccl")
    []
    """
    algo, proto = use.get("faster_algorithm"), use.get("faster_protocol")
    seconds, fastest = use.get("seconds", 0.0), use.get("fastest_seconds", 0.0)
    if algo is None or proto is None or not fastest < seconds * (1 - FASTER_SHARE):
        return []
    how = nccl_settings(algo, proto)
    forced = forced_spec(strategy, algo, proto)
    if forced is not None:
        how += f"; -s {forced}"
    return [
        (
            "  faster (tensorwire's timing)",
            f"{algo} / {proto}: {format_seconds(fastest)} against {format_seconds(seconds)} ({how})",
        )
    ]


def forced_spec(strategy: str, algo: str, proto: str) -> Optional[str]:
    """``strategy`` restricted to ``algo`` and ``proto`` where it takes them (``nccl``,
    ``ddp``), its other options kept; None for the others.

    >>> forced_spec("ddp:bucket=50MiB,algo=tree", "ring", "ll128"), forced_spec("fsdp", "ring", "ll")
    ('ddp:bucket=50MiB,algo=ring,proto=ll128', None)
    """
    parsed = Strategy(strategy)
    if parsed.name not in ("nccl", "ddp"):
        return None
    kept = [f"{k}={v}" for k, v in parsed.core.options if k not in ("algo", "proto")]
    return with_options(parsed.name, *kept, f"algo={algo}", f"proto={proto}")


def gib(size: float) -> str:
    """Bytes in GiB, as GPUs are sold (an H100 "80GB" has 80 GiB).

    >>> gib(5.05 * 2**30), gib(1043.4 * 2**30)
    ('5.05 GiB', '1,043 GiB')
    """
    return f"{format_count(size / 2**30)} GiB"


def memory_per_gpu(extra: dict[str, float], short: bool = False) -> str:
    """Memory per GPU, model states plus activations (``memory_bytes_per_gpu``), beside the
    GPU's memory, in GiB: ``1,043 GiB > 80`` where it does not fit (``: does not fit`` in
    full), ``54 GiB`` (``of 80 GiB`` in full)."""
    need, have = extra["memory_bytes_per_gpu"] / 2**30, extra["gpu_memory_bytes"] / 2**30
    shown = gib(extra["memory_bytes_per_gpu"])
    if need > have:
        return f"{shown} > {format_count(have)}" + (" GiB: does not fit" if not short else "")
    return shown if short else f"{shown} of {format_count(have)} GiB"


def comparison(
    model: str,
    rows: Sequence[Any],
    base: Optional[Result],
    note: str,
    cluster: Cluster,
    aliases: Optional[dict[str, str]] = None,
    extra: Optional[Callable[[Result], dict[str, float]]] = None,
) -> None:
    """One ranked table for ``model``: the results fastest first, then the strategies refused
    up front (objects with ``strategy`` and ``reason``), each on a row that says why.
    ``base`` is the baseline of the speedup column (``note`` says why it is not the usual
    one), ``aliases`` maps another name to its strategy (shown on the target's row), and
    ``extra`` gives LLM columns (tokens/s, model TFLOP/s per GPU, memory per GPU) for a
    result."""
    ran = ranked(r for r in rows if isinstance(r, Result))
    refused = [r for r in rows if not isinstance(r, Result)]
    llm = bool(ran) and extra is not None and bool(extra(ran[0]))
    seen = latency_seen([r.strategy for r in ran], cluster.topology)
    title = f"{model} on {cluster.describe(seen)}" + (f" ({note})" if note else "")
    t = Table(title=title)
    columns = [("#", "right"), ("strategy", "left"), ("iteration", "right"), ("samples/s", "right")]
    if llm:
        columns += [("tokens/s", "right"), ("TFLOP/s per GPU", "right"), ("memory/GPU", "right")]
    slowed = any(r.compute_interference_s > 0 for r in ran)
    columns += [("scaling", "right"), ("exposed", "right")]
    if slowed:
        columns.append(("slowed", "right"))
    columns += [
        ("max link", "right"),
        (f"vs {_label(base.strategy)}" if base is not None else "speedup", "right"),
    ]
    for col, just in columns:
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    also: dict[str, list[str]] = {}
    for alias, target in (aliases or {}).items():
        also.setdefault(target, []).append(alias)
    for i, r in enumerate(ran, start=1):
        name = r.strategy + (f" (= {', '.join(also[r.strategy])})" if r.strategy in also else "")
        cells = [str(i), name, format_seconds(r.iteration_time_s), format_count(r.throughput_samples_per_s)]
        if llm and extra is not None:
            m = extra(r)
            cells += [
                format_count(m["tokens_per_s"]),
                format_count(m["model_tflops_per_gpu"]),
                memory_per_gpu(m, short=True),
            ]
        cells += [
            scaling_text(r.scaling_factor),
            format_seconds(r.exposed_comm_s),
        ]
        if slowed:
            cells.append(format_seconds(r.compute_interference_s))
        cells += [
            "-" if r.max_link_utilization is None else f"{r.max_link_utilization:.0%}",
            f"{speedup(base, r):.2f}x" if base is not None else "-",
        ]
        t.add_row(*cells)
    for i, x in enumerate(refused, 1):
        t.add_row("-", x.strategy, f"refused [{i}]", *([""] * (len(columns) - 3)))
    console.print(t)
    if slowed:
        console.print(Text(SLOWED_NOTE))
    if any(not r.link_utilization for r in ran):
        console.print(Text(f"max link {NO_LINKS}"))
    if llm and extra is not None:
        console.print(Text(MEMORY_NOTE))
    if base is not None and any(_rate_is_not_pace(base, r) for r in ran):
        console.print(Text(SPEEDUP_NOTE.format(base=_label(base.strategy))))
    over = [r.strategy for r in ran if over_capacity(r.max_link_utilization)]
    if over:
        console.print(Text(OVERLOAD.format(strategies=", ".join(over))))
    for i, x in enumerate(refused, 1):  # the reasons below the table, so its columns stay narrow
        console.print(Text(f"[{i}] {x.strategy}: {x.reason}"))


#: Under the compare table where a speedup is not the ratio of the iteration times shown.
SPEEDUP_NOTE = (
    "vs {base}: samples/s over {base}'s, not the ratio of the iteration times shown: under a partial "
    "collective a job's rate is the sum of its workers' own rates (a straggler left out of a round "
    "contributes fewer samples)"
)


def _rate_is_not_pace(base: Result, r: Result) -> bool:
    """Whether ``r``'s speedup over ``base`` (samples/s) differs from the ratio of their
    iteration times by more than the table's rounding (0.5%)."""
    pace = base.iteration_time_s / r.iteration_time_s if r.iteration_time_s > 0 else math.inf
    return abs(speedup(base, r) / pace - 1) > 0.005


def _label(spec: str) -> str:
    """How a baseline is named in a column header: ``ddp`` as DDP (PyTorch's)."""
    return "DDP" if spec.split(":", 1)[0] == "ddp" else spec


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
        "devices": {
            d.name: {
                "batch_size": d.batch_size,
                "forward_s": d.forward_s,
                "backward_s": d.backward_s,
                "source": d.source,
            }
            for d in m.devices
        },
    }


def models(infos: list[ModelInfo]) -> None:
    """Table of the zoo and the LLMs."""
    t = Table(title="built-in models (zoo: measured, gradients fp32; llm: FLOPs / (peak x MFU 0.40), gradients bf16)")
    for col in ("name", "model", "parameters", "gradients", "tensors", "largest", "devices: batch, fwd / bwd"):
        t.add_column(col, justify="left" if col in ("name", "model", "devices: batch, fwd / bwd") else "right")
    for m in infos:
        devices = "; ".join(
            f"{d.name}: {d.batch_size}, {format_seconds(d.forward_s)} / {format_seconds(d.backward_s)}"
            for d in m.devices
        )
        model = (
            m.display_name if m.tokens_per_sample is None else f"{m.display_name}, {m.tokens_per_sample} tokens/sample"
        )
        t.add_row(
            m.name,
            model,
            f"{m.parameters:,}",
            format_bytes(m.bytes),
            str(m.tensors),
            format_bytes(m.largest_tensor_bytes),
            devices,
        )
    console.print(t)


def _with_aliases(o: OptionInfo) -> str:
    """An option's help, followed by its old spellings (still accepted) if it has any."""
    return o.help + "".join(f" (old spelling, still accepted: {a})" for a in o.aliases)


def strategies(infos: list[StrategyInfo], common: tuple[OptionInfo, ...], topologies: list[dict[str, Any]]) -> None:
    """Strategies, one row each (an alias on its target's row) with the names of the options
    it takes; each strategy option once per meaning, with the strategies that take it; the host options
    once; then topologies. Only options a strategy accepts are listed for it."""
    aliases: dict[str, list[str]] = {}
    for s in infos:
        if s.alias_of is not None:
            aliases.setdefault(s.alias_of, []).append(s.name)
    all_host = [o.name for o in common]
    t = Table(title="strategies: NAME[:key=value,...]")
    t.add_column("strategy")
    t.add_column("what it does")
    t.add_column("its options")
    t.add_column("host options")
    for s in infos:
        if s.alias_of is not None:
            continue
        name = s.name + "".join(f"\n(= {a})" for a in aliases.get(s.name, []))
        left_out = [o for o in all_host if o not in s.host_options]
        host = "all" if not left_out else "all but " + ", ".join(left_out)
        t.add_row(name, s.summary, ", ".join(o.name for o in s.options) or "-", host)
    console.print(t)
    # One row per meaning: an option name that means something else to another family
    # (ddp's `bucket` of 25 MiB, zero1/zero2's byte override of their element counts) gets
    # its own row, with its own default and help.
    taken: dict[tuple[str, str, str, str], tuple[OptionInfo, list[str]]] = {}
    for s in infos:
        if s.alias_of is None:
            for o in s.options:
                taken.setdefault((o.name, o.accepts, o.default, o.help), (o, []))[1].append(s.name)
    t = Table(title="strategy options (e.g. ps:num_ps=4,placement=balanced or fsdp:prefetch=2)")
    for col in ("option", "accepts", "default", "taken by", "what it does"):
        t.add_column(col)
    for o, names in taken.values():
        ps_family = [s.name for s in infos if s.name.startswith("ps")]
        who = "every ps*" if names == ps_family else ", ".join(names)
        t.add_row(o.name, o.accepts, o.default or "-", who, _with_aliases(o))
    console.print(t)
    t = Table(title="host options, taken by every strategy unless its row says otherwise (e.g. ring:fusion=25MiB)")
    for col in ("option", "accepts", "default", "what it does"):
        t.add_column(col)
    for o in common:
        t.add_row(o.name, o.accepts, o.default or "-", _with_aliases(o))
    console.print(t)
    t = Table(title="topologies (--topology)")
    t.add_column("topology")
    t.add_column("what it is")
    t.add_column("options (default)")
    for topo in topologies:
        opts = "\n".join(
            f"{o['name']}={o['accepts']}" + (f" ({o['default']})" if o["default"] else "") for o in topo["options"]
        )
        t.add_row(topo["name"], topo["summary"], opts or "-")
    console.print(t)
