"""An interrupted ``measure`` (or :func:`run_local`) stops within about a second and leaves
no process behind. Only the parent gets the signal; its workers, forked by the fork
server, went on training while the parent waited up to 10 s for each before killing it:
6-21 s from SIGTERM to exit where the command line promises about one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.needs_torch,
    pytest.mark.distributed,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc"),
]

#: From SIGTERM to exit: half of the old wait for one worker, generous for a loaded machine
#: (exiting an interpreter that imported torch takes about a second of it by itself).
BOUND_S = 5.0

#: ``run_local`` of the measure job on 2 processes, stopped by SIGTERM as the command line
#: stops it (a ``KeyboardInterrupt``), without the 1-process run ``measure`` does first.
RUN_LOCAL = """
import signal, sys
from tensorwire.torch.launch import run_local
from tensorwire.torch.measuring import Job, run_job

def stop(signum, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, stop)
job = Job(model="zoo:vgg16", mode="fifo", size_scale=0.03, iterations=1000000, warmup=0)
try:
    run_local(run_job, 2, job, timeout_s=600)
except KeyboardInterrupt:
    sys.exit(128 + signal.SIGTERM)
"""


def _default_sigint() -> None:
    """In the child: Ctrl-C's default disposition (a background shell ignores SIGINT, and
    the fork server's workers would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stat(pid: int) -> list[str]:
    """State, parent and the rest of /proc/PID/stat after the command's name; [] when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return bool(fields) and fields[0] != "Z"


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def _workers(pid: int) -> list[int]:
    """The processes the fork server (a child of ``pid``) forked: the ranks."""
    return [w for c in _children(pid) for w in _children(c)]


def _start_and_stop(args: list[str], workers: int) -> tuple[float, int, str, list[int]]:
    """Starts ``args``, sends SIGTERM a second after ``workers`` ranks run; returns the
    seconds to exit, the exit status, stderr and the processes the run had started."""
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    p = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_default_sigint
    )
    started: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while len(_workers(p.pid)) < workers:
            if p.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"{workers} ranks did not start (status {p.poll()}): {p.communicate(timeout=30)[1][-2000:]}"
                )
            time.sleep(0.2)
        time.sleep(1.0)  # training, not starting
        started = _descendants(p.pid)
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        return time.monotonic() - t0, p.returncode, err, started
    finally:
        p.kill()
        p.wait()
        for pid in _descendants(p.pid) + started:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _gone(pids: list[int], within_s: float = 3.0) -> list[int]:
    """Those of ``pids`` still running after ``within_s`` seconds (the fork server and the
    resource tracker end when they see their parent's pipes close)."""
    deadline = time.monotonic() + within_s
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def test_sigterm_stops_measure_and_its_workers_within_seconds() -> None:
    args = [sys.executable, "-m", "tensorwire", "measure", "--model", "zoo:vgg16", "--size-scale", "0.03"]
    args += ["-n", "2", "--mode", "fifo", "--iterations", "1000000", "--json"]
    took, status, err, started = _start_and_stop(args, 1)
    assert status == 128 + signal.SIGTERM, err[-2000:]
    assert err.strip().splitlines()[-1] == "tensorwire: interrupted (SIGTERM)" and "Traceback" not in err, err
    assert took < BOUND_S, f"{took:.1f} s from SIGTERM to exit"
    assert not _gone(started), f"left running: {_gone(started)}"


def test_an_interrupted_run_local_ends_every_rank_within_seconds() -> None:
    took, status, err, started = _start_and_stop([sys.executable, "-c", RUN_LOCAL], 2)
    assert status == 128 + signal.SIGTERM, err[-2000:]
    assert took < BOUND_S, f"{took:.1f} s from SIGTERM to exit"
    assert not _gone(started), f"left running: {_gone(started)}"
