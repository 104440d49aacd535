"""Launching a job: one Gloo process per emulated host, and what they measured.

Rank ``r`` runs on host ``r`` inside its namespace (``ip netns exec``), with rank 0's
address as ``MASTER_ADDR`` and ``GLOO_SOCKET_IFNAME`` set to the host's interface. Each
worker records when it finished each iteration (``time.perf_counter``, which is
``CLOCK_MONOTONIC`` and so comparable across processes on one machine); an iteration is
complete when every worker finished it. The steady-state iteration time is the median of
``C[k] - C[k-1]`` over the iterations ``k >= w`` after ``w`` warm-up iterations (the
simulator averages the same differences; the median keeps one iteration slowed by
something else on the machine from moving the result).
"""

from __future__ import annotations

import importlib.util
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from tensorwire._core import InputError
from tensorwire.limits import check_timeout
from tensorwire.strategy import Strategy
from tensorwire.testbed.jobs.registry import job_strategy
from tensorwire.testbed.jobs.spec import JobSpec, StrategyOptions, check_iterations
from tensorwire.testbed.netns import TestbedUnavailable
from tensorwire.testbed.testbed import DEFAULT_SCHEDULING, Testbed, scheduling_prefix
from tensorwire.workload import Workload


class JobFailed(RuntimeError):
    """A job process failed or the job ran out of time; the message holds its stderr tail."""


@dataclass(frozen=True)
class JobResult:
    """Measured iteration times of one job (seconds)."""

    strategy: str
    workload: str
    workers: int
    hosts: int
    rate_bytes_per_s: float
    iterations: int
    warmup: int
    #: Completion time of each iteration (every worker done), seconds since the first worker started.
    completions_s: tuple[float, ...]
    #: Duration of each iteration after the first (``C[k] - C[k-1]``), seconds.
    iteration_times_s: tuple[float, ...]
    #: Steady-state iteration time: the median of the iteration times after warm-up, seconds.
    iteration_time_s: float
    wall_s: float
    #: The transport probe's results (empty unless ``probe=True``).
    probe: dict[str, Any] = field(default_factory=dict)
    #: Each rank's measurement file (completions, notes such as traces), for analysis.
    ranks: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["completions_s"] = list(self.completions_s)
        d["iteration_times_s"] = list(self.iteration_times_s)
        d.pop("ranks")
        return d


def require_torch() -> None:
    """Raises :class:`TestbedUnavailable` when this interpreter (which runs the job
    processes) has no torch."""
    if importlib.util.find_spec("torch") is None:
        raise TestbedUnavailable(
            f"torch is not installed for {sys.executable}; the testbed's jobs need it (pip install torch)"
        )


def hosts_needed(strategy: Union[str, Strategy], workers: int) -> int:
    """Hosts a job of ``workers`` workers needs under ``strategy`` (servers included)."""
    options = StrategyOptions.parse(str(strategy))
    return workers + job_strategy(options.name).extra_hosts(options)


def run_job(
    testbed: Testbed,
    workload: Workload,
    strategy: Union[str, Strategy],
    *,
    workers: Optional[int] = None,
    iterations: int = 6,
    warmup: int = 2,
    timeout_s: float = 300.0,
    scheduling: str = DEFAULT_SCHEDULING,
    probe: bool = False,
    runtime: bool = False,
) -> JobResult:
    """Runs data-parallel training of ``workload`` on the testbed and measures it.

    ``workers`` defaults to every host not needed by the strategy (a ``ps`` job on 5 hosts
    has 4 workers and a server). Raises :class:`JobFailed` when a process fails or the job
    takes longer than ``timeout_s`` seconds. ``scheduling`` is how the job's processes are
    scheduled (:data:`SCHEDULING`). ``probe`` runs :mod:`tensorwire.testbed.jobs.probe` in
    the job's processes before training (about a second; results in ``JobResult.probe``).
    ``runtime`` runs the spec with the runtime's ``ScheduledDataParallel``
    (:mod:`tensorwire.testbed.jobs.runtime`: ``ring`` specs, their ``schedule``,
    ``partition``, ``credit``, ``fusion`` and ``cycle``) instead of the testbed's own job.

    Raises :class:`InputError`, before anything starts, for an option of the spec the job
    would not run (the simulator would predict it:
    :meth:`~tensorwire.testbed.jobs.registry.JobStrategy.check`), and for
    more servers than the testbed has hosts besides one worker (``strategy.num_ps``).
    """
    spec_text = str(strategy)
    options = StrategyOptions.parse(spec_text)
    job = job_strategy(options.name)
    job.runner(runtime)  # refuses a strategy that cannot run this way, before launching
    if runtime:
        from tensorwire.testbed.jobs.runtime import runtime_config

        runtime_config(spec_text)  # refuses what the runtime would not run, before launching
        if testbed.delay > 0:
            raise InputError("delay", "runtime jobs cannot add user-space delay; use a testbed with delay 0")
    else:
        job.check(options)  # refuses options the testbed's own job would not run, before launching
    check_iterations(iterations, warmup)
    if not workload.tensors:
        raise InputError("workload", f"{workload.name!r} has no gradient tensors to synchronise")
    extra = job.extra_hosts(options)
    if extra + 1 > testbed.hosts:
        raise InputError(
            "strategy.num_ps",
            f"{extra} servers plus at least one worker need {extra + 1} hosts; the testbed has {testbed.hosts}"
            f" (use num_ps <= {testbed.hosts - 1}, or a testbed of more hosts)",
        )
    if workers is None:
        workers = testbed.hosts - extra
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError("workers", f"{workers!r} must be an integer >= 1")
    world = workers + extra
    if world > testbed.hosts:
        servers = f" and {extra} servers" if extra else ""
        raise InputError(
            "workers",
            f"{workers} workers{servers} under {options.name} need {world} hosts; the testbed has {testbed.hosts}",
        )
    timeout_s = check_timeout(timeout_s)
    require_torch()
    out_dir = Path(tempfile.mkdtemp(prefix=f"tensorwire-job-{testbed.run_id}-"))
    try:
        spec = JobSpec(
            strategy=Strategy(spec_text).spec,
            options=options,
            workload=workload.to_dict(),
            workers=workers,
            world_size=world,
            master_addr=testbed.address(0),
            master_port=random.randint(20000, 29999),
            iterations=iterations,
            warmup=warmup,
            delay_s=testbed.delay,
            link_rate_bytes_per_s=testbed.rate,
            out_dir=str(out_dir),
            timeout_s=timeout_s,
            probe=probe,
            runtime=runtime,
        )
        spec_path = out_dir / "spec.json"
        spec_path.write_text(spec.to_json())
        start = time.monotonic()
        launch_ranks(
            testbed,
            "tensorwire.testbed.jobs.worker",
            spec_path,
            world,
            out_dir,
            timeout_s,
            env={"MASTER_ADDR": spec.master_addr, "MASTER_PORT": str(spec.master_port)},
            scheduling=scheduling,
        )
        wall = time.monotonic() - start
        ranks = [json.loads((out_dir / f"rank-{r}.json").read_text()) for r in range(world)]
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    return _result(spec, testbed, ranks, wall)


