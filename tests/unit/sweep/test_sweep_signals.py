"""``sweep -j 2`` stopped by SIGTERM or SIGKILL leaves no worker behind: SIGTERM is handled
as Ctrl-C (one line, exit 143), and workers exit by themselves when their parent dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

GRID = [
    "sweep",
    "-m",
    "resnet50,vgg16,bert_base",
    "-n",
    "64,128,256",
    "-b",
    "1Gbps,10Gbps,25Gbps,100Gbps",
    "-s",
    "ps,ring,butterfly,halving-doubling,tree",
    "-j",
    "2",
    "--max-flows",
    "100000000000",
]  # long on purpose


def _default_sigint() -> None:
    """In the child: Ctrl-C's default disposition. A test run started in the background of a
    non-interactive shell inherits SIGINT ignored, and Python keeps an ignored SIGINT so
    (no KeyboardInterrupt), which would make these tests depend on how pytest was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start(tmp_path: Path) -> tuple[subprocess.Popen[str], list[int]]:
    p = subprocess.Popen(
        [sys.executable, "-m", "tensorwire", *GRID, "-o", str(tmp_path / "o.csv")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and p.poll() is None:
        workers = _children(p.pid)
        if len(workers) >= 3:  # two workers and the resource tracker
            time.sleep(1.0)  # let them start their first chunks
            return p, _children(p.pid)
        time.sleep(0.2)
    p.kill()
    pytest.fail(f"the sweep's workers did not start: {workers}, rc={p.poll()}")


def _gone(pids: list[int], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not any(_alive(w) for w in pids):
            return True
        time.sleep(0.2)
    return False


def test_sigterm_stops_the_sweep_and_its_workers(tmp_path: Path) -> None:
    p, workers = _start(tmp_path)
    p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=30)
        assert p.returncode == 128 + signal.SIGTERM, err
        assert err.strip().splitlines()[-1] == "tensorwire: interrupted (SIGTERM)" and "Traceback" not in err
        assert _gone(workers, 10), [w for w in workers if _alive(w)]
        assert not (tmp_path / "o.csv").exists()
    finally:
        p.kill()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


def test_sigkill_of_the_parent_ends_its_workers(tmp_path: Path) -> None:
    p, workers = _start(tmp_path)
    p.kill()
    p.wait(timeout=10)
    try:
        assert _gone(workers, 15), [w for w in workers if _alive(w)]
    finally:
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


@pytest.mark.parametrize(
    "signum, line", [(signal.SIGINT, "tensorwire: interrupted"), (signal.SIGTERM, "tensorwire: interrupted (SIGTERM)")]
)
def test_a_long_simulation_stops_on_a_signal_with_one_line(signum: int, line: str) -> None:
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tensorwire",
            "simulate",
            "-m",
            "resnet50",
            "-n",
            "64",
            "-b",
            "25Gbps",
            "-s",
            "ring",
            "--iterations",
            "1000000",
            "--max-flows",
            "100000000000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    time.sleep(3)
    assert p.poll() is None
    p.send_signal(signum)
    try:
        out, err = p.communicate(timeout=15)
    finally:
        p.kill()
    assert p.returncode == 128 + signum, err
    assert err.strip().splitlines() == [line] and out == ""
