"""``tensorwire jobs``: several jobs sharing one fabric, each beside itself alone."""

from __future__ import annotations

import json
from typing import Optional

import click
from rich.table import Table

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.api import Job, _run_jobs, simulate_jobs
from tensorwire.cli import options, render
from tensorwire.cluster import Cluster
from tensorwire.failures import Failure
from tensorwire.units import format_seconds
from tensorwire.workloads import load_model


def parse_job(text: str, gpu: Optional[str]) -> Job:
    """``NAME:MODEL:WORKERS:STRATEGY`` (the strategy may carry its own options)."""
    parts = text.split(":", 3)
    if len(parts) != 4 or not all(parts):
        raise InputError("job", f"{text!r} is not NAME:MODEL:WORKERS:STRATEGY, e.g. a:resnet50:16:ring or b:llama3_8b:64:fsdp")
    name, model, workers, strategy = parts
    if not workers.isdigit() or int(workers) < 1:
        raise InputError("job", f"{text!r}: WORKERS {workers!r} must be an integer >= 1")
    return Job(name, load_model(model, gpu), int(workers), strategy)


@click.command("jobs")
@click.option("--job", "job_specs", multiple=True, required=True, metavar="NAME:MODEL:WORKERS:STRATEGY",
              help="A job on the fabric; repeat for several, e.g. --job a:resnet50:16:ring --job b:vgg16:16:zero2.")
@click.option("--workers", "-n", "hosts", type=int, default=None, help="Hosts of the fabric (default: the jobs' workers together).")
@options.bandwidth
@options.network_options
@click.option("--gpu", default=None, help="Device whose measurements (zoo) or profile (LLMs) the jobs use.")
@options.fail
@options.run_options
def jobs(
    job_specs: tuple[str, ...],
    hosts: Optional[int],
    bandwidth: Optional[float],
    latency: float,
    topology: str,
    network: str,
    overhead: float,
    placement: str,
    gpu: Optional[str],
    failures: tuple[Failure, ...],
    iterations: int,
    seed: int,
    as_json: bool,
) -> None:
    """Simulate several jobs sharing one fabric; each job's iteration time beside the same job
    alone on the same hosts.

        tensorwire jobs --job a:resnet50:16:ring --job b:vgg16:16:ring -b 25Gbps \\
            --topology leaf-spine:hosts_per_leaf=8,spines=2,uplink=25Gbps --placement spread
    """
    listed = [parse_job(s, gpu) for s in job_specs]
    total = sum(j.workers for j in listed)
    fabric_hosts = hosts if hosts is not None else total
    if fabric_hosts < total:
        raise InputError("jobs", f"the jobs need {total} workers but the fabric has {fabric_hosts} hosts")
    if bandwidth is None:
        raise click.UsageError("Missing option '--bandwidth'.")
    cluster = Cluster(fabric_hosts, bandwidth, latency, topology, network, overhead, placement=placement)
    # Pin every job's hosts (the placement's order, job after job) so that each job alone
    # runs on exactly the hosts it had together.
    order = _core.placement(topology, fabric_hosts, placement, seed % 2**64)
    pinned, start = [], 0
    for j in listed:
        pinned.append(Job(j.name, j.workload, j.workers, j.strategy, order[start:start + j.workers]))
        start += j.workers
    with render.progress(len(pinned) + 1, "simulating") as advance:
        together = simulate_jobs(pinned, cluster, iterations=iterations, seed=seed, failures=failures)
        advance()
        alone = []
        for j in pinned:
            # Alone, a job ends sooner: failures after its end are allowed (they change nothing).
            alone.append(_run_jobs([j], cluster, iterations, seed, failures, None, allow_failures_after_end=True)[0])
            advance()
    if as_json:
        click.echo(json.dumps([
            {"job": j.name, "model": j.workload.name, "workers": j.workers, "strategy": r.strategy,
             "hosts": list(j.hosts or ()), "iteration_time_s": r.iteration_time_s, "alone_iteration_time_s": a.iteration_time_s,
             "slowdown": r.iteration_time_s / a.iteration_time_s, "throughput_samples_per_s": r.throughput_samples_per_s,
             "sent_bytes_per_worker": r.sent_bytes_per_worker}
            for j, r, a in zip(pinned, together, alone)
        ], indent=1))
        return
    t = Table(title=f"{len(pinned)} jobs on {cluster.describe()}, placement {placement}")
    for column, justify in (("job", "left"), ("model", "left"), ("workers", "right"), ("strategy", "left"),
                            ("iteration", "right"), ("alone", "right"), ("slowdown", "right"), ("samples/s", "right")):
        t.add_column(column, justify=justify)  # type: ignore[arg-type]
    for j, r, a in zip(pinned, together, alone):
        t.add_row(j.name, j.workload.name, str(j.workers), r.strategy, format_seconds(r.iteration_time_s),
                  format_seconds(a.iteration_time_s), f"{r.iteration_time_s / a.iteration_time_s:.2f}x",
                  f"{r.throughput_samples_per_s:,.0f}")
    render.console.print(t)
