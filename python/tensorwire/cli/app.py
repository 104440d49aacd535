"""Commands: simulate, compare, models, strategies."""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import click
from click.core import ParameterSource

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.api import check_simulate, simulate
from tensorwire.calibrate.cluster_file import cluster_option, given_files
from tensorwire.chrome_trace import DEFAULT_TRACE_WORKERS, MAX_SPANS, shown_in_trace, write_trace
from tensorwire.cli import options, render
from tensorwire.cli.terminal import note
from tensorwire.cluster import Cluster
from tensorwire.failures import Failure
from tensorwire.io import check_output
from tensorwire.result import Result, folded_shown, ranked, ranks_in_words, simulated_workers, speedup
from tensorwire.stragglers import input_files as stragglers_files
from tensorwire.stragglers import parse_stragglers, stragglers_note
from tensorwire.strategy import Strategy, baseline_spec, check, gpu_fabric, host_options, split_specs, strategies
from tensorwire.sweep.grid import FILE_GIVES_ITERATION, refuse_model_options
from tensorwire.units import format_seconds
from tensorwire.workload import COLLECTIVES, Workload, bus_factor
from tensorwire.workloads import device_on, hardware, llm, load_model, models
from tensorwire.workloads.formats import load_workload, name_apart
from tensorwire.workloads.synthetic import add_modules

DEFAULT_MODELS = ("resnet50", "vgg16", "bert_base")
DEFAULT_WORKERS = 32
DEFAULT_BANDWIDTH = "25Gbps"
#: What `compare` ranks for LLMs by default: PyTorch DDP against sharded data parallelism,
#: with ``ddp`` (buckets of 25 MiB, the first 1 MiB, all-reduced by NCCL on one
#: communicator) as the baseline (a parameter server is not how LLMs train).
LLM_STRATEGIES = ("ddp", "nccl", "hierarchical", "double-tree", "zero1", "zero2", "fsdp", "zero3", "hsdp")
#: Strategies that time collectives with NCCL's model: the defaults on GPU fabrics.
GPU_STRATEGIES = ("nccl", "ddp")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_core.__version__, prog_name="tensorwire")
def cli() -> None:
    """Which way of synchronising gradients is fastest on my network, by how much, and why."""


def _default_bandwidth(topology: str) -> Optional[float]:
    """``--bandwidth`` when not given: the fabric's own (a rail's NICs: None lets the core
    take it), else DEFAULT_BANDWIDTH."""
    try:
        _core.host_rate(topology)
        return None
    except InputError:
        return _core.parse_rate("bandwidth", DEFAULT_BANDWIDTH)


def _cluster(
    workers: int,
    bandwidth: Optional[float],
    latency: float,
    topology: str,
    network: str,
    overhead: float,
    rank_placement: str = "packed",
) -> Cluster:
    return Cluster(workers, bandwidth, latency, topology, network, overhead, rank_placement=rank_placement)


def _whatif(workload: Workload, compute_speedup: Optional[float], modules: Optional[str]) -> Workload:
    if modules is not None:
        workload = add_modules(workload, modules)
    if compute_speedup is not None:
        workload = workload.with_compute_speedup(compute_speedup)
    return workload


def _load(
    name: str,
    gpu: Optional[str],
    batch: Optional[int],
    seq_len: Optional[int],
    mfu: Optional[float],
    recompute: bool,
    topology: str,
) -> Workload:
    """A built-in model; the LLM-only options are passed only when given, so that a zoo model
    refuses them by name. An LLM without ``--gpu`` on a rail computes on its node's GPU
    (``rail:node=dgx-a100``: A100 80GB; it computed on the default H100)."""
    gpu = device_on(name, gpu, topology)
    extra: dict[str, Any] = {k: v for k, v in (("seq_len", seq_len), ("mfu", mfu)) if v is not None}
    if recompute:
        extra["recompute"] = True
    return load_model(name, gpu, batch, **extra)


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=1))


