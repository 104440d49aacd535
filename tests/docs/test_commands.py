"""Every command of README.md's tour and of docs/guide.md runs as written.

The commands are read from the documents themselves: the ``$ `` lines of their
```` ```console ```` blocks (a trailing ``\\`` continues a command on the next line), the
lines of their ```` ```sh ```` blocks, and their ```` ```python ```` snippets. Each is one
test, run in doc order in one working directory that holds the files the docs name
(``rank0.json`` and ``rank1.json``: the 2-rank profiler fixture of tests/unit/workloads;
the nccl-tests logs of tests/fixtures/nccl-tests at the same relative path as in a checkout;
``job.json`` and ``cluster.json`` are written by the docs' own ``import-trace`` and
``calibrate`` steps). ``tensorwire ARGS`` runs as ``python -m tensorwire ARGS`` with this
interpreter.

Each must exit 0 without a traceback within ``WALL_S`` of wall-clock time. The guide's
LLM ``compare`` on 1,024 H100s must also take at most ``LLM_COMPARE_CPU_S`` of CPU (the
child's user + system time, which load on the machine does not inflate).

Skipped, with the reason: what cannot run in a test (``make`` targets that build or run the
whole suite, activating the venv), and what needs something this machine may lack (torch,
root and network namespaces, a GPU, the network).
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "README.md", ROOT / "docs" / "guide.md")
DATA = ROOT / "tests" / "unit" / "workloads" / "data"

WALL_S = 60.0
"""Wall-clock bound of every command: the docs promise sub-second runs, so this is generous."""
LLM_COMPARE_CPU_S = 10.0
"""CPU-time bound of the guide's `compare --model llama3_70b ... -n 1024` (rail of DGX H100)."""

FIXTURES = {"rank0.json": DATA / "ddp_tiny_rank0.json.gz", "rank1.json": DATA / "ddp_tiny_rank1.json.gz"}
"""Files the docs name that no earlier command writes: the shipped 2-rank profiler traces."""
NCCL_TESTS_LOGS = "tests/fixtures/nccl-tests"
"""nccl-tests logs the docs calibrate from, by their path in a checkout (copied as they are)."""

OUTPUT_OPTIONS = ("--out", "-o", "--trace")


@dataclass(frozen=True)
class Command:
    doc: str  # README.md or guide.md
    line: int  # first line of the command in the doc
    text: str  # as written (continuations joined), comment kept
    kind: str  # "shell" or "python"

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text, comments=True) if self.kind == "shell" else []

    @property
    def id(self) -> str:
        short = " ".join(self.argv) if self.kind == "shell" else "python snippet"
        return f"{self.doc}:{self.line}: {short}"


def extract(path: Path) -> list[Command]:
    """The commands of ```console (`$ ` lines), ```sh (every line) and ```python blocks."""
    out: list[Command] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    lang: Optional[str] = None
    pending: Optional[tuple[int, str]] = None  # a `\`-continued command
    snippet: list[str] = []
    snippet_start = 0
    for no, line in enumerate(lines, start=1):
        if lang is None:
            m = re.match(r"^```(\w+)\s*$", line)
            if m:
                lang, snippet, snippet_start = m.group(1), [], no + 1
            continue
        if line.startswith("```"):
            if lang == "python" and snippet:
                out.append(Command(path.name, snippet_start, "\n".join(snippet) + "\n", "python"))
            lang = None
            continue
        if lang == "python":
            snippet.append(line)
            continue
        if lang not in ("console", "sh"):
            continue
        if pending is not None:
            start, text = pending
            text = text[:-1].rstrip() + " " + line.strip()
        elif lang == "console" and line.startswith("$ "):
            start, text = no, line[2:].strip()
        elif lang == "sh" and line.strip() and not line.lstrip().startswith("#"):
            start, text = no, line.strip()
        else:
            continue
        if text.endswith("\\"):
            pending = (start, text)
        else:
            pending = None
            out.append(Command(path.name, start, text, "shell"))
    return out


def makefile_recipe(target: str) -> list[str]:
    """The command lines of a Makefile target's recipe."""
    recipe: list[str] = []
    inside = False
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        if re.match(rf"^{re.escape(target)}\s*:", line):
            inside = True
        elif inside and line.startswith("\t"):
            recipe.append(line.strip())
        elif inside:
            break
    return recipe


COMMANDS = [c for doc in DOCS for c in extract(doc)]


def skip_reason(c: Command) -> Optional[str]:
    """Why a command cannot run here, or None."""
    if c.kind == "python":
        return None
    argv = c.argv
    if argv[:2] == ["make", "demo"]:
        return None  # runs its recipe's tensorwire command(s), see run_command
    if argv[:2] == ["make", "test"]:
        return "`make test` runs the whole test suite, this test included"
    if argv[:1] == ["make"]:
        return f"`{c.text}` is a build target"
    if argv[:1] in (["."], ["source"]):
        return "activates the venv; these tests already run in its interpreter"
    if argv[:1] != ["tensorwire"]:
        return f"not a tensorwire command: {c.text}"
    sub = argv[1] if len(argv) > 1 else ""
    if sub == "validate":
        return "the testbed needs root and network namespaces (tests/testbed runs it)"
    if sub in ("profile", "measure", "bench") and importlib.util.find_spec("torch") is None:
        return "needs torch (pip install -e '.[torch]')"
    if sub == "report" and importlib.util.find_spec("plotly") is None:
        return "needs plotly (pip install -e '.[report]')"
    if "--ray" in argv:
        return "needs a Ray cluster (network)"
    if sub == "topology" and ("--detect" in argv or not {"--preset", "--adjacency"} & set(argv)):
        return "reads this machine's GPUs"
    return None


