"""Starting processes: torchrun's environment, or local processes on 127.0.0.1.

Under ``torchrun`` (one or several machines) nothing is special: it sets ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``, and
:func:`init_process_group` joins that job. :func:`run_local` starts ``n`` processes on this
machine (Gloo over loopback) for tests, ``tensorwire measure`` and benchmarks.
"""

from __future__ import annotations

import datetime
import os
import queue
import socket
import time
import traceback
from typing import Any, Callable, Optional, Sequence

from tensorwire._core import InputError

ENV_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def init_process_group(backend: Optional[str] = None, timeout_s: Optional[float] = None) -> tuple[int, int]:
    """Joins the job the environment describes (torchrun's variables); returns (rank, world size).

    ``backend``: ``gloo`` or ``nccl`` (default: nccl when CUDA is available, else gloo).
    Does nothing but report when torch.distributed is already initialised.
    """
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    missing = [v for v in ENV_VARS if v not in os.environ]
    if missing:
        raise InputError("environment", f"{', '.join(missing)} not set; start the job with torchrun (or set them)")
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend not in ("gloo", "nccl"):
        raise InputError("backend", f"{backend!r} is not supported; choose gloo or nccl")
    if backend == "nccl" and "LOCAL_RANK" in os.environ:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    timeout = datetime.timedelta(seconds=timeout_s) if timeout_s is not None else None
    import_dynamo_first()
    dist.init_process_group(backend, timeout=timeout)
    return dist.get_rank(), dist.get_world_size()


def import_dynamo_first() -> None:
    """Imports ``torch._dynamo`` before the default group exists (every optimizer imports it).

    Imported after it, torch 2.15's dynamo keeps a reference to the default group, so
    ``destroy_process_group()`` cannot free it and its Gloo threads live on into interpreter
    shutdown; a thread that drops its last reference to a finished collective then takes
    the GIL during finalization and CPython 3.11 aborts the process ("terminate called
    without an active exception", 3 of 40 exits of a torchrun test script on 2 cores, 0 of 120 with this).
    Measured: with the import first, the default group's threads end at ``destroy``.
    """
    try:
        import torch._dynamo  # noqa: F401
    except ImportError:  # a torch without dynamo has no such reference either
        pass


class LocalRunError(RuntimeError):
    """A process started by :func:`run_local` failed or did not finish in time."""