@cli.command("simulate")
@cluster_option()
@click.option("--model", "-m", help=options.model_help)
@options.workload_file
@click.option(
    "--collective",
    help=f"Collective microbenchmark KIND:SIZE[xCOUNT], KIND one of {', '.join(COLLECTIVES)}; "
    "e.g. allgather:64MiBx8 (docs/collectives.md).",
)
@options.workers
@options.bandwidth
@options.network_options
@options.compute_options
@click.option(
    "--strategy", "-s", required=True, help="Strategy spec NAME[:key=value,...]; see `tensorwire strategies`."
)
@options.whatif_options
@click.option(
    "--trace",
    "trace_file",
    type=click.Path(dir_okay=False),
    help="Write a Chrome/Perfetto trace of one steady-state iteration.",
)
@click.option(
    "--trace-workers",
    type=click.IntRange(min=1),
    default=DEFAULT_TRACE_WORKERS,
    show_default=True,
    help="Workers whose compute and messages the trace shows (0..N-1), with their hosts' links, "
    "at most 150,000 spans (the earliest), so that it stays in the tens of MB at scale.",
)
@options.max_flows
@options.fail
@options.run_options
def simulate_cmd(
    model: Optional[str],
    workload_file: Optional[str],
    workload_format: str,
    collective: Optional[str],
    workers: Optional[int],
    bandwidth: Optional[float],
    latency: float,
    topology: str,
    network: str,
    overhead: float,
    rank_placement: str,
    gpu: Optional[str],
    batch: Optional[int],
    seq_len: Optional[int],
    mfu: Optional[float],
    recompute: bool,
    strategy: str,
    compute_speedup: Optional[float],
    add_modules: Optional[str],
    stragglers: str,
    trace_file: Optional[str],
    trace_workers: int,
    max_flows: int,
    failures: tuple[Failure, ...],
    iterations: int,
    seed: int,
    as_json: bool,
) -> None:
    """Simulate one workload under one strategy and report the steady state."""
    sources = [x for x in (model, workload_file, collective) if x is not None]
    if len(sources) != 1:
        raise click.UsageError("give exactly one of --model, --workload or --collective")
    if workers is None:
        raise click.UsageError("Missing option '--workers'.")
    ctx = click.get_current_context()
    if trace_file is None and ctx.get_parameter_source("trace_workers") is ParameterSource.COMMANDLINE:
        raise InputError("trace-workers", "needs --trace FILE (it picks the workers the trace shows)")
    spec = Strategy(strategy)
    options.check_latency_seen(ctx, [(spec, topology)])
    options.warn_nic_past_its_path([(spec, topology)], bandwidth)
    if model is None:
        _refuse_model_options(ctx, "--collective" if collective is not None else "--workload", collective is not None)
    # The cluster first: a missing rate is one line before a workload of a million layers is
    # built (`--collective allreduce:1Bx1048576` took 7 s to say -b was missing).
    cluster = _cluster(workers, bandwidth, latency, topology, network, overhead, rank_placement=rank_placement)
    variability = parse_stragglers(stragglers, workers)
    if model is not None:
        workload = _load(model, gpu, batch, seq_len, mfu, recompute, topology)
    elif workload_file is not None:
        workload = load_workload(workload_file, workload_format)
    else:
        workload = Workload.collective(collective or "")
    workload = _whatif(workload, compute_speedup, add_modules)
    if trace_file is not None:
        inputs = {
            "workload files": [workload_file] if workload_file else [],
            "cluster files": given_files(ctx),
            "stragglers files": stragglers_files(stragglers),
        }
        check_output(trace_file, "trace", inputs)
    with render.run_progress() as progress:
        result = simulate(
            workload,
            cluster,
            spec,
            iterations=iterations,
            seed=seed,
            timeline=trace_file is not None,
            max_flows=max_flows,
            progress=progress,
            failures=failures,
            **variability,
        )
        healthy = (
            None
            if not failures
            else simulate(
                workload,
                cluster,
                spec,
                iterations=iterations,
                seed=seed,
                max_flows=max_flows,
                progress=progress,
                **variability,
            )
        )
    extra = (
        collective_metrics(workload, result)
        if collective is not None
        else _llm_metrics(workload, seq_len, recompute, compute_speedup, topology, gpu, result)
    )
    if as_json:
        out = result.to_dict()
        # The timeline goes to --trace's file (cut to --trace-workers), never to stdout: a
        # traced 32-worker run printed 300 MB of spans.
        out.pop("timeline")
        out["bandwidth_bytes_per_s"] = result.bandwidth
        out.update(extra)
        if healthy is not None:
            without = healthy.to_dict()
            out["without_failures"] = {k: without[k] for k in ("iteration_time_s", "scaling_factor")}
        _emit_json(out)
    else:
        render.result(result, workload, healthy, extra, conditions=stragglers_note(stragglers))
    if trace_file is not None:
        # After the result is shown: a write that fails (a full disk) loses only the trace.
        size, events, cut = write_trace(trace_file, result, trace_workers)
        click.echo(
            f"tensorwire: wrote {trace_file}: {size / 1e6:,.1f} MB, {events:,} events ({_traced(result, trace_workers)})",
            err=True,
        )
        if cut is not None:
            note(
                f"the trace stops at {cut['spans_shown']:,} spans, "
                f"{format_seconds(cut['shown_until_s'])} into {_trace_window(result, cut['iteration_s'])}; "
                f"{cut['spans_left_out']:,} later spans are left out ({_cut_advice(result, trace_workers)})"
            )


