"""Golden outputs: what a user sees, recorded once and compared byte for byte later.

Runs a fixed list of user-facing commands (``CASES``): the demo (``make demo`` runs exactly
``tensorwire compare`` and the GPU cluster's ``compare`` of ``demo_compare_gpu``),
``simulate`` in table and ``--json`` form across strategies, fabrics, collectives,
stragglers and failures, ``compare``, ``jobs``, ``sweep`` to CSV and JSON,
``strategies``, ``models``, ``topology``, ``import-trace``, bad inputs (their one-line
errors and exit codes) and every reproduction script of ``benchmarks/reproductions/``.
Each case runs as its own process (``python -m tensorwire ARGS`` or ``python SCRIPT``, this
interpreter) in a fresh temporary directory, with stdout piped (so rich tables have their
fixed piped width of 160 columns). Its recording, ``tests/golden/NAME.txt``, holds the
command, the exit code, stdout exactly, stderr (normalised, below) and every file the
command wrote into its directory (text in full; a large or binary file as size and SHA-256).

    .venv/bin/python benchmarks/golden.py --check            # compare with tests/golden/
    .venv/bin/python benchmarks/golden.py --check --fast     # without the cases marked slow
    .venv/bin/python benchmarks/golden.py --record           # (re)write tests/golden/
    .venv/bin/python benchmarks/golden.py --check -k simulate_ring   # cases whose name has it

``--check`` prints a unified diff of each differing case (the first ``--diff-lines`` lines)
and exits 1 when any differs, is missing, or a recording has no case. ``make golden-check``
runs ``--check``; ``tests/docs/test_golden.py`` runs the cases not marked slow.

Normalisation, the only difference allowed between runs (the simulator is deterministic;
only wall-clock times are not):

- stderr progress lines off a terminal, ``tensorwire: [k/N] LABEL (T s)``: the elapsed
  time ``T`` becomes ``<T>`` (regex ``PROGRESS_STEP``);
- stdout's last line of ``sweep``, ``FILE: N configurations in T s on WHERE``: ``T``
  becomes ``<T>`` (regex ``SWEEP_DONE``);
- stderr lines of a long single run, ``tensorwire: simulating: ... (T s)``, printed every
  10 s of wall-clock time, are dropped (regex ``PROGRESS_RUN``);
- the temporary directory's path becomes ``$TMP`` in stdout, stderr and files;
- a reproduction script that fails keeps only the last line of its stderr (the exception),
  as a traceback names source lines that a refactor moves.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
SCRIPTS = ROOT / "benchmarks" / "reproductions"
DATA = ROOT / "tests" / "unit" / "workloads" / "data"

#: Files larger than this (bytes) are recorded as size and SHA-256 instead of their text.
MAX_TEXT_FILE = 64 * 1024
#: A case that runs longer than this (seconds) fails.
TIMEOUT_S = 300.0

PROGRESS_STEP = re.compile(r"^(tensorwire: \[\d+/\d+\] .*) \(\d+\.\d s\)$")
PROGRESS_RUN = re.compile(r"^tensorwire: .*: \d+/\d+ iterations, .* \(\d+ s\)$")
SWEEP_DONE = re.compile(r"^(.*: \d+ configurations? in )\d+\.\d s( on .*)$")

RANKS = {"rank0.json.gz": DATA / "ddp_tiny_rank0.json.gz", "rank1.json.gz": DATA / "ddp_tiny_rank1.json.gz"}
BAD_WORKLOAD = '{"format": "tensorwire-workload/1", "name": "x", "layers": [}'


@dataclass(frozen=True)
class Case:
    """One command. ``args`` follow ``tensorwire`` (or the script's path when ``script``)."""

    name: str
    args: tuple[str, ...]
    script: bool = False
    slow: bool = False
    #: Input files placed in the working directory: name -> repository file or literal text.
    inputs: dict[str, Path | str] = field(default_factory=dict)

    def command(self) -> str:
        head = ["python", str(Path(self.args[0]).relative_to(ROOT))] if self.script else ["tensorwire"]
        rest = self.args[1:] if self.script else self.args
        return " ".join(head + [_quote(a) for a in rest])


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w@%+=:,./>-]+", arg) and ">" not in arg else "'" + arg.replace("'", "'\\''") + "'"


