"""Commands: simulate, compare, models, strategies."""

from __future__ import annotations

import json

from typing import Any, Optional

import click

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.api import simulate
from tensorwire.cli import options, render
from tensorwire.cluster import Cluster
from tensorwire.failures import Failure
from tensorwire.result import Result
from tensorwire.strategy import Strategy, host_options, runs_on, split_specs, strategies
from tensorwire.stragglers import parse_stragglers
from tensorwire.trace import write_trace
from tensorwire.workload import COLLECTIVES, Workload
from tensorwire.workloads import llm, load_model, models
from tensorwire.workloads.synthetic import add_modules

DEFAULT_MODELS = ("resnet50", "vgg16", "bert_base")
DEFAULT_WORKERS = 32
DEFAULT_BANDWIDTH = "25Gbps"
#: What `compare` ranks for LLMs by default: DDP-style all-reduce against sharded data
#: parallelism, with DDP's ring as the baseline (a parameter server is not how LLMs train).
LLM_STRATEGIES = ("ring", "hierarchical", "double-tree", "zero1", "zero2", "fsdp", "hsdp")


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


def _cluster(workers: int, bandwidth: Optional[float], latency: float, topology: str, network: str, overhead: float,
             placement: str = "packed") -> Cluster:
    return Cluster(workers, bandwidth, latency, topology, network, overhead, placement=placement)


def _whatif(workload: Workload, compute_speedup: Optional[float], modules: Optional[str]) -> Workload:
    if modules is not None:
        workload = add_modules(workload, modules)
    if compute_speedup is not None:
        workload = workload.with_compute_speedup(compute_speedup)
    return workload


def _load(name: str, gpu: Optional[str], batch: Optional[int], seq_len: Optional[int], mfu: Optional[float], recompute: bool) -> Workload:
    """A built-in model; the LLM-only options are passed only when given, so that a zoo model
    refuses them by name."""
    extra: dict[str, Any] = {k: v for k, v in (("seq_len", seq_len), ("mfu", mfu)) if v is not None}
    if recompute:
        extra["recompute"] = True
    return load_model(name, gpu, batch, **extra)


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=1))


@cli.command("simulate")
@click.option("--model", "-m", help=options.model_help)
@options.workload_file
@click.option("--collective", help=f"Collective microbenchmark KIND:SIZE[xCOUNT], KIND one of {', '.join(COLLECTIVES)}; "
              "e.g. allgather:64MiBx8 (docs/collectives.md).")
@options.workers
@options.bandwidth
@options.network_options
@options.compute_options
@click.option("--strategy", "-s", required=True, help="Strategy spec NAME[:key=value,...]; see `tensorwire strategies`.")
@options.whatif_options
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False), help="Write a Chrome/Perfetto trace of the last iteration.")
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
    placement: str,
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
    spec = Strategy(strategy)
    if model is not None:
        workload = _load(model, gpu, batch, seq_len, mfu, recompute)
    elif workload_file is not None:
        workload = Workload.from_file(workload_file, workload_format)
    else:
        workload = Workload.collective(collective or "")
    workload = _whatif(workload, compute_speedup, add_modules)
    variability = parse_stragglers(stragglers, workers)
    cluster = _cluster(workers, bandwidth, latency, topology, network, overhead, placement)
    with render.run_progress() as progress:
        result = simulate(workload, cluster, spec, iterations=iterations, seed=seed, timeline=trace_file is not None,
                          max_flows=max_flows, progress=progress, failures=failures, **variability)
        healthy = None if not failures else simulate(
            workload, cluster, spec, iterations=iterations, seed=seed, max_flows=max_flows, progress=progress, **variability)
    if trace_file is not None:
        write_trace(trace_file, result)
    if as_json:
        out = result.to_dict()
        if healthy is not None:
            out["without_failures"] = {"iteration_time_s": healthy.iteration_time_s, "scaling_factor": healthy.scaling_factor}
        _emit_json(out)
    else:
        render.result(result, workload, healthy)