def _trace_window(result: Result, window_s: float) -> str:
    """The period a trace of ``result`` shows (``window_s`` long), in words that hold: one
    iteration, or under a partial collective, where the iteration time is the mean of the
    workers' paces, the period between completions of every worker (it said "the 192 ms
    iteration" of a run whose iteration time was 150.9 ms).

    >>> from types import SimpleNamespace as S
    >>> _trace_window(S(active_processes=None, iteration_time_s=0.1417), 0.1417)
    'the 141.7 ms iteration'
    >>> _trace_window(S(active_processes=9.5, iteration_time_s=0.1509), 0.192)
    "the 192 ms period between completions of every worker (the iteration time, 150.9 ms, is the mean of the workers' paces)"
    """
    if result.active_processes is None:
        return f"the {format_seconds(window_s)} iteration"
    return (
        f"the {format_seconds(window_s)} period between completions of every worker "
        f"(the iteration time, {format_seconds(result.iteration_time_s)}, is the mean of the workers' paces)"
    )


def _traced(result: Result, limit: int) -> str:
    """Which workers a trace of ``result`` shows (at most ``limit``), and how to see more
    only where a larger ``--trace-workers`` would: a folded run recorded the messages of
    only the ranks it simulated (``simulated_ranks``), which stand for the others, so past
    the last of those it shows no more (it said "--trace-workers N for more" of a run that
    simulated worker 0 alone). With stragglers a folded run still computes every worker, so
    its trace shows more workers' compute than messages (it said "simulated 16" of a run
    whose ``simulated_ranks`` was 1).

    >>> from types import SimpleNamespace as S
    >>> spans = [{"worker": w, "kind": k} for w in (0, 1, 2, 3) for k in ("compute", "flow")]
    >>> _traced(S(workers=16, folded=False, timeline=spans), 8)
    'workers 0-7 of 16; --trace-workers N for more'
    >>> _traced(S(workers=16, folded=False, timeline=spans), 1)
    'worker 0 of 16; --trace-workers N for more'
    >>> _traced(S(workers=16, folded=True, simulated_ranks=1, timeline=spans[:2]), 1)
    'worker 0 of 16: the run folded ranks that behave alike and simulated only this one'
    >>> _traced(S(workers=16, folded=True, simulated_ranks=4, timeline=spans), 8)
    'workers 0-3 of 16: the run folded ranks that behave alike and simulated only these'
    >>> _traced(S(workers=16, folded=True, simulated_ranks=4, timeline=spans), 2)
    'workers 0-1 of 16: the run folded ranks that behave alike and simulated 4 (--trace-workers 4 shows them all)'
    >>> stragglers = [{"worker": w, "kind": "compute"} for w in range(16)] + [{"worker": 0, "kind": "flow"}]
    >>> _traced(S(workers=16, folded=True, simulated_ranks=1, timeline=stragglers), 8)
    'compute of workers 0-7 of 16 (--trace-workers N for more); messages of worker 0 of 16: the run folded ranks that behave alike and simulated only this one'
    """
    present = simulated_workers(result.timeline)
    if not present:
        return "no worker spans: nothing ran"
    if not result.folded:
        return _first_workers(result.workers, limit, "; --trace-workers N for more")
    messages = simulated_workers(s for s in result.timeline if s["kind"] != "compute") or present
    listed = [w for w in messages if w < limit]
    simulated = result.simulated_ranks or len(messages)
    text = folded_shown(listed, simulated, result.workers)
    if len(listed) < simulated:
        text = f"{text} (--trace-workers {messages[-1] + 1} shows them all)"
    if len(present) == len(messages):
        return text
    # Every worker's compute, the messages of the ranks simulated (stragglers).
    computing = _first_workers(len(present), limit, " (--trace-workers N for more)", result.workers)
    return f"compute of {computing}; messages of {text}"


