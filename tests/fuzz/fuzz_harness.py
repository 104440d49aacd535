"""Run one fuzz case (``python -m tensorwire ARGS``) under a time and memory limit, judge it
by the project's rule for bad input, and record it for the session summary.

The rule: exit 0, or exit 2 with exactly one line ``tensorwire: error: ...`` on stderr; never
a traceback, a Rust panic or allocation failure, a signal (abort, segfault), and an answer
within ``TIMEOUT_S``.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, Union

TIMEOUT_S = float(os.environ.get("TENSORWIRE_FUZZ_TIMEOUT", "20"))
"""Wall-clock bound of one case (the docs promise sub-second runs; the machine may be loaded)."""
MEMORY_BYTES = 4 * 2**30
"""Address-space limit of one case: an input must be refused before it needs more."""

Arg = Union[str, bytes]


def examples(default: int) -> int:
    """Hypothesis examples per fuzz test: TENSORWIRE_FUZZ_EXAMPLES overrides the default."""
    v = os.environ.get("TENSORWIRE_FUZZ_EXAMPLES")
    return int(v) if v else default


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@dataclass
class Case:
    test: str
    argv: list[Arg]
    note: str = ""  # what was mutated, for files
    rc: Optional[int] = None  # None: killed at TIMEOUT_S; negative: killed by that signal
    wall_s: float = 0.0
    stdout: str = ""
    stderr: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def command(self) -> str:
        def show(a: Arg) -> str:
            s = a.decode("utf-8", "backslashreplace") if isinstance(a, bytes) else a
            s = s.encode("utf-8", "backslashreplace").decode("utf-8")
            return s if s and all(c.isalnum() or c in "-_:=,.@/>+" for c in s) else repr(s)

        return "tensorwire " + " ".join(show(a) for a in self.argv)

    @property
    def first_stderr_line(self) -> str:
        lines = self.stderr.strip().splitlines()
        # A Rust abort prints "memory allocation ... failed" first; a traceback ends in the error.
        if any(line.startswith("Traceback") for line in lines):
            return lines[-1][:300]
        return lines[0][:300] if lines else ""

    @property
    def outcome(self) -> str:
        if self.rc is None:
            return "timeout"
        if self.problems:
            return "fail"
        return "ok" if self.rc == 0 else "refused"


CASES: list[Case] = []
"""Every case this session ran, for the summary (tests/fuzz/conftest.py)."""


def _os_arg(a: Arg) -> bytes:
    """An argument as the bytes the child gets: lone surrogates become their UTF-8 bytes
    (non-UTF-8 for the child), as a shell would pass them."""
    if isinstance(a, bytes):
        return a
    try:
        return os.fsencode(a)
    except UnicodeEncodeError:
        return a.encode("utf-8", "surrogatepass")


def run(test: str, argv: Sequence[Arg], cwd: Path, note: str = "", timeout: float = TIMEOUT_S) -> Case:
    """Run ``python -m tensorwire *argv`` in cwd and judge it; the Case is recorded."""
    case = Case(test, list(argv), note)
    t0 = time.monotonic()
    p = subprocess.Popen(
        [sys.executable, "-m", "tensorwire", *map(_os_arg, argv)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_limits,
        start_new_session=True,
        env={**os.environ, "COLUMNS": "120", "RUST_BACKTRACE": "0"},
    )
    try:
        out, err = p.communicate(timeout=timeout)
        case.rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    case.wall_s = time.monotonic() - t0
    case.stdout = out.decode("utf-8", "backslashreplace")[-20_000:]
    case.stderr = err.decode("utf-8", "backslashreplace")[-20_000:]
    case.problems = judge(case)
    CASES.append(case)
    return case


def judge(case: Case) -> list[str]:
    """What breaks the rule, if anything."""
    problems = []
    text = case.stdout + case.stderr
    if case.rc is None:
        problems.append(f"no answer within {TIMEOUT_S:.0f} s")
    elif case.rc < 0:
        problems.append(f"killed by signal {signal.Signals(-case.rc).name}")
    elif case.rc not in (0, 2):
        problems.append(f"exit {case.rc}")
    if "Traceback" in text:
        problems.append("traceback")
    if "panicked" in text or "PanicException" in text:
        problems.append("Rust panic")
    if "memory allocation" in text:
        problems.append("allocation failure")
    if case.rc == 2:
        lines = case.stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("tensorwire: error:"):
            problems.append(f"refusal is {len(lines)} lines on stderr, not one `tensorwire: error:` line")
    return problems


def report(cases: Sequence[Case]) -> str:
    """The failing cases, one per line: command, outcome, first line of stderr."""
    lines = []
    for c in cases:
        rc = "timeout" if c.rc is None else f"exit {c.rc}"
        note = f" [{c.note}]" if c.note else ""
        lines.append(f"{c.command}{note}: {rc} ({', '.join(c.problems)}); {c.first_stderr_line}")
    return "\n".join(lines)