@cli.command("compare")
@click.option("--model", "-m", "model_names", multiple=True, help=options.model_help + " Repeat for several.")
@options.workers
@options.bandwidth
@click.option("--strategies", "strategy_list", default=None, help="Comma-separated specs (default: every built-in strategy).")
@options.network_options
@options.compute_options
@options.whatif_options
@options.run_options
def compare_cmd(
    model_names: tuple[str, ...],
    workers: Optional[int],
    bandwidth: Optional[float],
    strategy_list: Optional[str],
    latency: float,
    topology: str,
    network: str,
    overhead: float,
    placement: str,
    gpu: Optional[str],
    batch: Optional[int],
    seq_len: Optional[int],
    mfu: Optional[float],
    recompute: bool,
    compute_speedup: Optional[float],
    add_modules: Optional[str],
    stragglers: str,
    iterations: int,
    seed: int,
    as_json: bool,
) -> None:
    """Rank strategies by iteration time, with the speedup of each over a baseline: `ps`, or
    for LLMs DDP's `ring`.

    With no arguments: ResNet-50, VGG-16 and BERT-base on 32 workers at 25 Gbps. LLMs
    (`--model llama3_8b`) are compared by default under all-reduce strategies and sharded
    data parallelism (zero1, zero2, fsdp, hsdp).
    """
    names = list(model_names) or list(DEFAULT_MODELS)
    n = workers or DEFAULT_WORKERS
    only_llms = all(name in llm.names() for name in names)
    # By default every built-in strategy that runs on this cluster (multitree needs one machine).
    candidates = LLM_STRATEGIES if only_llms else tuple(s.name for s in strategies())
    specs = (
        split_specs(strategy_list)
        if strategy_list
        else [s for s in candidates if runs_on(s, n, topology, network)]
    )
    checked = [Strategy(s) for s in specs]
    if not checked:
        raise InputError("strategies", "give at least one strategy spec")
    base_name = "ring" if only_llms else "ps"
    baseline = next((s for s in checked if s.name == base_name), None)
    if baseline is None:
        baseline = Strategy(base_name)
        checked.insert(0, baseline)
    cluster = _cluster(
        n,
        bandwidth if bandwidth is not None else _default_bandwidth(topology),
        latency,
        topology,
        network,
        overhead,
        placement,
    )
    workloads = [_whatif(_load(n, gpu, batch, seq_len, mfu, recompute), compute_speedup, add_modules) for n in names]
    variability = parse_stragglers(stragglers, cluster.workers)
    results: dict[str, list[Result]] = {}
    with render.progress(len(workloads) * len(checked), "simulating") as advance:
        for w in workloads:
            results[w.name] = []
            for s in checked:
                results[w.name].append(simulate(w, cluster, s, iterations=iterations, seed=seed, **variability))
                advance()
    if as_json:
        out = []
        for name, rs in results.items():
            base = next(r for r in rs if r.strategy == baseline.spec)
            for r in sorted(rs, key=lambda r: r.iteration_time_s):
                d = r.to_dict()
                d.pop("link_utilization")
                d.pop("timeline")
                d["baseline"] = baseline.spec
                d["speedup_over_baseline"] = base.iteration_time_s / r.iteration_time_s
                if baseline.name == "ps":
                    d["speedup_over_ps"] = d["speedup_over_baseline"]
                out.append(d)
        _emit_json(out)
    else:
        render.comparison(results, baseline.spec, cluster)


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
    """List the built-in strategies and their options."""
    infos = strategies()
    if as_json:
        common = [o.__dict__ for o in host_options()]
        _emit_json(
            [
                {"name": s.name, "summary": s.summary, "options": [o.__dict__ for o in s.options] + common}
                for s in infos
            ]
        )
    else:
        render.strategies(infos, host_options(), _core.topologies())




def _register() -> None:
    """Commands that live beside the parts they drive."""
    from tensorwire.cli.jobs import jobs
    from tensorwire.gputopo_cli import topology
    from tensorwire.report.cli import report
    from tensorwire.sweep.cli import sweep
    from tensorwire.testbed.cli import validate
    from tensorwire.torch.cli import measure, profile
    from tensorwire.torch.partial.cli import bench
    from tensorwire.workloads.cli import import_trace

    for command in (topology, sweep, report, validate, profile, measure, bench, import_trace, jobs):
        cli.add_command(command)


_register()