def _first_workers(count: int, limit: int, more: str, workers: Optional[int] = None) -> str:
    """Workers 0 to ``limit`` - 1 of ``count`` (of ``workers`` in all; default ``count``),
    ``more`` added where ``limit`` leaves some of the ``count`` out.

    >>> _first_workers(16, 8, "; more"), _first_workers(4, 8, "; more")
    ('workers 0-7 of 16; more', 'workers 0-3 of 4')
    """
    shown = min(limit, count)
    return f"{ranks_in_words(range(shown))} of {workers or count}{more if shown < count else ''}"


def _cut_advice(result: Result, trace_workers: int) -> str:
    """What shows the whole iteration of a trace cut at :data:`MAX_SPANS`, in words that
    hold: it said "fewer --trace-workers shows all of it" at ``--trace-workers 1``, and of
    a folded run at 32 whose trace was cut at every count (worker 0's messages reach the
    links of its peers' hosts, so fewer workers were not always fewer spans). The most
    workers, fewer than ``trace_workers``, whose spans fit, counted as the trace counts
    them; else, one worker being too many already, fewer messages: a run's messages grow
    with its workers, and ``partition=`` (where given) splits each tensor into messages of
    at most that size. The trace is of one iteration: ``--iterations`` changes nothing."""
    fits = _most_traced_whole(result, trace_workers - 1)
    if fits is not None:
        return f"--trace-workers {fits} shows all of it"
    levers = "fewer workers (-n)"
    if any(key == "partition" for key, _ in Strategy(result.strategy).core.options):
        levers = f"a larger partition= or {levers}"
    one = "one worker alone" if trace_workers == 1 else "even one worker (--trace-workers 1)"
    return f"{one} has more spans than that: {levers} gives fewer"


def _most_traced_whole(result: Result, most: int) -> Optional[int]:
    """The most workers, at most ``most``, whose trace has no more than :data:`MAX_SPANS`
    spans; None when even one worker's has more. One worker first (a pass over millions of
    spans takes a second or two, and a trace that large is usually too large at one worker
    too); then, since the count only grows with the workers, a bisection, each step over
    the spans the last too-large count kept."""
    high = min(most, result.workers)
    if high < 1 or sum(shown_in_trace(s, 1) for s in result.timeline) > MAX_SPANS:
        return None
    spans: Sequence[dict[str, Any]] = result.timeline
    low = 1
    while low < high:
        mid = (low + high + 1) // 2
        shown = [s for s in spans if shown_in_trace(s, mid)]
        if len(shown) <= MAX_SPANS:
            low = mid
        else:
            high, spans = mid - 1, shown
    return low


#: ``simulate``'s options that build a built-in model's iteration, by parameter name and flag;
#: the what-if options apply to workload files too, not to a collective microbenchmark.
_MODEL_OPTIONS = (("gpu", "--gpu"), ("batch", "--batch"), ("seq_len", "--seq-len"), ("mfu", "--mfu"),
                  ("recompute", "--recompute"))  # fmt: skip
