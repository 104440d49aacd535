"""Running the configurations of a grid: in this process, on local cores, or on Ray.

Local parallelism uses a process pool by default. :func:`tensorwire.simulate` releases
the GIL, so threads work too (``executor="thread"``), but measured on two cores (1,000
configurations, benchmarks/sweep.py) threads cost about 30% more CPU per simulation than
one process does and finished in 31 s against 24 s for two processes (serial: 45 s); on 16
cores the two were within 10%. Processes start once per sweep (spawn, about a second) and
load each workload once per process. Work is cut into chunks, several per worker (so that
1,000 configurations cost a few dozen round trips, not 1,000), and each chunk takes every
k-th configuration, so that cheap and expensive models are spread over all chunks.

On a Ray cluster (``ray_address``) each chunk is a Ray task; Ray does the scheduling,
placement and fault handling. Every node needs tensorwire installed (same version).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
import warnings
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from functools import lru_cache
from typing import Any, Callable, Literal, Optional, Sequence, TypeVar

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.api import DEFAULT_MAX_FLOWS, UnseenOptionWarning, check_simulate, simulate, warn_unseen_latency
from tensorwire.cluster import Cluster
from tensorwire.result import without_sample_metrics
from tensorwire.strategy import Strategy
from tensorwire.sweep.grid import Axis, Config, expand
from tensorwire.sweep.table import Row, add_speedup
from tensorwire.workload import Workload
from tensorwire.workloads import load_model
from tensorwire.workloads.formats import load_workload

T = TypeVar("T")

#: Called with the number of configurations just finished.
Progress = Callable[[int], None]

Chunk = list[tuple[int, Config]]

#: Chunks per worker: enough for load balance and a smooth progress bar, few enough that
#: the per-chunk cost (a process round trip, a Ray task) stays negligible.
CHUNKS_PER_WORKER = 8


def run_grid(
    models: Axis = None,
    workers: Axis = None,
    bandwidths: Axis = None,
    strategies: Axis = None,
    *,
    latencies: Axis = None,
    topologies: Axis = None,
    networks: Axis = None,
    gpus: Axis = None,
    batches: Axis = None,
    seq_lens: Axis = None,
    mfus: Axis = None,
    recompute: bool = False,
    compute_speedups: Axis = None,
    seeds: Axis = None,
    iterations: int = _core.DEFAULT_ITERATIONS,
    workload_file: Optional[str] = None,
    workload_format: str = "auto",
    max_flows: Optional[int] = DEFAULT_MAX_FLOWS,
    jobs: Optional[int] = None,
    ray_address: Optional[str] = None,
    progress: Optional[Progress] = None,
    executor: Literal["thread", "process"] = "process",
) -> list[Row]:
    """Simulates every configuration of a grid; one row (a dict) per configuration.

    Each axis is a list of values or comma-separated text, as on the command line:
    ``models="resnet50,vgg16"``, ``workers=[4, 8]``, ``bandwidths="1Gbps,25Gbps"``,
    ``strategies="ps,ring:partition=4MiB"``, ``latencies`` (seconds or text), ``topologies``,
    ``networks`` (flow, analytical), ``gpus``, ``batches``, an LLM's ``seq_lens`` and ``mfus``,
    ``compute_speedups``, ``seeds``; ``recompute`` (one value) recomputes every LLM's blocks.
    ``workload_file`` adds a workload file to the models, ``max_flows`` bounds every simulation
    (default :data:`tensorwire.api.DEFAULT_MAX_FLOWS`, as :func:`tensorwire.simulate` and
    ``tensorwire sweep``; ``None``: no budget): where no strategies are named, the points of
    built-in ones over it are left out (:func:`check_configs`); a named strategy over it is
    refused (see :func:`tensorwire.sweep.grid.expand`).
    The whole grid is validated first (:func:`tensorwire.sweep.grid.expand`). ``jobs`` is the
    number of local processes (default: every core); ``ray_address`` runs on a Ray cluster
    instead (``auto``, ``ray://HOST:10001``, or ``local`` for a one-machine cluster).
    Rows come in grid order (strategies varying fastest) whatever ran where, with the
    columns of :data:`tensorwire.sweep.COLUMNS`.

    >>> rows = run_grid("vgg16", 8, "10Gbps", "ps,ring", jobs=1)
    >>> [(r["strategy"], r["baseline"], r["speedup_over_baseline"] > 1) for r in rows]
    [('ps', 'ps', False), ('ring', 'ps', True)]
    """
    configs = expand(
        models,
        workers,
        bandwidths,
        strategies,
        latencies=latencies,
        topologies=topologies,
        networks=networks,
        gpus=gpus,
        batches=batches,
        seq_lens=seq_lens,
        mfus=mfus,
        recompute=recompute,
        compute_speedups=compute_speedups,
        seeds=seeds,
        iterations=iterations,
        workload_file=workload_file,
        workload_format=workload_format,
        max_flows=max_flows,
    )
    configs = check_configs(configs, default_strategies=strategies is None)
    for c in {(c.strategy, c.topology, c.latency): c for c in configs}.values():
        warn_unseen_latency(Cluster(c.workers, c.bandwidth, c.latency, c.topology, c.network), Strategy(c.strategy))
    return run_configs(configs, jobs=jobs, ray_address=ray_address, progress=progress, executor=executor)


#: Why a point of a built-in strategy is left out of a grid that named none (the field of
#: its refusal -> the note's words): over the flow budget, or timed by NCCL's model under the
#: analytical network model, which only times flows.
LEFT_OUT = {
    "max_flows": "over the flow budget (--max-flows)",
    "network": "timed by NCCL's model, which has no network model to choose (analytical times flows)",
}


def check_configs(
    configs: Sequence[Config], *, default_strategies: bool = False, left_out: Optional[dict[Config, str]] = None
) -> list[Config]:
    """Raises, before anything is simulated, the :class:`InputError` the first configuration
    that would fail before simulating would raise (as :func:`run_one` words it): each one's
    workload loaded and its scenario built and checked by the core
    (:func:`tensorwire.api.check_simulate`: the strategy with the workload on the fabric,
    the flow budget), no simulation. :func:`tensorwire.sweep.grid.expand` checks each axis
    and probes each strategy with a tiny collective; this catches what depends on the
    whole point (a model too large for a strategy's pieces or the flow budget).

    Returns the configurations to run: all of them, or with ``default_strategies`` (no
    strategy named, so the grid took every built-in one) those within the flow budget and
    those that the network model of the point applies to (``LEFT_OUT``). Such a point is left
    out rather than ending a sweep that nobody asked it into (an LLM on a rail fabric:
    ``double-tree``'s messages are flows); a named strategy there is an error. ``left_out``,
    if given, receives each point left out with the field of its refusal.
    """
    kept = []
    for c in configs:
        try:
            _run(c, check_simulate)
        except InputError as e:
            field = e.args[0] if e.args else None
            if not (default_strategies and field in LEFT_OUT):
                raise
            if left_out is not None:
                left_out[c] = str(field)
            continue
        kept.append(c)
    if configs and not kept:
        raise InputError(
            "strategies",
            "every built-in strategy is over the flow budget (or timed by NCCL's model under the analytical "
            "network) at every point of this grid; name strategies, use fewer workers, or raise max_flows",
        )
    return kept


def run_configs(
    configs: Sequence[Config],
    *,
    jobs: Optional[int] = None,
    ray_address: Optional[str] = None,
    progress: Optional[Progress] = None,
    executor: Literal["thread", "process"] = "process",
) -> list[Row]:
    """Runs configurations already expanded and checked (:func:`tensorwire.sweep.grid.expand`,
    :func:`check_configs`); rows in the order given."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise InputError("jobs", f"{jobs!r} is not allowed; need an integer >= 1")
    if executor not in ("thread", "process"):
        raise InputError("executor", f"{executor!r}: choose thread or process")
    advance: Progress = progress or (lambda k: None)
    indexed = list(enumerate(configs))
    if ray_address is not None:
        pairs = _run_ray(ray_address, indexed, advance)
    else:
        n_jobs = min(jobs or os.cpu_count() or 1, max(len(indexed), 1))
        if n_jobs == 1:
            pairs = []
            for item in indexed:
                pairs.extend(run_chunk([item]))
                advance(1)
        else:
            pool: Executor
            if executor == "thread":
                pool = ThreadPoolExecutor(n_jobs, thread_name_prefix="tensorwire-sweep")
            else:
                # spawn: no fork of a process that runs threads (rich's progress bar)
                pool = ProcessPoolExecutor(
                    n_jobs,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_watch_parent,
                    initargs=(os.getpid(),),
                )
            pairs = _run_pool(pool, chunks(indexed, n_jobs * CHUNKS_PER_WORKER), advance)
    rows: list[Optional[Row]] = [None] * len(indexed)
    for i, row in pairs:
        rows[i] = row
    return add_speedup([r for r in rows if r is not None])


def chunks(items: Sequence[tuple[int, Config]], parts: int) -> list[Chunk]:
    """At most ``parts`` chunks; chunk j holds every ``parts``-th item from item j."""
    parts = max(1, min(parts, len(items)))
    return [list(items[j::parts]) for j in range(parts)]


def run_chunk(chunk: Chunk) -> list[tuple[int, Row]]:
    """Simulates each configuration of a chunk (the unit of work of every executor)."""
    return [(i, run_one(c)) for i, c in chunk]


def _run(c: Config, call: Callable[..., T]) -> T:
    """``call`` (:func:`tensorwire.simulate` or :func:`tensorwire.api.check_simulate`) on
    configuration ``c``; an :class:`InputError` names the configuration."""
    cluster = Cluster(c.workers, c.bandwidth, c.latency, c.topology, c.network)
    try:
        w = (
            _file_workload(c.workload_file, c.workload_format, c.compute_speedup)
            if c.workload_file
            else _workload(c.model, c.gpu, c.batch, c.compute_speedup, c.seq_len, c.mfu, bool(c.recompute))
        )
        with warnings.catch_warnings():
            # Said once per grid by run_grid (and by the CLI's own check), not once per point.
            warnings.simplefilter("ignore", UnseenOptionWarning)
            return call(w, cluster, c.strategy, iterations=c.iterations, seed=c.seed, max_flows=c.max_flows)
    except InputError as e:
        field, message = e.args if len(e.args) == 2 else ("input", str(e))
        raise InputError(field, f"{c.describe()}: {message}") from None


def run_one(config: Config) -> Row:
    """One configuration's row: its configuration columns, then the result's."""
    c = config
    r = _run(c, simulate)
    row: Row = {
        "model": c.model,
        "gpu": c.gpu,
        "batch": c.batch,
        "seq_len": c.seq_len,
        "mfu": c.mfu,
        "recompute": c.recompute,
        "compute_speedup": c.compute_speedup,
        "topology": c.topology,
        "network": c.network,
        "latency_s": c.latency,
        "workers": c.workers,
        "bandwidth": c.bandwidth,
        "bandwidth_gbps": c.bandwidth * 8 / 1e9,
        "strategy": c.strategy,
        "strategy_name": c.strategy.split(":", 1)[0],
        "iterations": c.iterations,
        "seed": c.seed,
        "iteration_time_s": r.iteration_time_s,
        "throughput_samples_per_s": r.throughput_samples_per_s,
        "scaling_factor": r.scaling_factor,
        "compute_time_s": r.compute_time_s,
        "compute_interference_s": r.compute_interference_s,
        "comm_time_s": r.comm_time_s,
        "exposed_comm_s": r.exposed_comm_s,
        "max_link_utilization": r.max_link_utilization,
        "speedup_over_ps": None,
        "baseline": None,
        "speedup_over_baseline": None,
    }
    return without_sample_metrics(row)


@lru_cache(maxsize=64)
def _workload(
    model: str, gpu: str, batch: int, speedup: float, seq_len: Optional[int], mfu: Optional[float], recompute: bool
) -> Workload:
    """Workloads are immutable; each (model, device, batch, speedup, LLM options) is built once per process."""
    w = load_model(model, gpu, batch, seq_len=seq_len, mfu=mfu, recompute=recompute)
    return w if speedup == 1.0 else w.with_compute_speedup(speedup)


@lru_cache(maxsize=8)
def _file_workload(path: str, fmt: str, speedup: float) -> Workload:
    """A workload file, read once per process."""
    w = load_workload(path, fmt)
    return w if speedup == 1.0 else w.with_compute_speedup(speedup)


#: How often a pool worker checks that the sweep that started it is still alive, seconds.
PARENT_POLL_S = 0.5


def _watch_parent(parent: int) -> None:
    """Pool worker initializer: the worker exits when the process that started it has died
    (SIGKILL leaves no chance to shut the pool down), instead of running on as an orphan."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="tensorwire-parent-watch", daemon=True).start()


def _run_pool(pool: Executor, work: list[Chunk], advance: Progress) -> list[tuple[int, Row]]:
    out: list[tuple[int, Row]] = []
    try:
        futures: dict[Future[list[tuple[int, Row]]], int] = {pool.submit(run_chunk, c): len(c) for c in work}
        for f in as_completed(futures):
            out.extend(f.result())
            advance(futures[f])
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM) or a configuration failed: stop the workers now
        # rather than waiting for their chunks; nothing of theirs is kept.
        if isinstance(pool, ProcessPoolExecutor):
            # Python < 3.14 has no public way to reach a pool's processes.
            processes: dict[int, Any] = getattr(pool, "_processes", None) or {}
            for process in list(processes.values()):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return out


def _import_ray() -> Any:
    try:
        import ray  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        raise InputError("ray", "running on Ray needs the ray package: pip install 'tensorwire[ray]'") from None
    return ray


def _run_ray(address: str, items: list[tuple[int, Config]], advance: Progress) -> list[tuple[int, Row]]:
    """Each chunk is one Ray task; results are collected as they finish."""
    if not isinstance(address, str) or not address.strip():
        raise InputError("ray", "give the address of the cluster's head (auto, ray://HOST:10001, or local)")
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        # "local" starts a one-machine cluster for this sweep: no dashboard, loopback only.
        extra: dict[str, Any] = (
            {"include_dashboard": False, "_node_ip_address": "127.0.0.1"} if address.strip() == "local" else {}
        )
        try:
            ray.init(address=address.strip(), logging_level=logging.WARNING, log_to_driver=False, **extra)
        except Exception as e:  # Ray raises ConnectionError, RuntimeError, or plain Exception on a failed start
            first = (str(e).splitlines() or [type(e).__name__])[0]
            raise InputError("ray", f"cannot connect to a Ray cluster at {address!r}: {first}") from None
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        task = ray.remote(run_chunk)
        pending: dict[Any, int] = {task.remote(c): len(c) for c in chunks(items, cpus * CHUNKS_PER_WORKER)}
        out: list[tuple[int, Row]] = []
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                try:
                    out.extend(ray.get(ref))
                except ray.exceptions.RayTaskError as e:
                    cause = getattr(e, "cause", None)
                    raise (cause if isinstance(cause, BaseException) else e) from None
                advance(pending.pop(ref))
        return out
    finally:
        if started:
            ray.shutdown()