def _cli(name: str, *args: str, slow: bool = False, inputs: dict[str, Path | str] | None = None) -> Case:
    return Case(name, tuple(args), slow=slow, inputs=dict(inputs or {}))


SMALL = ("-n", "8", "-b", "25Gbps")
LEAF_SPINE = "leaf-spine:hosts_per_leaf=8,spines=2,uplink=25Gbps"

CLI_CASES: tuple[Case, ...] = (
    # The demo: `make demo` runs exactly these two.
    _cli("demo_compare", "compare"),
    _cli(
        "demo_compare_gpu",
        "compare",
        "--model",
        "llama3_8b",
        "--gpu",
        "h100",
        "-n",
        "64",
        "--topology",
        "rail:node=dgx-h100",
    ),
    _cli(
        "compare_inception_netop",
        "compare",
        "--model",
        "inception_v3",
        "--gpu",
        "netop2020",
        "-n",
        "32",
        "-b",
        "10Gbps",
        "--strategies",
        "ps,ps:num_ps=8,ring",
    ),
    _cli(
        "compare_llama3_8b_rail",
        "compare",
        "--model",
        "llama3_8b",
        "--gpu",
        "a100-80gb",
        "-n",
        "64",
        "--topology",
        "rail:node=dgx-a100",
    ),
    _cli(
        "compare_llama3_8b_rail_json",
        "compare",
        "--model",
        "llama3_8b",
        "--gpu",
        "a100-80gb",
        "-n",
        "64",
        "--topology",
        "rail:node=dgx-a100",
        "--json",
    ),
    # simulate, table output
    _cli(
        "simulate_ring_vgg16",
        "simulate",
        "--model",
        "vgg16",
        "--workers",
        "32",
        "--bandwidth",
        "25Gbps",
        "--strategy",
        "ring",
    ),
    _cli(
        "simulate_ps_json",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "64",
        "-b",
        "100Gbps",
        "-s",
        "ps:num_ps=4,placement=balanced",
        "--json",
    ),
    _cli(
        "simulate_ps_ina_multicast",
        "simulate",
        "--model",
        "vgg16",
        *SMALL,
        "-s",
        "ps+multicast+ina:pipeline=4MiB,credit=4MiB",
    ),
    _cli(
        "simulate_fsdp_llama_json",
        "simulate",
        "--model",
        "llama3_8b",
        "--gpu",
        "a100-80gb",
        "--seq-len",
        "8192",
        "-n",
        "64",
        "--topology",
        "rail:node=dgx-a100,nodes_per_group=8",
        "-s",
        "fsdp:param_dtype=bf16,reduce_dtype=fp32",
        "--json",
    ),
    _cli(
        "simulate_fsdp_llama",
        "simulate",
        "--model",
        "llama3_8b",
        "--gpu",
        "a100-80gb",
        "--seq-len",
        "8192",
        "-n",
        "64",
        "--topology",
        "rail:node=dgx-a100,nodes_per_group=8",
        "-s",
        "fsdp:param_dtype=bf16,reduce_dtype=fp32,prefetch=2",
    ),
    _cli(
        "simulate_hsdp",
        "simulate",
        "--model",
        "gpt2",
        "-n",
        "16",
        "-b",
        "100Gbps",
        "--topology",
        "nodes:machine=p3.16xlarge",
        "-s",
        "hsdp",
    ),
    _cli(
        "simulate_zero2_json",
        "simulate",
        "--model",
        "bert_large",
        "-n",
        "16",
        "-b",
        "50Gbps",
        "-s",
        "zero2:bucket=50MiB",
        "--json",
    ),
    _cli(
        "simulate_hierarchical",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "32",
        "-b",
        "25Gbps",
        "-s",
        "hierarchical:gpus_per_node=8",
    ),
    _cli(
        "simulate_double_tree_json",
        "simulate",
        "--model",
        "bert_base",
        "-n",
        "32",
        "-b",
        "100Gbps",
        "-s",
        "double-tree:chunk=1MiB",
        "--json",
    ),
    _cli(
        "simulate_multitree",
        "simulate",
        "--model",
        "bert_base",
        "-n",
        "8",
        "-b",
        "100Gbps",
        "--topology",
        "nodes:machine=p3.16xlarge",
        "-s",
        "multitree",
    ),
    _cli(
        "simulate_tree_nodes_json",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "8",
        "-b",
        "100Gbps",
        "--topology",
        "nodes:machine=p3.16xlarge",
        "-s",
        "tree:trees=2",
        "--json",
    ),
    _cli(
        "simulate_priority",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "16",
        "-b",
        "25Gbps",
        "-s",
        "ring:schedule=priority,partition=4MiB,credit=8MiB",
    ),
    _cli(
        "simulate_priority_trace",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "4",
        "-b",
        "25Gbps",
        "-s",
        "ring:schedule=priority,partition=4MiB,credit=8MiB",
        "--trace",
        "t.json",
        "--trace-workers",
        "2",
    ),
    _cli(
        "simulate_fusion_butterfly_json",
        "simulate",
        "--model",
        "inception_v3",
        "-n",
        "16",
        "-b",
        "10Gbps",
        "-s",
        "butterfly:fusion=64MiB,cycle=5ms",
        "--json",
    ),
    _cli(
        "simulate_halving_doubling_analytical",
        "simulate",
        "--model",
        "resnet101",
        *SMALL,
        "--network",
        "analytical",
        "-s",
        "halving-doubling",
    ),
    _cli(
        "simulate_collective_allreduce",
        "simulate",
        "--collective",
        "allreduce:1MiBx50",
        "-n",
        "1024",
        "-b",
        "25Gbps",
        "--topology",
        "ring",
        "-s",
        "ring",
    ),
    _cli(
        "simulate_collective_allgather_json",
        "simulate",
        "--collective",
        "allgather:64MiB",
        *SMALL,
        "-s",
        "ring",
        "--json",
    ),
    _cli(
        "simulate_collective_reducescatter",
        "simulate",
        "--collective",
        "reducescatter:16MiBx4",
        *SMALL,
        "-s",
        "halving-doubling",
    ),
    _cli(
        "simulate_collective_broadcast_json",
        "simulate",
        "--collective",
        "broadcast:8MiB",
        *SMALL,
        "-s",
        "tree",
        "--json",
    ),
    _cli("simulate_collective_fsdp", "simulate", "--collective", "allreduce:1MiB", *SMALL, "-s", "fsdp"),
    _cli("simulate_collective_alltoall", "simulate", "--collective", "alltoall:4MiBx2", *SMALL, "-s", "ring"),
    _cli(
        "simulate_rail_llama70b",
        "simulate",
        "--model",
        "llama3_70b",
        "--gpu",
        "h100",
        "--seq-len",
        "8192",
        "-n",
        "1024",
        "-b",
        "400Gbps",
        "--topology",
        "rail:node=dgx-h100",
        "-s",
        "fsdp:param_dtype=bf16,reduce_dtype=fp32",
    ),
    _cli(
        "simulate_leaf_spine_spread",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "32",
        "-b",
        "25Gbps",
        "--topology",
        LEAF_SPINE,
        "--placement",
        "spread",
        "-s",
        "ring",
        "--json",
    ),
    _cli(
        "simulate_leaf_spine_oversubscribed",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "1024",
        "-b",
        "25Gbps",
        "--topology",
        "leaf-spine:hosts_per_leaf=32,spines=8,uplink=25Gbps",
        "-s",
        "ring",
    ),
    _cli(
        "simulate_stragglers_lognormal",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "1024",
        "-b",
        "25Gbps",
        "-s",
        "ring",
        "--stragglers",
        "lognormal:0.2",
    ),
    _cli(
        "simulate_stragglers_fixed_json",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "4",
        "-b",
        "25Gbps",
        "-s",
        "ring",
        "--stragglers",
        "fixed:1,1.5,1,1",
        "--json",
    ),
    _cli(
        "simulate_fail_host",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "64",
        "-b",
        "25Gbps",
        "-s",
        "ring",
        "--fail",
        "h3@0.1s:rate=0.5",
    ),
    _cli(
        "simulate_fail_link_json",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "32",
        "-b",
        "25Gbps",
        "--topology",
        LEAF_SPINE,
        "-s",
        "ring",
        "--fail",
        "leaf0->spine1@0s:rate=0.5",
        "--json",
    ),
    _cli(
        "simulate_compute_speedup",
        "simulate",
        "--model",
        "resnet101",
        "--gpu",
        "netop2020",
        "-n",
        "32",
        "-b",
        "25Gbps",
        "--latency",
        "0s",
        "-s",
        "ps+multicast+ina",
        "--compute-speedup",
        "3",
    ),
    _cli(
        "simulate_add_modules_json",
        "simulate",
        "--model",
        "inception_v3",
        "--gpu",
        "netop2020",
        *SMALL,
        "-s",
        "ps+ina",
        "--add-modules",
        "compute:5",
        "--json",
    ),
    _cli(
        "simulate_import_trace_workload",
        "simulate",
        "--workload",
        "rank0.json.gz",
        "-n",
        "256",
        "-b",
        "200Gbps",
        "-s",
        "zero2",
        inputs={"rank0.json.gz": RANKS["rank0.json.gz"]},
    ),
    # other commands
    _cli(
        "jobs_leaf_spine",
        "jobs",
        "--job",
        "a:resnet50:16:ring",
        "--job",
        "b:vgg16:16:zero2",
        "-n",
        "32",
        "-b",
        "25Gbps",
        "--topology",
        LEAF_SPINE,
        "--placement",
        "spread",
    ),
    _cli(
        "jobs_ps_place_json",
        "jobs",
        "--job",
        "a:resnet50:8:ring",
        "--job",
        "ps:vgg16:8:ps:num_ps=4",
        "-b",
        "25Gbps",
        "--topology",
        "leaf-spine:hosts_per_leaf=12,spines=2,uplink=25Gbps",
        "--place",
        "a=0-7",
        "--json",
    ),
    _cli(
        "sweep_csv",
        "sweep",
        "--model",
        "resnet50,vgg16",
        "--workers",
        "8,32",
        "--bandwidth",
        "10Gbps,100Gbps",
        "--strategies",
        "ps,ring",
        "--out",
        "r.csv",
    ),
    _cli(
        "sweep_json",
        "sweep",
        "--model",
        "bert_base",
        "--workers",
        "8,16",
        "--bandwidth",
        "25Gbps",
        "--strategies",
        "ring,double-tree,zero1,ps:num_ps=2",
        "--out",
        "r.json",
    ),
    _cli("strategies", "strategies"),
    _cli("models", "models"),
    _cli("topology_p3_trees", "topology", "--preset", "p3.16xlarge", "--trees", "2"),
    _cli("import_trace", "import-trace", "rank0.json.gz", "rank1.json.gz", "--out", "job.json", inputs=dict(RANKS)),
    # bad inputs: one line on stderr, exit code 2, no output file
    _cli("err_unknown_strategy", "simulate", "--model", "resnet50", *SMALL, "-s", "nosuch"),
    _cli("err_unknown_model", "simulate", "--model", "nosuch", *SMALL, "-s", "ring"),
    _cli("err_zero_workers", "simulate", "--model", "resnet50", "-n", "0", "-b", "25Gbps", "-s", "ring"),
    _cli("err_bad_bandwidth", "simulate", "--model", "resnet50", "-n", "8", "-b", "fast", "-s", "ring"),
    _cli("err_negative_latency", "simulate", "--model", "resnet50", *SMALL, "--latency", "-5us", "-s", "ring"),
    _cli(
        "err_bad_topology", "simulate", "--model", "resnet50", *SMALL, "--topology", "leaf-spine:spines=0", "-s", "ring"
    ),
    _cli("err_bad_option_value", "simulate", "--model", "resnet50", *SMALL, "-s", "ring:fusion=abc"),
    _cli("err_unknown_option", "simulate", "--model", "resnet50", *SMALL, "-s", "ps:nosuch=1"),
    _cli("err_num_ps_zero", "simulate", "--model", "resnet50", *SMALL, "-s", "ps:num_ps=0"),
    _cli("err_collective_kind", "simulate", "--collective", "nosuch:1MiB", *SMALL, "-s", "ring"),
    _cli("err_collective_size", "simulate", "--collective", "allreduce:0B", *SMALL, "-s", "ring"),
    _cli("err_stragglers", "simulate", "--model", "resnet50", *SMALL, "-s", "ring", "--stragglers", "normal:-1"),
    _cli("err_fail_target", "simulate", "--model", "resnet50", *SMALL, "-s", "ring", "--fail", "h99@0s"),
    _cli("err_iterations", "simulate", "--model", "resnet50", *SMALL, "-s", "ring", "--iterations", "0"),
    _cli(
        "err_max_flows", "simulate", "--model", "vgg16", "-n", "64", "-b", "25Gbps", "-s", "ps", "--max-flows", "1000"
    ),
    _cli("err_llm_option_on_zoo", "simulate", "--model", "resnet50", *SMALL, "-s", "ring", "--seq-len", "128"),
    _cli(
        "err_fail_link_down",
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "32",
        "-b",
        "25Gbps",
        "--topology",
        LEAF_SPINE,
        "-s",
        "ring",
        "--fail",
        "leaf0->spine1@0s",
    ),
    _cli("err_compare_unknown", "compare", "--model", "resnet50", *SMALL, "--strategies", "ring,nosuch"),
    _cli("err_jobs_spec", "jobs", "--job", "a:resnet50", "-b", "25Gbps"),
    _cli(
        "err_sweep_workers",
        "sweep",
        "--model",
        "resnet50",
        "--workers",
        "0,8",
        "--bandwidth",
        "25Gbps",
        "--strategies",
        "ring",
        "--out",
        "r.csv",
    ),
    _cli(
        "err_sweep_out_format",
        "sweep",
        "--model",
        "resnet50",
        "--workers",
        "8",
        "--bandwidth",
        "25Gbps",
        "--strategies",
        "ring",
        "--out",
        "r.txt",
    ),
    _cli("err_import_missing", "import-trace", "missing.json", "--out", "job.json"),
    _cli(
        "err_workload_bad_json",
        "simulate",
        "--workload",
        "bad.json",
        *SMALL,
        "-s",
        "ring",
        inputs={"bad.json": BAD_WORKLOAD},
    ),
    _cli("err_topology_preset", "topology", "--preset", "nosuch"),
    _cli("err_missing_strategy", "simulate", "--model", "resnet50", *SMALL),
)