_WHATIF_OPTIONS = (("compute_speedup", "--compute-speedup"), ("add_modules", "--add-modules"))


def _refuse_model_options(ctx: click.Context, source: str, collective: bool) -> None:
    """Refuses a model option given beside ``--workload`` or ``--collective`` (and a what-if
    beside ``--collective``), which would be ignored: ``InputError`` naming it, in the words
    ``sweep`` and ``report`` use for theirs (:func:`tensorwire.sweep.grid.refuse_model_options`)."""
    candidates = _MODEL_OPTIONS + (_WHATIF_OPTIONS if collective else ())
    given = [flag for name, flag in candidates if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE]
    why = "one collective's time has no compute" if collective else FILE_GIVES_ITERATION
    refuse_model_options(given, source, why)


def _defaults_that_run(candidates: Sequence[str], n: int, topology: str, network: str) -> list[str]:
    """The built-in strategies of a comparison that run on this cluster; a note on stderr
    names the others, those refused for the same reason together (the refusal's words
    without the strategy's own name), so that a strategy missing from the table is never a
    silent surprise."""
    kept: list[str] = []
    refused: dict[tuple[str, str], list[str]] = {}
    for name in candidates:
        try:
            check(name, n, topology, network)
        except InputError as e:
            field, message = e.args if len(e.args) == 2 else ("input", str(e))
            reason = str(message).removeprefix(f"{name} ")
            refused.setdefault((str(field), reason), []).append(name)
            continue
        kept.append(name)
    for (field, reason), names in refused.items():
        note(f"not compared: {', '.join(names)} ({field}: {reason})")
    return kept


@dataclass(frozen=True)
class Refused:
    """A strategy of a comparison that was refused up front (over the flow budget)."""

    model: str
    strategy: str
    reason: str


def _run_or_refuse(w: Workload, cluster: Cluster, s: Strategy, progress: Any, **kwargs: Any) -> Union[Result, Refused]:
    """One simulation of a comparison; a strategy refused for the flow budget becomes a
    :class:`Refused` row instead of ending the whole comparison."""
    try:
        return simulate(w, cluster, s, progress=progress, **kwargs)
    except InputError as e:
        reason = _over_flow_budget(e)
        if reason is None:
            raise
        return Refused(w.name, s.spec, reason)


def _over_flow_budget(e: InputError) -> Optional[str]:
    """The reason of a refusal for the flow budget (``max_flows``), which a comparison lists
    as a refused row; None for any other error, which ends the command."""
    field, message = e.args if len(e.args) == 2 else ("input", str(e))
    return str(message) if field == "max_flows" else None


def _baseline(rows: list[Union[Result, Refused]], preferred: str) -> tuple[Optional[Result], str]:
    """The baseline of one model's rows: the row of the strategy spec ``preferred`` (plain
    ``ps`` or ``ddp``, not ``ps:num_ps=8``) if it ran, else the first row that ran (the order
    given); and a note when it is not the preferred one."""
    ran = [r for r in rows if isinstance(r, Result)]
    base = next((r for r in ran if r.strategy == preferred), None)
    if base is not None:
        return base, ""
    if not ran:
        return None, "every strategy was refused"
    refused = next((r for r in rows if isinstance(r, Refused) and r.strategy == preferred), None)
    why = f"{refused.strategy} was refused" if refused is not None else f"{preferred} is not in the list"
    return ran[0], f"baseline {ran[0].strategy}: {why}"


def collective_metrics(workload: Workload, r: Result) -> dict[str, Any]:
    """What a collective microbenchmark reports, with nccl-tests' definitions: the time of one
    collective (the iteration runs COUNT of them back to back), algorithm bandwidth = buffer
    bytes / time per collective, bus bandwidth = algbw x the collective's factor
    (:func:`tensorwire.workload.bus_factor`); bandwidths in bytes/s."""
    count = len(workload.tensors)
    size = workload.tensors[0].bytes
    per = r.iteration_time_s / count
    algbw = size / per if per > 0 else float("inf")
    factor = bus_factor(workload.collective_kind, r.workers)
    return {
        "collective": workload.collective_kind,
        "collective_bytes": size,
        "collectives_per_iteration": count,
        "time_per_collective_s": per,
        "algbw_bytes_per_s": algbw,
        "busbw_bytes_per_s": algbw * factor,
        "busbw_factor": factor,
    }