def launch_ranks(
    testbed: Testbed,
    module: str,
    spec_path: Path,
    world: int,
    log_dir: Path,
    timeout_s: float,
    env: Optional[dict[str, str]] = None,
    scheduling: str = DEFAULT_SCHEDULING,
) -> None:
    """Runs ``python -m module SPEC RANK`` for ranks ``0..world-1``, rank ``r`` on host ``r``,
    and waits for all; raises :class:`JobFailed` with the log tail of the first failure."""
    procs: list[tuple[int, subprocess.Popen[str], Path]] = []
    prefix = list(scheduling_prefix(scheduling))
    try:
        for rank in range(world):
            log = log_dir / f"rank-{rank}.log"
            with open(log, "w") as f:
                proc = testbed.popen(
                    rank,
                    [*prefix, *testbed.python(module, str(spec_path), str(rank))],
                    env={"PYTHONUNBUFFERED": "1", **(env or {})},
                    stdout=f,
                    stderr=subprocess.STDOUT,
                )
            procs.append((rank, proc, log))
        deadline = time.monotonic() + timeout_s
        pending = list(procs)
        while pending:
            for item in list(pending):
                rank, proc, log = item
                code = proc.poll()
                if code is None:
                    continue
                pending.remove(item)
                if code != 0:
                    raise JobFailed(f"rank {rank} ({module}) exited with {code}: {_tail(log)}")
            if pending and time.monotonic() > deadline:
                raise JobFailed(
                    f"the job did not finish within {timeout_s:g} s (ranks {[r for r, _, _ in pending]} still running)"
                )
            time.sleep(0.02)
    finally:
        for _, proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            testbed.release(proc)


def _probe(notes: dict[str, Any]) -> dict[str, Any]:
    """Rank 0's probe results; a runtime job's dispatch probe under ``dispatch``."""
    probe = dict(notes.get("probe", {}))
    if "dispatch_probe" in notes:
        probe["dispatch"] = dict(notes["dispatch_probe"])
    return probe


def _tail(log: Path, lines: int = 12) -> str:
    try:
        text = log.read_text().strip().splitlines()
    except OSError:
        return "(no output)"
    return " | ".join(text[-lines:]) or "(no output)"


def _result(spec: JobSpec, testbed: Testbed, ranks: list[dict[str, Any]], wall: float) -> JobResult:
    n = spec.iterations
    workers = [r for r in ranks if r["role"] == "worker"]
    origin = min(r["started_at"] for r in workers)
    completions = [max(r["completions"][k] for r in workers) - origin for k in range(n)]
    periods = [completions[k] - completions[k - 1] for k in range(1, n)]
    w = spec.warmup
    steady = statistics.median(periods[w - 1 :])
    return JobResult(
        strategy=spec.strategy,
        workload=str(spec.workload.get("name", "")),
        workers=spec.workers,
        hosts=spec.world_size,
        rate_bytes_per_s=testbed.rate,
        iterations=n,
        warmup=w,
        completions_s=tuple(completions),
        iteration_times_s=tuple(periods),
        iteration_time_s=steady,
        wall_s=wall,
        probe=_probe(workers[0]["notes"]),
        ranks=tuple(ranks),
    )