#: Reproduction scripts without a ``--no-plot`` option (they write no plots); the others get it.
PLOTLESS = frozenset({"llm_torchtitan.py"})


def _script_cases() -> tuple[Case, ...]:
    cases = []
    for path in sorted(SCRIPTS.glob("*.py")):
        if path.name.startswith("_"):
            continue
        extra = () if path.name in PLOTLESS else ("--no-plot",)
        cases.append(Case("repro_" + path.stem, (str(path), *extra), script=True, slow=path.stem in SLOW_SCRIPTS))
    return tuple(cases)


#: Reproduction scripts left out of the fast set (``--fast`` and the pytest test): none yet;
#: each ran in 0.2-2.3 s of wall-clock time on this project's 2-core machine.
SLOW_SCRIPTS: frozenset[str] = frozenset()

CASES: tuple[Case, ...] = CLI_CASES + _script_cases()


@dataclass(frozen=True)
class Outcome:
    case: Case
    text: str
    seconds: float


def normalise_stdout(text: str) -> str:
    return "".join(SWEEP_DONE.sub(r"\1<T> s\2", line) for line in text.splitlines(keepends=True))


def normalise_stderr(text: str) -> str:
    lines = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        if PROGRESS_RUN.match(body):
            continue
        m = PROGRESS_STEP.match(body)
        lines.append(f"{m.group(1)} (<T> s)\n" if m else line)
    return "".join(lines)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # Nothing from the caller's terminal may shape the output.
    for var in (
        "COLUMNS",
        "LINES",
        "FORCE_COLOR",
        "NO_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "TTY_COMPATIBLE",
        "TTY_INTERACTIVE",
        "JUPYTER_COLUMNS",
        "JUPYTER_LINES",
        "PYTHONWARNINGS",
    ):
        env.pop(var, None)
    env.update(PYTHONIOENCODING="utf-8", TERM="dumb", PYTHONPATH=str(ROOT / "python"))
    return env