def _llm_metrics(
    workload: Workload,
    seq_len: Optional[int],
    recompute: bool,
    compute_speedup: Optional[float],
    topology: str,
    gpu: Optional[str],
    r: Result,
) -> dict[str, float]:
    """tokens/s of the whole job, achieved model TFLOP/s per GPU and memory per GPU (model
    states and activations), for a built-in LLM (else empty). Model FLOPs per iteration and
    worker = 3 x forward FLOPs (forward plus a backward of twice the forward, without
    recomputation, as MFU counts them) x micro-batch. Model states: ZeRO's count under the strategy
    (``_core.Strategy.model_state_bytes``: weights, gradients and mixed-precision Adam's 12
    bytes per parameter, sharded as the strategy shards them) plus the parameters it holds
    gathered whole at its peak (``_core.Strategy.gathered_parameter_bytes``: the units or
    modules FSDP, HSDP and ZeRO-3 all-gather to compute, all of them with
    ``reshard_after_forward=false``), beside the GPU's memory (``gpu``: the device the
    workload computes on). Activations: what one micro-batch (``--batch`` sequences of
    ``--seq-len`` tokens) holds at its peak, in the loss's backward: what the forward saved
    and the logits' fp32 gradient (:func:`tensorwire.workloads.llm.activation_bytes`;
    ``--recompute``: each block's input, then the larger of the loss's backward and one
    block recomputed), the same under every data-parallel strategy: none shards them. ``memory_bytes_per_gpu`` is states plus activations, what is judged against the
    GPU's memory. With ``--compute-speedup k`` a worker computes as k GPUs (docs/llm.md: one
    replica per node, compute divided among its GPUs), so a GPU's share of the FLOP/s, the
    states and the activations is a k-th of the worker's, as tensor parallelism with
    sequence parallelism divides both (Korthikanti et al. 2022: 34 s b h / t per block): it
    reported 2,791.9 TFLOP/s per H100 (peak 989.4) at k = 8."""
    if workload.name not in llm.names() or r.iteration_time_s <= 0:
        return {}
    per_gpu = 1.0 / (compute_speedup or 1.0)
    tokens = llm.tokens_per_sample(workload.name, seq_len)
    flops = 3 * llm.forward_flops(workload.name, tokens) * workload.batch_size
    params = workload.total_bytes / workload.dtype_bytes
    strategy, fabric = Strategy(r.strategy).core, _core.Topology(topology)
    gathered = strategy.gathered_parameter_bytes(workload.core, fabric, r.workers)
    states = strategy.model_state_bytes(params, workload.dtype_bytes, fabric, r.workers) + gathered
    activations = llm.activation_bytes(workload.name, tokens, workload.batch_size, recompute)
    device = hardware.gpu(device_on(workload.name, gpu, topology) or llm.DEFAULT_GPU)
    return {
        "tokens_per_s": r.throughput_samples_per_s * tokens,
        "model_tflops_per_gpu": flops / r.iteration_time_s / 1e12 * per_gpu,
        "model_state_bytes_per_gpu": states * per_gpu,
        "gathered_parameter_bytes_per_gpu": gathered * per_gpu,
        "activation_bytes_per_gpu": activations * per_gpu,
        "memory_bytes_per_gpu": (states + activations) * per_gpu,
        "gpu_memory_bytes": float(device.memory_bytes),
    }


