"""Standard output that cannot take the output: a full disk, a reader gone away, closed.
One line and exit 2 for the first and the last, exit 0 for the reader gone (as plain
``print`` output does); never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

TW = [sys.executable, "-m", "tensorwire"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize(
    "args",
    [
        ("models",),
        ("strategies",),
        ("--version",),
        ("simulate", "-m", "resnet50", "-n", "4", "-b", "10Gbps", "-s", "ring"),
    ],
)
def test_a_full_disk_on_stdout_is_one_line(args: tuple[str, ...]) -> None:
    with open("/dev/full", "w") as full:
        p = subprocess.run([*TW, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [
        "tensorwire: error: stdout: cannot write the output (No space left on device)"
    ], p.stderr


@pytest.mark.parametrize("command", ["strategies", "models"])
def test_a_reader_that_goes_away_ends_the_command_quietly_with_0(command: str) -> None:
    # rich's tables ended the process with 1 on a broken pipe (`strategies | head -1`).
    p = subprocess.Popen([*TW, command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.readline()
    p.stdout.close()
    assert p.wait(timeout=120) == 0
    assert p.stderr.read() == ""


def test_a_closed_stdout_is_one_line() -> None:
    cmd = " ".join([*TW, "models"]) + " >&-"
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [
        "tensorwire: error: stdout: closed; give the command somewhere to write its output (a file or a pipe)"
    ], p.stderr
