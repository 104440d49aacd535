"""Launching a job: one Gloo process per emulated host, and what they measured.

Rank ``r`` runs on host ``r`` inside its namespace (``ip netns exec``), with rank 0's
address as ``MASTER_ADDR`` and ``GLOO_SOCKET_IFNAME`` set to the host's interface. Each
worker records when it finished each iteration (``time.perf_counter``, which is
``CLOCK_MONOTONIC`` and so comparable across processes on one machine); an iteration is
complete when every worker finished it, and the steady-state iteration time is
``(C[n-1] - C[w-1]) / (n - w)`` over those completion times ``C`` after ``w`` warm-up
iterations, as in the simulator.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional, Union

from tensorwire._core import InputError
from tensorwire.strategy import Strategy
from tensorwire.testbed.jobs.registry import job_strategy
from tensorwire.testbed.jobs.spec import JobSpec, StrategyOptions, check_iterations
from tensorwire.testbed.testbed import Testbed
from tensorwire.workload import Workload


#: How job processes are scheduled: ``fifo`` (real-time SCHED_FIFO priority 10, via
#: ``chrt``), ``nice`` (nice -10) or ``normal``. The testbed shares two cores with whatever
#: else runs on the machine; each Gloo message crosses three threads, and with ordinary
#: priority a busy machine delays every wake-up. Measured on 4 hosts at 1 Gbit/s while
#: compilers ran: a 4 KiB all-reduce took 8.0 ms at ``nice`` and 1.7 ms at ``fifo``, a
#: 4-byte send 0.9 ms and 0.085 ms. Job processes block on I/O or sleep, so real-time
#: priority does not starve the machine (and Linux keeps 5% for everyone else).
SCHEDULING = {"fifo": ("chrt", "-f", "10"), "nice": ("nice", "-n", "-10"), "normal": ()}
DEFAULT_SCHEDULING = "fifo"


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
    #: Steady-state iteration time, seconds.
    iteration_time_s: float
    wall_s: float

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["completions_s"] = list(self.completions_s)
        d["iteration_times_s"] = list(self.iteration_times_s)
        return d


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
) -> JobResult:
    """Runs data-parallel training of ``workload`` on the testbed and measures it.

    ``workers`` defaults to every host not needed by the strategy (a ``ps`` job on 5 hosts
    has 4 workers and a server). Raises :class:`JobFailed` when a process fails or the job
    takes longer than ``timeout_s`` seconds. ``scheduling`` is how the job's processes are
    scheduled (:data:`SCHEDULING`).
    """
    spec_text = str(strategy)
    options = StrategyOptions.parse(spec_text)
    job = job_strategy(options.name)
    check_iterations(iterations, warmup)
    extra = job.extra_hosts(options)
    if workers is None:
        workers = testbed.hosts - extra
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError("workers", f"{workers!r} must be an integer >= 1")
    world = workers + extra
    if world > testbed.hosts:
        raise InputError(
            "workers", f"{workers} workers under {options.name} need {world} hosts; the testbed has {testbed.hosts}"
        )
    if not timeout_s > 0:
        raise InputError("timeout_s", f"{timeout_s!r} must be > 0")
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
            out_dir=str(out_dir),
            timeout_s=timeout_s,
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
        ranks = [json.loads((out_dir / f"rank-{r}.json").read_text()) for r in range(workers)]
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
    if scheduling not in SCHEDULING:
        raise InputError("scheduling", f"{scheduling!r} is not allowed; choose one of {', '.join(SCHEDULING)}")
    procs: list[tuple[int, subprocess.Popen[str], Path]] = []
    prefix = list(SCHEDULING[scheduling])
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
                raise JobFailed(f"the job did not finish within {timeout_s:g} s (ranks {[r for r, _, _ in pending]} still running)")
            time.sleep(0.02)
    finally:
        for _, proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            testbed._forget(proc)


def _tail(log: Path, lines: int = 12) -> str:
    try:
        text = log.read_text().strip().splitlines()
    except OSError:
        return "(no output)"
    return " | ".join(text[-lines:]) or "(no output)"


def _result(spec: JobSpec, testbed: Testbed, ranks: list[dict[str, Any]], wall: float) -> JobResult:
    n = spec.iterations
    origin = min(r["started_at"] for r in ranks)
    completions = [max(r["completions"][k] for r in ranks) - origin for k in range(n)]
    periods = [completions[k] - completions[k - 1] for k in range(1, n)]
    w = spec.warmup
    steady = (completions[n - 1] - completions[w - 1]) / (n - w)
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
    )