@cli.command("compare")
@cluster_option()
@click.option(
    "--model",
    "-m",
    "model_names",
    multiple=True,
    help=options.model_help + " Repeat, or list with commas, for several.",
)
@options.workload_file
@options.workers
@options.bandwidth
@click.option(
    "--strategies",
    "-s",
    "strategy_list",
    default=None,
    help="Comma-separated specs (default: every built-in strategy, each once; for LLMs "
    "all-reduce and sharded ones; nccl and ddp on GPU fabrics). The speedup column is over ps (for LLMs "
    "and on rail/nodes fabrics ddp, PyTorch DDP), or the first listed.",
)
@options.network_options
@options.compute_options
@options.whatif_options
@options.max_flows
@options.run_options
def compare_cmd(
    model_names: tuple[str, ...],
    workload_file: Optional[str],
    workload_format: str,
    workers: Optional[int],
    bandwidth: Optional[float],
    strategy_list: Optional[str],
    latency: float,
    topology: str,
    network: str,
    overhead: float,
    rank_placement: str,
    gpu: Optional[str],
    batch: Optional[int],
    seq_len: Optional[int],
    mfu: Optional[float],
    recompute: bool,
    compute_speedup: Optional[float],
    add_modules: Optional[str],
    stragglers: str,
    max_flows: int,
    iterations: int,
    seed: int,
    as_json: bool,
) -> None:
    """Rank strategies by iteration time, with the speedup of each over a baseline: plain `ps`,
    or for LLMs and on GPU fabrics (rail, nodes) `ddp` (PyTorch DDP's buckets on NCCL); when
    that is not in --strategies, the first one listed. By default every built-in strategy that
    runs on the cluster (nccl and ddp on GPU fabrics only).

    With no arguments: ResNet-50, VGG-16 and BERT-base on 32 workers at 25 Gbps. LLMs
    (`--model llama3_8b`) are compared by default under all-reduce strategies and sharded
    data parallelism (zero1, zero2, zero3, fsdp, hsdp). `--workload FILE` ranks them for your own
    workload or trace. A strategy over the flow budget (--max-flows) is listed as refused,
    not run; when the baseline is refused, the next strategy that ran is the baseline.
    """
    # `-m resnet50,vgg16` as in sweep and report (no model name has a comma).
    listed = [n.strip() for m in model_names for n in m.split(",") if n.strip()]
    names = list(dict.fromkeys(listed)) or ([] if workload_file is not None else list(DEFAULT_MODELS))
    if not names:
        # The workload file alone: no model is loaded, so --gpu/--batch/... would be ignored
        # (even a device that does not exist). Beside --model they apply to its rows.
        _refuse_model_options(click.get_current_context(), "--workload", collective=False)
    n = workers or DEFAULT_WORKERS
    only_llms = bool(names) and workload_file is None and all(name in llm.names() for name in names)
    # By default every built-in strategy that runs on this cluster (multitree needs one
    # machine), each once: an alias would be a second row with the same numbers.
    on_gpus = gpu_fabric(topology)
    candidates = (
        LLM_STRATEGIES
        if only_llms
        else tuple(s.name for s in strategies() if s.alias_of is None and (on_gpus or s.name not in GPU_STRATEGIES))
    )
    specs = (
        split_specs(strategy_list)
        if strategy_list is not None
        else _defaults_that_run(candidates, n, topology, network)
    )
    checked = [Strategy(s) for s in specs]
    if not checked:
        raise InputError("strategies", "give at least one strategy spec")
    options.check_latency_seen(click.get_current_context(), [(s, topology) for s in checked])
    options.warn_nic_past_its_path([(s, topology) for s in checked], bandwidth)
    preferred = baseline_spec([s.spec for s in checked], llms=only_llms, topology=topology)
    cluster = _cluster(
        n,
        bandwidth if bandwidth is not None else _default_bandwidth(topology),
        latency,
        topology,
        network,
        overhead,
        rank_placement,
    )
    loaded = [_load(m, gpu, batch, seq_len, mfu, recompute, topology) for m in names]
    if workload_file is not None:
        w = load_workload(workload_file, workload_format)
        loaded.append(dataclasses.replace(w, name=name_apart(w.name, names, workload_file)))
    workloads = [_whatif(w, compute_speedup, add_modules) for w in loaded]
    variability = parse_stragglers(stragglers, cluster.workers)
    # Every combination checked before any runs: a strategy the fabric refuses (pat with 8 GPUs
    # per node, hsdp:shard_group=3 on 64) is one line up front, not after the others ran. Over
    # the flow budget is not an error here: such a strategy is listed as refused.
    for w in workloads:
        for s in checked:
            try:
                check_simulate(w, cluster, s, iterations=iterations, seed=seed, max_flows=max_flows, **variability)
            except InputError as e:
                if _over_flow_budget(e) is None:
                    raise
    results: dict[str, list[Union[Result, Refused]]] = {}
    with render.progress(len(workloads) * len(checked), "simulating") as advance, render.run_progress() as running:
        for w in workloads:
            results[w.name] = []
            for s in checked:
                row = _run_or_refuse(
                    w, cluster, s, running, iterations=iterations, seed=seed, max_flows=max_flows, **variability
                )
                results[w.name].append(row)
                advance(
                    f"{w.name} {s.spec}: "
                    + (f"refused ({row.reason})" if isinstance(row, Refused) else format_seconds(row.iteration_time_s))
                )
    by_name = {w.name: w for w in workloads}
    aliases = {s.name: s.alias_of for s in strategies() if s.alias_of is not None}
    if as_json:
        out = []
        for name, rows in results.items():
            base, note = _baseline(rows, preferred)
            for r in ranked(r for r in rows if isinstance(r, Result)):
                d = r.to_dict()
                d.pop("link_utilization")
                d.pop("timeline")
                d["bandwidth_bytes_per_s"] = r.bandwidth
                d.update(_llm_metrics(by_name[name], seq_len, recompute, compute_speedup, topology, gpu, r))
                d["baseline"] = base.strategy if base is not None else None
                if note:
                    d["baseline_note"] = note
                d["speedup_over_baseline"] = speedup(vars(base), vars(r)) if base is not None else None
                if base is not None and base.strategy == "ps":
                    d["speedup_over_ps"] = d["speedup_over_baseline"]
                out.append(d)
            for x in rows:
                if isinstance(x, Refused):
                    out.append({"model": x.model, "strategy": x.strategy, "refused": x.reason})
        _emit_json(out)
    else:
        for name, rows in results.items():
            base, note = _baseline(rows, preferred)
            metrics = functools.partial(_llm_metrics, by_name[name], seq_len, recompute, compute_speedup, topology, gpu)
            both = "; ".join(n for n in (note, stragglers_note(stragglers)) if n)
            render.comparison(name, rows, base, both, cluster, aliases, metrics)
    if not any(isinstance(r, Result) for rows in results.values() for r in rows):
        # Nothing was compared: the refusals above say why; the run is an error, as a
        # simulate over the budget is.
        raise InputError(
            "max_flows", "every strategy was refused (see the reasons above); raise --max-flows or give fewer workers"
        )