def _section(title: str, body: str) -> str:
    end = "" if body == "" or body.endswith("\n") else "\n[no newline at end]\n"
    return f"==== {title} ====\n{body}{end}"


def run(case: Case) -> Outcome:
    """Runs ``case`` in a fresh directory; returns its recording's text."""
    with tempfile.TemporaryDirectory(prefix="tw-golden-") as tmp:
        work = Path(tmp)
        for name, source in case.inputs.items():
            if isinstance(source, Path):
                shutil.copyfile(source, work / name)
            else:
                (work / name).write_text(source)
        argv = [sys.executable, *case.args] if case.script else [sys.executable, "-m", "tensorwire", *case.args]
        start = time.monotonic()
        proc = subprocess.run(
            argv, cwd=work, env=_env(), capture_output=True, timeout=TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
        )
        seconds = time.monotonic() - start
        stdout = proc.stdout.decode("utf-8", errors="backslashreplace").replace(tmp, "$TMP")
        stderr = proc.stderr.decode("utf-8", errors="backslashreplace").replace(tmp, "$TMP")
        if case.script and proc.returncode != 0:
            last = [line for line in stderr.splitlines() if line.strip()][-1:]
            stderr = "[traceback elided; its last line:]\n" + "".join(f"{line}\n" for line in last)
        parts = [
            f"$ {case.command()}\n",
            f"exit: {proc.returncode}\n",
            _section("stdout", normalise_stdout(stdout)),
            _section("stderr", normalise_stderr(stderr)),
        ]
        for path in sorted(p for p in work.rglob("*") if p.is_file() and p.name not in case.inputs):
            rel = path.relative_to(work).as_posix()
            data = path.read_bytes()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is None or len(data) > MAX_TEXT_FILE:
                parts.append(f"==== file {rel}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()} ====\n")
            else:
                parts.append(_section(f"file {rel}", text.replace(tmp, "$TMP")))
        return Outcome(case, "".join(parts), seconds)


