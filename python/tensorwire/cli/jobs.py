"""``tensorwire jobs``: several jobs sharing one fabric, each beside itself alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import click
from rich.table import Table

from tensorwire import _core
from tensorwire._core import BACKGROUND_FACTOR, InputError
from tensorwire.api import Job, _job_named, _run_jobs, job_name_problem, simulate_jobs
from tensorwire.calibrate.cluster_file import cluster_option
from tensorwire.cli import options, render
from tensorwire.cli.terminal import note
from tensorwire.cluster import Cluster
from tensorwire.failures import Failure
from tensorwire.io import clip
from tensorwire.result import Result
from tensorwire.strategy import Strategy, latency_seen
from tensorwire.units import counted, format_count, format_seconds
from tensorwire.workload import Workload
from tensorwire.workloads import device_on, load_model, model_names
from tensorwire.workloads.formats import load_workload

#: The most hosts one --place may give a job (the core's placement is checked for budget
#: by the core; this only keeps a range such as 0-1000000000 from filling memory here).
MAX_PLACED = 10_000_000


def parse_job(
    text: str,
    gpu: Optional[str],
    topology: Optional[str] = None,
    index: int = 0,
    loaded: Optional[dict[str, Workload]] = None,
) -> Job:
    """``NAME:MODEL:WORKERS:STRATEGY`` (the strategy may carry its own options); MODEL is a
    built-in model or an existing workload file (:func:`tensorwire.workloads.formats.load_workload`,
    its format detected); an LLM without ``gpu`` computes on the rail's node GPU
    (:func:`tensorwire.workloads.device_on`). NAME follows :class:`~tensorwire.api.Job`'s rule
    (:func:`~tensorwire.api.job_name_problem`); a refusal of the job's fields names it as
    ``simulate_jobs`` does, by its place among the ``--job`` options (``index``):
    ``jobs[1].strategy``. ``loaded``: workloads already loaded by MODEL, shared by the jobs of
    one command (a workload is immutable; 1,024 jobs of one model loaded it 1,024 times)."""
    parts = text.split(":", 3)
    if len(parts) != 4 or not all(parts):
        raise InputError(
            "job", f"{text!r} is not NAME:MODEL:WORKERS:STRATEGY, e.g. a:resnet50:16:ring or b:llama3_8b:64:fsdp"
        )
    name, model, workers, strategy = parts
    problem = job_name_problem(name)
    if problem is not None:
        raise InputError("job", f"{text!r}: {problem}")
    if not workers.isdigit() or not 1 <= int(workers) <= _core.MAX_WORKERS:
        raise InputError("job", f"{text!r}: WORKERS {workers!r} must be an integer from 1 to {_core.MAX_WORKERS:,}")
    with _job_named(index):
        if loaded is None:
            return Job(name, _workload(model, gpu, topology), int(workers), strategy)
        if model not in loaded:
            loaded[model] = _workload(model, gpu, topology)
        return Job(name, loaded[model], int(workers), strategy)


def _workload(model: str, gpu: Optional[str], topology: Optional[str]) -> Workload:
    """A job's MODEL: a built-in model's name first (a file ``resnet50`` in the current
    directory silently replaced the built-in model), else an existing workload file."""
    if model in model_names():
        return load_model(model, device_on(model, gpu, topology))
    if Path(model).is_file():
        return load_workload(model)
    raise InputError(
        "model",
        f"{clip(model)!r} is neither a built-in model ({', '.join(model_names())}) nor an existing workload file",
    )


def parse_place(text: str) -> tuple[str, list[int]]:
    """``NAME=HOSTS``: job NAME's ranks on these hosts, e.g. ``a=0-3,8-11`` (ranges inclusive).

    >>> parse_place("a=0-2,8")
    ('a', [0, 1, 2, 8])
    """
    name, eq, spec = text.partition("=")
    if not eq or not name or not spec:
        raise InputError("place", f"{text!r} is not NAME=HOSTS, e.g. a=0-7 or b=8,10,12,14")
    hosts: list[int] = []
    for item in spec.split(","):
        first, dash, last = item.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()) or (dash and int(last) < int(first)):
            raise InputError("place", f"{text!r}: {item!r} is not a host (0, 1, ...) or a range FIRST-LAST")
        end = int(last if dash else first) + 1
        if end > _core.MAX_WORKERS:  # a fabric has at most that many hosts
            raise InputError("place", f"{text!r}: {item!r}: hosts are numbered from 0 to {_core.MAX_WORKERS - 1:,}")
        if len(hosts) + end - int(first) > MAX_PLACED:
            raise InputError("place", f"{text!r}: more than {MAX_PLACED:,} hosts for one job")
        hosts.extend(range(int(first), end))
    return name, hosts


def fixed_hosts(places: tuple[str, ...], listed: list[Job]) -> dict[str, list[int]]:
    """The ``--place`` options by job name; names that are no job's, or two jobs', are refused."""
    names = [j.name for j in listed]
    twice = [n for i, n in enumerate(names) if n in names[:i]]
    if twice:
        raise InputError("job", f"two jobs are called {twice[0]!r}; give each job its own name")
    fixed: dict[str, list[int]] = {}
    for text in places:
        name, hosts = parse_place(text)
        if name not in names:
            raise InputError("place", f"no job is called {name!r}; the jobs are {', '.join(names)}")
        if name in fixed:
            raise InputError("place", f"job {name!r} is placed twice; give its hosts once")
        fixed[name] = hosts
    return fixed


def seat_jobs(
    listed: list[Job], fixed: dict[str, list[int]], hosts: int, topology: str, placement: str, seed: int
) -> list[Job]:
    """The jobs with every rank on a host (``--place`` where given, else the placement's
    order), so that each job alone runs on exactly the hosts it had together. The core's
    errors about a job's hosts (``jobs[i].hosts``) are about ``--place`` here."""
    seats = [(j.name, j.workers, str(j.strategy), fixed.get(j.name)) for j in listed]
    try:
        seated = _core.place_jobs(topology, hosts, seats, placement, seed % 2**64)
    except InputError as e:
        field, message = e.args
        if field.startswith("jobs[") and field.endswith(".hosts"):
            raise InputError("place", message) from None
        raise
    return [Job(j.name, j.workload, j.workers, j.strategy, h) for j, h in zip(listed, seated)]