@cli.command("models")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def models_cmd(as_json: bool) -> None:
    """List the built-in models (measured zoo and LLMs) with their sizes and compute times."""
    infos = models()
    if as_json:
        _emit_json([render.model_dict(m) for m in infos])
    else:
        render.models(infos)


@cli.command("strategies")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def strategies_cmd(as_json: bool) -> None:
    """List the built-in strategies and the options each takes (an alias on its target's row)."""
    infos = strategies()
    if as_json:
        host = host_options()
        _emit_json(
            [
                {
                    "name": s.name,
                    "summary": s.summary,
                    "alias_of": s.alias_of,
                    "options": [o.described() for o in s.options]
                    + [o.described() for o in host if o.name in s.host_options],
                }
                for s in infos
            ]
        )
    else:
        render.strategies(infos, host_options(), _core.topologies())


def _register() -> None:
    """Commands that live beside the parts they drive."""
    from tensorwire.calibrate.cli import calibrate
    from tensorwire.cli.jobs import jobs
    from tensorwire.gputopo.cli import topology
    from tensorwire.report.cli import report
    from tensorwire.sweep.cli import sweep
    from tensorwire.testbed.cli import validate
    from tensorwire.torch.cli import measure, profile
    from tensorwire.torch.partial.cli import bench
    from tensorwire.workloads.cli import import_trace

    for command in (topology, sweep, report, validate, profile, measure, bench, import_trace, jobs, calibrate):
        cli.add_command(command)


_register()