#: The libraries that draw the tables and errors; their versions are recorded beside the
#: outputs (``tests/golden/ENVIRONMENT``), as a new rich or click may draw a table differently.
RENDERERS = ("rich", "click")


def environment() -> str:
    return "".join(f"{name} {importlib.metadata.version(name)}\n" for name in RENDERERS)


def environment_note() -> str:
    """Empty, or a line saying that the renderers' versions differ from the recording's."""
    path = GOLDEN / "ENVIRONMENT"
    recorded = path.read_text() if path.exists() else ""
    if recorded == environment():
        return ""
    was, now = ", ".join(recorded.splitlines()) or "unknown", ", ".join(environment().splitlines())
    return f"note: recorded with {was}, now {now}: a table drawn differently may be theirs\n"


def golden_path(case: Case) -> Path:
    return GOLDEN / f"{case.name}.txt"


def diff(case: Case, actual: str, limit: int = 60) -> str | None:
    """A unified diff (at most ``limit`` lines) between the recording and ``actual``, or None."""
    path = golden_path(case)
    if not path.exists():
        return f"{case.name}: no recording at {path.relative_to(ROOT)} (run --record)\n"
    expected = path.read_text(encoding="utf-8")
    if expected == actual:
        return None
    lines = list(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            f"recorded/{case.name}",
            f"now/{case.name}",
        )
    )
    if not lines:  # differs only in line endings or a final newline
        lines = [f"{case.name}: differs only in line endings\n"]
    cut = lines[:limit]
    if len(lines) > limit:
        cut.append(f"... {len(lines) - limit} more diff lines\n")
    return "".join(line if line.endswith("\n") else line + "\n" for line in cut)