def outputs(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in OUTPUT_OPTIONS]


PRODUCERS = {out: c for c in COMMANDS if c.kind == "shell" for out in outputs(c.argv)}
"""Which doc command writes a file that a later command reads (job.json)."""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("docs-commands")
    for name, src in FIXTURES.items():
        (d / name).write_bytes(gzip.decompress(src.read_bytes()))
    (d / NCCL_TESTS_LOGS).mkdir(parents=True)
    for log in (ROOT / NCCL_TESTS_LOGS).glob("*.log"):
        (d / NCCL_TESTS_LOGS / log.name).write_bytes(log.read_bytes())
    yield d
    for f in d.iterdir():  # the guide's FSDP trace is hundreds of MB
        if f.is_file() and f.stat().st_size > 20_000_000:
            f.unlink()


@dataclass
class Outcome:
    rc: Optional[int]  # None: killed at the wall-clock bound
    wall_s: float
    cpu_s: float
    stdout: str
    stderr: str


def run(argv: list[str], cwd: Path, timeout: float = WALL_S) -> Outcome:
    """Run argv; CPU time is the child's (and its children's) user + system time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.Popen(
        argv,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "COLUMNS": "120"},
    )
    rc: Optional[int]
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc = None
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Outcome(rc, wall, cpu, out, err)


def tensorwire_argv(argv: list[str]) -> list[str]:
    assert argv[0] == "tensorwire"
    return [sys.executable, "-m", "tensorwire", *argv[1:]]


def describe(c: Command, o: Outcome) -> str:
    rc = f"killed after {WALL_S:.0f} s" if o.rc is None else f"exit {o.rc}"
    tail = "\n".join((o.stderr or o.stdout).strip().splitlines()[-5:])
    return f"{c.doc}:{c.line}: `{c.text}`: {rc}, {o.wall_s:.1f} s wall, {o.cpu_s:.1f} s CPU\n{tail}"


def check(c: Command, o: Outcome) -> None:
    assert o.rc == 0, describe(c, o)
    assert "Traceback" not in o.stderr, describe(c, o)
    assert o.wall_s <= WALL_S, describe(c, o)


def is_llm_compare_at_scale(argv: list[str]) -> bool:
    """The guide's `compare --model llama3_70b ... -n 1024 --topology rail:...`."""
    if argv[:2] != ["tensorwire", "compare"]:
        return False
    model = argv[argv.index("--model") + 1] if "--model" in argv else ""
    workers = argv[argv.index("-n") + 1] if "-n" in argv else "0"
    return model.startswith("llama3") and int(workers) >= 1024


def ensure_inputs(c: Command, workdir: Path) -> None:
    """Run the earlier doc command that writes a file this one reads, if it has not run."""
    for arg in c.argv:
        producer = PRODUCERS.get(arg)
        if producer is not None and producer != c and not (workdir / arg).exists():
            check(producer, run(tensorwire_argv(producer.argv), workdir))


def test_the_docs_have_commands() -> None:
    """The extraction finds the tour and the guide (a change of layout fails here)."""
    by_doc = {d.name: [c for c in COMMANDS if c.doc == d.name] for d in DOCS}
    assert sum(c.kind == "shell" and c.argv[:1] == ["tensorwire"] for c in by_doc["README.md"]) >= 15
    assert sum(c.kind == "shell" and c.argv[:1] == ["tensorwire"] for c in by_doc["guide.md"]) >= 7
    assert any(c.kind == "python" for c in by_doc["README.md"])
    assert any(is_llm_compare_at_scale(c.argv) for c in by_doc["guide.md"])
    assert "job.json" in PRODUCERS
    assert "cluster.json" in PRODUCERS


@pytest.mark.parametrize("c", COMMANDS, ids=[c.id for c in COMMANDS])
def test_doc_command_runs_as_written(c: Command, workdir: Path) -> None:
    reason = skip_reason(c)
    if reason is not None:
        pytest.skip(reason)
    if c.kind == "python":
        script = workdir / f"snippet_{c.doc.replace('.', '_')}_{c.line}.py"
        script.write_text(c.text, encoding="utf-8")
        check(c, run([sys.executable, script.name], workdir))
        return
    argv = c.argv
    if argv[:2] == ["make", "demo"]:
        # `make demo` = build (the environment these tests run in) + its recipe's commands.
        recipe = [shlex.split(r) for r in makefile_recipe("demo")]
        assert recipe and all(r[:1] == ["tensorwire"] for r in recipe), recipe
        for r in recipe:
            check(c, run(tensorwire_argv(r), workdir))
        return
    ensure_inputs(c, workdir)
    o = run(tensorwire_argv(argv), workdir)
    check(c, o)
    for out in outputs(argv):
        assert (workdir / out).is_file(), f"{c.text}: wrote no {out}"
    if is_llm_compare_at_scale(argv):
        assert o.cpu_s <= LLM_COMPARE_CPU_S, describe(c, o)