def placed(names: list[str], fixed: dict[str, list[int]], rank_placement: str) -> str:
    """How the ranks of the jobs ``names`` were put on hosts, as the title says it: by
    ``--place`` (``fixed``, by job name), in ``--rank-placement`` order, or both (it said
    "placement packed" of jobs every one of which --place had put).

    >>> placed(["a", "b"], {}, "packed"), placed(["a", "b"], {"a": [0], "b": [1]}, "packed")
    ('placement packed', 'placed by --place')
    >>> placed(["a", "b"], {"a": [0, 1, 2, 3]}, "spread")
    'a placed by --place, b by placement spread'
    """
    if not fixed:
        return f"placement {rank_placement}"
    rest = [n for n in names if n not in fixed]
    if not rest:
        return "placed by --place"
    return f"{', '.join(fixed)} placed by --place, {', '.join(rest)} by placement {rank_placement}"


@click.command("jobs")
@cluster_option()
@click.option(
    "--job",
    "job_specs",
    multiple=True,
    required=True,
    metavar="NAME:MODEL:WORKERS:STRATEGY",
    help="A job on the fabric; repeat for several, e.g. --job a:resnet50:16:ring --job b:vgg16:16:zero2. "
    "MODEL is a built-in model or a workload file (as --workload of simulate takes it: format detected).",
)
@click.option(
    "--place",
    "places",
    multiple=True,
    metavar="NAME=HOSTS",
    help="Job NAME's ranks on these hosts, one per worker then one per parameter server, e.g. a=0-7 or b=8,10,12,14; repeatable. "
    "The other jobs take free hosts in --rank-placement order.",
)
@click.option(
    "--workers",
    "-n",
    "hosts",
    type=int,
    default=None,
    help="Hosts of the fabric (default: the jobs' workers and parameter servers together, or up to the highest --place host).",
)
@options.bandwidth
@options.network_options
@click.option("--gpu", default=None, help="Device whose measurements (zoo) or profile (LLMs) the jobs use.")
@options.fail
@options.max_flows
@options.run_options
def jobs(
    job_specs: tuple[str, ...],
    places: tuple[str, ...],
    hosts: Optional[int],
    bandwidth: Optional[float],
    latency: float,
    topology: str,
    network: str,
    overhead: float,
    rank_placement: str,
    gpu: Optional[str],
    failures: tuple[Failure, ...],
    max_flows: int,
    iterations: int,
    seed: int,
    as_json: bool,
) -> None:
    """Simulate several jobs sharing one fabric; each job's iteration time beside the same job
    alone on the same hosts.

    \b
        tensorwire jobs --job a:resnet50:16:ring --job b:vgg16:16:ring -b 25Gbps \\
            --topology leaf-spine:hosts_per_leaf=8,spines=2,uplink=25Gbps --rank-placement spread

    \b
        tensorwire jobs --job a:resnet50:8:ring --job b:vgg16:8:ring -b 25Gbps \\
            --topology leaf-spine:hosts_per_leaf=8,spines=2,uplink=25Gbps --place a=0-3,8-11
    """
    loaded: dict[str, Workload] = {}
    listed = [parse_job(s, gpu, topology, i, loaded) for i, s in enumerate(job_specs)]
    strategies = [Strategy(str(j.strategy)) for j in listed]
    # In a multi-job run sharded jobs default to comm=flows, as they do on a star: NCCL's
    # model times `nccl`, `ddp` and `comm=nccl` only, whatever the fabric.
    options.check_latency_seen(click.get_current_context(), [(s, "star") for s in strategies])
    fixed = fixed_hosts(places, listed)
    fabric_hosts = (
        hosts
        if hosts is not None
        else max([sum(j.hosts_needed for j in listed)] + [max(h) + 1 for h in fixed.values()])
    )
    cluster = Cluster(fabric_hosts, bandwidth, latency, topology, network, overhead, rank_placement=rank_placement)
    pinned = seat_jobs(listed, fixed, fabric_hosts, topology, rank_placement, seed)
    with render.progress(len(pinned) + (2 if failures else 1), "simulating") as advance:
        together = simulate_jobs(
            pinned, cluster, iterations=iterations, seed=seed, failures=failures, max_flows=max_flows
        )
        advance()
        # With --fail, the jobs together on the healthy fabric too: what the failure cost
        # (the alone column runs under the same failures, so the slowdown is sharing's).
        healthy = (
            simulate_jobs(pinned, cluster, iterations=iterations, seed=seed, max_flows=max_flows) if failures else None
        )
        if failures:
            advance()
        # Each job alone: its iteration time only (a Result holds every link of the fabric,
        # and jobs x links filled memory: 1,024 two-worker jobs took 1.3 GB).
        alone: list[float] = []
        for j in pinned:
            # Alone, a job ends sooner: failures after its end are allowed (they change nothing).
            ran = _run_jobs([j], cluster, iterations, seed, failures, max_flows, allow_failures_after_end=True)
            alone.append(ran[0].iteration_time_s)
            advance()
    # A sharded job without comm= runs on flows in a multi-job run (above), where `simulate`
    # of it alone on a GPU fabric times it with NCCL (a difference of 1-2% for fsdp on 8 H100).
    # (`seat_jobs` keeps the jobs' order.)
    timed = [s.core.timed_by_nccl("star") for s in strategies]
    on_flows = [j.name for j, s, t in zip(pinned, strategies, timed) if not t and s.core.timed_by_nccl(topology)]
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "job": j.name,
                        "model": j.workload.name,
                        "workers": j.workers,
                        "strategy": r.strategy,
                        "collectives": "nccl" if t else "flows",
                        "hosts": list(j.hosts or ()),
                        "iteration_time_s": r.iteration_time_s,
                        "alone_iteration_time_s": a,
                        "slowdown": r.iteration_time_s / a,
                        "throughput_samples_per_s": r.throughput_samples_per_s,
                        "sent_bytes_per_worker": r.sent_bytes_per_worker,
                        "background_stopped_s": r.background_stopped_s,
                        **(
                            {}
                            if healthy is None
                            else {"without_failures_iteration_time_s": healthy[i].iteration_time_s}
                        ),
                    }
                    for i, (j, r, a, t) in enumerate(zip(pinned, together, alone, timed))
                ],
                indent=1,
            )
        )
        return
    # The cluster's "workers" are the fabric's hosts here; the jobs' workers are per row. The
    # jobs' collectives are timed as on a star (above): the latency only where one sees it.
    seen = latency_seen([str(j.strategy) for j in pinned], "star")
    fabric = cluster.describe(seen).replace(counted(cluster.workers, "worker"), counted(cluster.workers, "host"), 1)
    t = Table(
        title=f"{counted(len(pinned), 'job')} on a fabric of {fabric}, {placed([j.name for j in pinned], fixed, rank_placement)}"
    )
    for column, justify in (
        ("job", "left"),
        ("model", "left"),
        ("workers", "right"),
        ("strategy", "left"),
        ("iteration", "right"),
        ("alone", "right"),
        ("slowdown", "right"),
        ("samples/s", "right"),
        *((("no failures", "right"),) if healthy is not None else ()),
    ):
        t.add_column(column, justify=justify)
    for i, (j, r, a) in enumerate(zip(pinned, together, alone)):
        t.add_row(
            j.name,
            j.workload.name,
            str(j.workers),
            r.strategy,
            format_seconds(r.iteration_time_s),
            format_seconds(a),
            ("≥ " if r.background_stopped_s is not None else "") + f"{r.iteration_time_s / a:.2f}x",
            format_count(r.throughput_samples_per_s),
            *((format_seconds(healthy[i].iteration_time_s),) if healthy is not None else ()),
        )
    render.console.print(t)
    if healthy is not None:
        click.echo(
            f"tensorwire: {counted(len(failures), 'failure')} in every run above (alone too, so the slowdown is "
            "sharing's); 'no failures' is the jobs together on the healthy fabric",
            err=True,
        )
    for j, r in zip(pinned, together):
        if r.background_stopped_s is not None:
            note(background_note(j.name, r))
    if on_flows:
        note(
            f"{', '.join(on_flows)}: sharded, simulated on flows in a multi-job run (comm=flows; "
            "simulate alone on this fabric times it with NCCL's model: give comm=nccl to compare)"
        )


def background_note(name: str, r: Result) -> str:
    """The note (:func:`tensorwire.cli.terminal.note`) under a job whose measured iterations outlasted another job's background
    load (:attr:`Result.background_stopped_s`): its slowdown is a lower bound."""
    assert r.background_stopped_s is not None
    return (
        f"{name}: another job, at least {BACKGROUND_FACTOR} times faster, stopped at "
        f"{format_seconds(r.background_stopped_s)} (a job runs at most {BACKGROUND_FACTOR} times the measured "
        f"iterations) before {name}'s measured iterations ended at {format_seconds(r.completions_s[-1])}: "
        f"{name}'s slowdown is at least the one shown"
    )