def _child(
    rank: int,
    world: int,
    port: int,
    fn: Callable[..., Any],
    args: Sequence[Any],
    results: Any,
    threads: Optional[int],
    env: dict[str, str],
    timeout_s: Optional[float],
) -> None:
    os.environ.update(env)
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    try:
        import torch
        import torch.distributed as dist

        if threads is not None:
            torch.set_num_threads(threads)
        init_process_group("gloo", timeout_s=timeout_s)
        out = fn(rank, world, *args)
        results.put((rank, True, out))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        results.put((rank, False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
        results.close()
        results.join_thread()
        os._exit(1)  # never wait for peers in process-group teardown after a failure
    try:
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass


#: Seconds the processes of an interrupted :func:`run_local` get to end on SIGTERM before
#: they are killed: the command line promises to stop within about a second.
STOP_GRACE_S = 0.5


def _wait_then_kill(procs: Sequence[Any], deadline: float) -> None:
    """Waits for processes that are finishing (each has reported, or the deadline passed),
    then kills those still running. A rank that has reported is still in its process
    group's teardown; waiting up to 10 s lets it end by itself rather than be killed."""
    for p in procs:
        p.join(timeout=max(0.1, min(10.0, deadline - time.monotonic())))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(timeout=5)


def _stop_now(procs: Sequence[Any]) -> None:
    """Ends processes whose results nobody will read: the run was interrupted (Ctrl-C, or
    SIGTERM, which the command line turns into ``KeyboardInterrupt``) or failed in this
    process. Only this process got the signal; its workers would go on training, and
    waiting for them (up to 10 s each) held the command for 6-21 s where it promises about
    one. So each gets SIGTERM, a short grace together, then SIGKILL. The kills happen even
    when a second signal interrupts the grace, so none is left behind."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    grace_ends = time.monotonic() + STOP_GRACE_S
    try:
        for p in procs:
            p.join(timeout=max(0.0, grace_ends - time.monotonic()))
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        for p in procs:
            p.join(timeout=1.0)


#: Most processes :func:`run_local` starts on this one machine: each imports torch (about
#: 300 MB) and runs Gloo threads, so far fewer fit a machine of a few cores; 100,000 kept
#: forking until killed.
MAX_LOCAL_PROCESSES = 256


def run_local(
    fn: Callable[..., Any],
    nprocs: int,
    *args: Any,
    timeout_s: float = 300.0,
    pg_timeout_s: Optional[float] = None,
    threads: Optional[int] = 1,
    env: Optional[dict[str, str]] = None,
    allow_failures: bool = False,
) -> list[Any]:
    """Runs ``fn(rank, world, *args)`` in ``nprocs`` new processes joined by Gloo on 127.0.0.1.

    ``fn`` must be importable (a module-level function); each result must pickle. Returns
    the results by rank. Raises :class:`LocalRunError` naming the failed ranks and their
    errors, or the ranks still running after ``timeout_s`` seconds (which are killed).
    ``allow_failures=True`` returns the error text in place of a failed rank's result
    instead. ``pg_timeout_s`` is the process group's timeout; ``threads`` torch's intra-op
    threads per process. Interrupted (``KeyboardInterrupt``: Ctrl-C, or SIGTERM under the
    command line), it ends its processes within about half a second and re-raises.
    """
    import torch.multiprocessing as mp

    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or not 1 <= nprocs <= MAX_LOCAL_PROCESSES:
        raise InputError("nprocs", f"{nprocs!r} must be an integer from 1 to {MAX_LOCAL_PROCESSES}")
    # A fork server imports torch once; every later process forks from it (a fresh
    # interpreter per process would import torch again, seconds each).
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed", "tensorwire.torch.data_parallel"])
    results = ctx.Queue()
    port = free_port()
    procs = [
        ctx.Process(
            target=_child,
            args=(r, nprocs, port, fn, args, results, threads, dict(env or {}), pg_timeout_s),
            daemon=False,
        )
        for r in range(nprocs)
    ]
    got: dict[int, tuple[bool, Any]] = {}
    deadline = time.monotonic() + timeout_s
    finished = False
    try:
        for p in procs:
            p.start()
        while len(got) < nprocs and time.monotonic() < deadline:
            try:
                rank, ok, value = results.get(timeout=0.2)
                got[rank] = (ok, value)
                continue
            except queue.Empty:
                pass
            dead = [r for r, p in enumerate(procs) if p.exitcode is not None and r not in got]
            if dead:
                # A process that died without reporting (killed, or os._exit in fn).
                time.sleep(0.5)
                while True:
                    try:
                        rank, ok, value = results.get_nowait()
                        got[rank] = (ok, value)
                    except queue.Empty:
                        break
                for r in dead:
                    if r not in got:
                        got[r] = (False, f"process exited with status {procs[r].exitcode} without a result")
        finished = True
    finally:
        started = [p for p in procs if p.pid is not None]
        if finished:
            _wait_then_kill(started, deadline)
        else:
            _stop_now(started)
    missing = [r for r in range(nprocs) if r not in got]
    failed = {r: v for r, (ok, v) in got.items() if not ok}
    if missing and not allow_failures:
        raise LocalRunError(f"ranks {missing} did not finish within {timeout_s:g} s (killed)")
    if failed and not allow_failures:
        first = min(failed)
        raise LocalRunError(f"ranks {sorted(failed)} failed; rank {first}: {failed[first]}")
    return [got[r][1] if r in got else f"did not finish within {timeout_s:g} s" for r in range(nprocs)]


__all__ = ["LocalRunError", "free_port", "import_dynamo_first", "init_process_group", "run_local"]