def select(fast: bool, patterns: Sequence[str]) -> list[Case]:
    return [c for c in CASES if not (fast and c.slow) and (not patterns or any(p in c.name for p in patterns))]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", action="store_true", help="write the outputs to tests/golden/")
    mode.add_argument("--check", action="store_true", help="compare the outputs with tests/golden/")
    mode.add_argument("--list", action="store_true", help="list the cases and their commands")
    ap.add_argument("--fast", action="store_true", help="leave out the cases marked slow")
    ap.add_argument("-k", action="append", default=[], metavar="TEXT", help="only cases whose name contains TEXT")
    ap.add_argument("-j", "--jobs", type=int, default=min(4, os.cpu_count() or 1), help="cases run at once")
    ap.add_argument("--diff-lines", type=int, default=60, help="diff lines shown per differing case")
    opts = ap.parse_args(argv)
    cases = select(opts.fast, opts.k)
    if opts.list:
        for c in cases:
            print(f"{c.name}{' (slow)' if c.slow else ''}: {c.command()}")
        return 0
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max(1, opts.jobs)) as pool:
        outcomes = list(pool.map(run, cases))
    wall = time.monotonic() - start
    if opts.record:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for o in outcomes:
            golden_path(o.case).write_text(o.text, encoding="utf-8")
        if not opts.k and not opts.fast:
            (GOLDEN / "ENVIRONMENT").write_text(environment())
        if not opts.k and not opts.fast:
            for stale in sorted(set(GOLDEN.glob("*.txt")) - {golden_path(c) for c in CASES}):
                stale.unlink()
                print(f"removed {stale.relative_to(ROOT)} (no case)")
        print(f"recorded {len(outcomes)} cases in {GOLDEN.relative_to(ROOT)} ({wall:.1f} s)")
        return 0
    bad = 0
    for o in outcomes:
        d = diff(o.case, o.text, opts.diff_lines)
        if d is not None:
            bad += 1
            print(d, end="")
    orphans = sorted(set(GOLDEN.glob("*.txt")) - {golden_path(c) for c in CASES})
    for path in orphans:
        print(f"{path.relative_to(ROOT)}: a recording without a case")
    if bad:
        print(environment_note(), end="")
    slowest = max(outcomes, key=lambda o: o.seconds, default=None)
    print(
        f"golden: {len(outcomes) - bad} of {len(outcomes)} cases identical"
        f"{f', {len(orphans)} recordings without a case' if orphans else ''} ({wall:.1f} s"
        f"{f'; slowest {slowest.case.name} {slowest.seconds:.1f} s' if slowest else ''})"
    )
    return 1 if bad or orphans else 0


if __name__ == "__main__":
    sys.exit(main())
