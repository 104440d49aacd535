"""Fuzzing of the command line and the input files: bad input gets one line and exit 2.

Hypothesis draws (a) option values for ``simulate``, ``compare``, ``sweep``, ``jobs``,
``import-trace`` and ``topology`` (numbers with units at extreme magnitudes, integers past
2^64, malformed strategy, topology, straggler, failure and job specs, empty and non-UTF-8
strings) on top of a valid base command, and (b) mutations of the shipped inputs: a workload
file written from the zoo, the 2-rank Kineto fixture, Chakra traces from the test suite's
writer, five-attribute traces. Each case runs ``python -m tensorwire`` in a subprocess with
a 4 GiB address-space limit and a time bound (tests/fuzz/fuzz_harness.py) and must exit 0,
or 2 with one ``tensorwire: error:`` line; never a traceback, panic, abort or hang.

Each test collects every failing case of its examples and fails at the end with the whole
list (rather than stopping and shrinking at the first: a hang costs the full time bound).
The budget is small by default (the module runs in a few minutes on two cores);
``TENSORWIRE_FUZZ_EXAMPLES=N`` runs N examples per test. Examples are derandomized, so a
run is reproducible. Counts: the session summary and ``.pytest_cache/d/tensorwire-fuzz/``.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
import fuzz_harness as fh  # noqa: E402
import fuzz_mutations as fm  # noqa: E402

pytestmark = pytest.mark.fuzz

FLOWS = "--max-flows=2000000"
"""Flow budget of the base commands that take one (about a second of CPU): a drawn value
that makes a legitimate but long run is refused by it rather than timing out."""


def fuzz(
    name: str,
    strategy: st.SearchStrategy[Any],
    body: Callable[[Any], Sequence[fh.Case]],
    default: int,
    explicit: Sequence[Any] = (),
) -> None:
    """Run ``body`` on the ``explicit`` values (the reviews' reproductions) and on
    ``examples(default)`` drawn values; fail with every failing case."""
    failing: list[fh.Case] = []

    def inner(value: Any) -> None:
        failing.extend(c for c in body(value) if c.problems)

    for v in explicit:
        inner = example(v)(inner)
    test = settings(
        max_examples=fh.examples(default),
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(inner))
    test()
    ran = sum(c.test == name for c in fh.CASES)
    if failing:
        pytest.fail(f"{len(failing)} of {ran} cases broke the rule:\n" + fh.report(failing), pytrace=False)


# -- value pools ----------------------------------------------------------------------------

MAGNITUDES = (
    "0",
    "-0",
    "1",
    "-1",
    "0.5",
    "2.5",
    "1e-30",
    "1e-300",
    "5e-324",
    "1e-320",
    "1e9",
    "1e20",
    "1e30",
    "1e300",
    "1e308",
    "1.8e308",
    "1e400",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "4294967297",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "0x19",
    "1_000",
    " 1",
    "",
)
RATE_UNITS = ("bps", "Kbps", "Mbps", "Gbps", "Tbps")
SIZE_UNITS = ("B", "KB", "MB", "GB", "KiB", "MiB", "GiB")
TIME_UNITS = ("ns", "us", "ms", "s")
JUNK_UNITS = ("", "µs", "Gbs", " Gbps", "gbps", "GiBps", "%", "B/s")
INT_EDGES = (
    "0",
    "-1",
    "1",
    "2",
    "3",
    "4",
    "8",
    "1024",
    "65536",
    "1000000000",
    "2147483648",
    "4294967297",
    "9223372036854775808",
    "18446744073709551616",
    "99999999999999999999999",
    "1.5",
    "1e3",
    "abc",
    "",
    " 8",
    "٢",
)
SMALL_OR_ABSURD_INTS = tuple(v for v in INT_EDGES if v not in ("1024", "65536"))
"""For commands without a flow budget option (compare, sweep): no legitimately long runs."""
ZOO = ("resnet50", "vgg16", "alexnet", "bert_base", "inception_v3", "gpt2", "llama3_8b")
STRATEGIES = (
    "ps",
    "ps+multicast",
    "ps+ina",
    "ps+multicast+ina",
    "ring",
    "ring+multicast",
    "butterfly",
    "recursive-doubling",
    "halving-doubling",
    "tree",
    "multitree",
    "double-tree",
    "hierarchical",
    "zero1",
    "zero2",
    "fsdp",
    "zero3",
    "hsdp",
)
STRATEGY_KEYS = (
    "num_ps",
    "placement",
    "distribution",
    "barrier",
    "pipeline",
    "switch_memory",
    "trees",
    "penalty",
    "chunk",
    "gpus_per_node",
    "algorithm",
    "prefetch",
    "backward_prefetch",
    "reshard_after_forward",
    "unit",
    "min_unit",
    "bucket",
    "shard_group",
    "partition",
    "schedule",
    "credit",
    "inflight",
    "fusion",
    "cycle",
    "compression",
    "reduce",
    "transport",
    "overhead",
    "connections",
    "streams",
    "segments",
    "execution",
    "dispatch",
    "partial",
    "copy",
    "param_dtype",
    "reduce_dtype",
    "",
    "bogus",
)
WORDS = (
    "true",
    "false",
    "yes",
    "1",
    "round-robin",
    "balanced",
    "sharded",
    "block",
    "priority",
    "fifo",
    "ring",
    "halving-doubling",
    "bf16",
    "fp32",
    "fp8",
    "tcp",
    "rdma",
    "solo",
    "majority",
    "shared",
    "ordered-pairs",
    "ordered",
    "none",
    "",
    "é",
)
SIZES_NORMAL = ("4MiB", "25MiB", "64MiB")
"""Legitimate sizes (not small pieces, which make legitimately long runs)."""


def with_unit(units: Sequence[str]) -> st.SearchStrategy[str]:
    number = st.one_of(
        st.sampled_from(MAGNITUDES),
        st.integers(-(2**70), 2**70).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
    )
    unit = st.one_of(st.sampled_from(units), st.sampled_from(JUNK_UNITS))
    return st.tuples(number, unit).map("".join)


def junk_text() -> st.SearchStrategy[str]:
    return st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)


def value(units: Sequence[str]) -> st.SearchStrategy[str]:
    """A value for an option taking a number with one of these units (or junk)."""
    return st.one_of(with_unit(units), with_unit(units), junk_text())


RATES, SIZES, TIMES = value(RATE_UNITS), value(SIZE_UNITS), value(TIME_UNITS)
INTS = st.one_of(st.sampled_from(INT_EDGES), st.integers(-(2**70), 2**70).map(str), junk_text())
SMALL_INTS = st.one_of(
    st.sampled_from(SMALL_OR_ABSURD_INTS), st.integers(2**32, 2**70).map(str), st.integers(-(2**70), 0).map(str)
)
FLOATS = st.one_of(st.sampled_from(MAGNITUDES), st.floats(allow_nan=True, allow_infinity=True).map(repr), junk_text())
OPTION_VALUES = st.one_of(SIZES, TIMES, RATES, INTS, FLOATS, st.sampled_from(WORDS + SIZES_NORMAL))


@st.composite
def strategy_spec(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(junk_text())
    name = draw(st.sampled_from(STRATEGIES + ("", "RING", "ring ", "nope")))
    opts = draw(st.lists(st.tuples(st.sampled_from(STRATEGY_KEYS), OPTION_VALUES), max_size=3))
    if not opts:
        return name
    sep = draw(st.sampled_from((":", ":", "::", ";")))
    return name + sep + ",".join(f"{k}={v}" for k, v in opts)


@st.composite
def topology_spec(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(("star", "ring", "leaf-spine", "nodes", "rail", "fat-tree", "")))
    keys = {
        "leaf-spine": ("hosts_per_leaf", "spines", "uplink"),
        "nodes": ("machine",),
        "rail": ("node", "nodes_per_group", "spines", "oversubscription", "nic", "nvlink"),
    }.get(kind, ("hosts_per_leaf", "x"))
    vals = st.one_of(
        INTS, RATES, FLOATS, st.sampled_from(("dgx-h100", "dgx-a100", "p3.16xlarge", "pcie-8", "dgx-1", ""))
    )
    opts = draw(st.lists(st.tuples(st.sampled_from(keys), vals), max_size=3))
    return kind + (":" + ",".join(f"{k}={v}" for k, v in opts) if opts else "")


@st.composite
def stragglers_spec(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(("normal", "lognormal", "fixed", "empirical", "none", "uniform", "")))
    if kind == "fixed":
        n = draw(st.sampled_from((0, 1, 7, 8, 9)))
        return "fixed:" + ",".join(draw(st.lists(FLOATS, min_size=n, max_size=n)))
    if kind == "empirical":
        return "empirical:" + draw(st.sampled_from(("missing.txt", "empirical.txt", "", "/", "bad.txt")))
    return f"{kind}:{draw(FLOATS)}" if kind else draw(junk_text())


@st.composite
def failure_spec(draw: st.DrawFn) -> str:
    target = draw(
        st.sampled_from(("h0", "h3", "h7", "h8", "h100", "sw", "h0->sw", "sw->h1", "leaf0->spine1", "spine0", "", "->"))
    )
    spec = f"{target}@{draw(TIMES)}"
    if draw(st.booleans()):
        spec += f":rate={draw(FLOATS)}"
    return spec


def collective_spec() -> st.SearchStrategy[str]:
    kind = st.sampled_from(("allreduce", "reducescatter", "allgather", "broadcast", "alltoall", "gather", ""))
    count = st.one_of(st.just(""), INTS.map(lambda v: "x" + v))
    return st.tuples(kind, SIZES, count).map(lambda t: f"{t[0]}:{t[1]}{t[2]}")


def argv_bytes() -> st.SearchStrategy[bytes]:
    """Non-UTF-8 command-line bytes."""
    return st.sampled_from((b"\xff", b"25\xffGbps", b"ring:\xc3\x28", b"\xed\xa0\x80", b"h0\x80->sw@0s"))


# -- (a) options ----------------------------------------------------------------------------

SIM_OPTIONS: dict[str, st.SearchStrategy[Any]] = {
    "--workers": INTS,
    "--bandwidth": RATES,
    "--latency": TIMES,
    "--overhead": TIMES,
    "--topology": topology_spec(),
    "--strategy": strategy_spec(),
    "--compute-speedup": FLOATS,
    "--stragglers": stragglers_spec(),
    "--fail": failure_spec(),
    "--iterations": INTS,
    "--seed": INTS,
    "--batch": INTS,
    "--max-flows": INTS,
    "--collective": collective_spec(),
    "--gpu": st.sampled_from(("v100", "h100", "a100-80gb", "netop2020", "", "x")),
    "--seq-len": INTS,
    "--mfu": FLOATS,
    "--placement": st.sampled_from(("packed", "spread", "random", "", "x")),
    "--network": st.sampled_from(("flow", "analytical", "")),
    "--add-modules": st.tuples(st.sampled_from(("compute", "network", "inception", "")), INTS).map(":".join),
    "--model": st.sampled_from(ZOO + ("", "job.json", "RESNET50")),
}
LLM_OPTIONS = ("--seq-len", "--mfu")


def overrides(options: dict[str, st.SearchStrategy[Any]], raw: bool = True) -> st.SearchStrategy[list[tuple[str, Any]]]:
    """One or two (option, value) pairs; sometimes a non-UTF-8 value."""
    pair = st.sampled_from(sorted(options)).flatmap(lambda k: st.tuples(st.just(k), options[k]))
    pairs = st.lists(pair, min_size=1, max_size=2, unique_by=lambda p: p[0])
    if not raw:
        return pairs
    return st.one_of(
        pairs,
        pairs,
        pairs,
        pairs,
        pairs,
        pairs,
        pairs,
        pairs,
        st.tuples(st.sampled_from(sorted(options)), argv_bytes()).map(lambda p: [p]),
    )


def as_args(base: dict[str, Any], pairs: list[tuple[str, Any]]) -> list[fh.Arg]:
    """The base options with the drawn ones replacing them, each as `--opt=value`."""
    merged = {**base, **dict(pairs)}
    args: list[fh.Arg] = []
    for k, v in merged.items():
        if v is None:
            continue
        if v is True:
            args.append(k)
        elif isinstance(v, bytes):
            args.append(k.encode() + b"=" + v)
        else:
            args.append(f"{k}={v}")
    return args


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fuzz")
    (d / "empirical.txt").write_text("1.0\n1.2\n0.9\n")
    (d / "bad.txt").write_bytes(b"1.0\nnan\n\xff\n-1\n1e308\n")
    (d / "adir.csv").mkdir()
    (d / "afile").write_text("x")
    (d / "exists.json").write_text("{}")
    (d / "link.json").symlink_to(d / "exists.json")
    return d


def test_simulate_options(workdir: Path) -> None:
    def body(pairs: list[tuple[str, Any]]) -> list[fh.Case]:
        base: dict[str, Any] = {
            "--model": "resnet50",
            "--workers": "8",
            "--bandwidth": "25Gbps",
            "--strategy": "ring",
            "--max-flows": "2000000",
        }
        keys = {k for k, _ in pairs}
        if keys & set(LLM_OPTIONS):
            base.update({"--model": "llama3_8b", "--bandwidth": "100Gbps", "--strategy": "fsdp"})
        if "--collective" in keys:
            base["--model"] = None
        return [fh.run("simulate", ["simulate", *as_args(base, pairs)], workdir)]

    explicit = [
        [("--bandwidth", "1e-30Gbps")],
        [("--collective", "allreduce:1e20B")],
        [("--compute-speedup", "1e-300")],
        [("--stragglers", "normal:1e308")],
        [("--workers", "1000000000")],
        [("--iterations", "1000000000")],
        [("--strategy", "ps:num_ps=1000000000")],
        [("--topology", "leaf-spine:spines=1000000000")],
        [("--workers", "99999999999999999999999")],
        [("--batch", "4294967297")],
        [("--strategy", "ring:partition=1B"), ("--max-flows", "20000000")],
        [("--strategy", "ps"), ("--iterations", "1000")],
    ]
    fuzz("simulate", overrides(SIM_OPTIONS), body, default=40, explicit=explicit)


COMPARE_OPTIONS: dict[str, st.SearchStrategy[Any]] = {
    "--workers": SMALL_INTS,
    "--bandwidth": RATES,
    "--latency": TIMES,
    "--overhead": TIMES,
    "--topology": topology_spec(),
    "--strategies": st.lists(strategy_spec(), min_size=0, max_size=2).map(",".join),
    "--compute-speedup": FLOATS,
    "--stragglers": stragglers_spec(),
    "--iterations": SMALL_INTS,
    "--seed": INTS,
    "--batch": SMALL_INTS,
    "--gpu": SIM_OPTIONS["--gpu"],
    "--seq-len": SMALL_INTS,
    "--mfu": FLOATS,
    "--model": st.sampled_from(ZOO + ("", "x")),
    "--add-modules": SIM_OPTIONS["--add-modules"],
}


def test_compare_options(workdir: Path) -> None:
    def body(pairs: list[tuple[str, Any]]) -> list[fh.Case]:
        base: dict[str, Any] = {
            "--model": "resnet50",
            "--workers": "4",
            "--bandwidth": "25Gbps",
            "--strategies": "ps,ring",
        }
        if {k for k, _ in pairs} & set(LLM_OPTIONS):
            base.update({"--model": "llama3_8b", "--bandwidth": "100Gbps", "--strategies": "ring,fsdp"})
        return [fh.run("compare", ["compare", *as_args(base, pairs)], workdir)]

    fuzz("compare", overrides(COMPARE_OPTIONS), body, default=15, explicit=[[("--workers", "1000000000")]])


def listed(values: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(values, min_size=1, max_size=3).map(",".join) | st.sampled_from(("", ",", "4,,8"))


SWEEP_OPTIONS: dict[str, st.SearchStrategy[Any]] = {
    "--workers": listed(SMALL_INTS),
    "--bandwidth": listed(RATES),
    "--latency": listed(TIMES),
    "--topology": listed(topology_spec()),
    "--strategies": listed(strategy_spec()),
    "--seed": listed(INTS),
    "--batch": listed(SMALL_INTS),
    "--compute-speedup": listed(FLOATS),
    "--iterations": SMALL_INTS,
    "--model": listed(st.sampled_from(ZOO + ("", "x"))),
    "--network": listed(st.sampled_from(("flow", "analytical", "x"))),
    "--gpu": listed(st.sampled_from(("v100", "h100", "x"))),
    "--jobs": st.sampled_from(("0", "-1", "1", "2", "99999999999999999999999")),
    "--out": st.sampled_from(
        (
            "r.csv",
            "r.json",
            "r.parquet",
            "r.txt",
            "",
            "adir.csv",
            "afile/x.csv",
            "new/deep/r.csv",
            "exists.json",
            "link.json",
            "é.csv",
            ".csv",
        )
    ),
}


def test_sweep_options(workdir: Path) -> None:
    def body(pairs: list[tuple[str, Any]]) -> list[fh.Case]:
        base: dict[str, Any] = {
            "--model": "resnet50",
            "--workers": "4",
            "--bandwidth": "25Gbps",
            "--strategies": "ring",
            "--jobs": "1",
            "--out": "r.csv",
        }
        return [fh.run("sweep", ["sweep", *as_args(base, pairs)], workdir)]

    explicit = [
        [("--iterations", "1000000000")],
        [("--out", "adir.csv")],
        [("--out", "afile/x.csv")],
        [("--out", "")],
        [("--workers", "99999999999999999999999")],
    ]
    fuzz("sweep", overrides(SWEEP_OPTIONS), body, default=12, explicit=explicit)


@st.composite
def job_spec(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(("a", "b", "", "a b", "é", "a:b")))
    model = draw(st.sampled_from(("resnet50", "vgg16", "alexnet", "llama3_8b", "x", "")))
    workers = draw(SMALL_INTS)
    return f"{name}:{model}:{workers}:{draw(strategy_spec())}"


@st.composite
def place_spec(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(("a", "b", "c", "")))
    lo, hi = draw(INTS), draw(INTS)
    form = draw(st.sampled_from(("range", "list", "one")))
    hosts = f"{lo}-{hi}" if form == "range" else f"{lo},{hi}" if form == "list" else lo
    return f"{name}={hosts}"


def test_jobs_options(workdir: Path) -> None:
    options: dict[str, st.SearchStrategy[Any]] = {
        "job-a": job_spec(),
        "job-b": job_spec(),
        "--place": place_spec(),
        "--workers": INTS,
        "--bandwidth": RATES,
        "--latency": TIMES,
        "--topology": topology_spec(),
        "--fail": failure_spec(),
        "--max-flows": INTS,
        "--iterations": INTS,
        "--seed": INTS,
        "--gpu": SIM_OPTIONS["--gpu"],
    }

    def body(pairs: list[tuple[str, Any]]) -> list[fh.Case]:
        drawn = dict(pairs)
        jobs = [drawn.pop("job-a", "a:resnet50:4:ring"), drawn.pop("job-b", "b:vgg16:4:ring")]
        base: dict[str, Any] = {"--bandwidth": "25Gbps", "--max-flows": "2000000"}
        args: list[fh.Arg] = []
        for j in jobs:
            args += [b"--job=" + j if isinstance(j, bytes) else f"--job={j}"]
        return [fh.run("jobs", ["jobs", *args, *as_args(base, list(drawn.items()))], workdir)]

    explicit = [
        [("--place", "a=0-1000000000")],
        [("job-a", "a:resnet50:1000000000:ring")],
        [("--place", "a=99999999999999999999")],
    ]
    fuzz("jobs", overrides(options), body, default=15, explicit=explicit)


def test_import_trace_options(workdir: Path) -> None:
    options: dict[str, st.SearchStrategy[Any]] = {
        "--step": INTS,
        "--name": st.one_of(junk_text(), st.sampled_from(("\ud800", "x" * 10_000))),
        "--workload-format": st.sampled_from(("auto", "tensorwire", "kineto", "chakra", "")),
        "--out": SWEEP_OPTIONS["--out"],
        "--json": st.just(True),
    }

    def body(pairs: list[tuple[str, Any]]) -> list[fh.Case]:
        base: dict[str, Any] = {"--out": "imported.json"}
        ranks = [str(p) for p in fm.KINETO_RANKS]
        return [fh.run("import-trace", ["import-trace", *ranks, *as_args(base, pairs)], workdir)]

    fuzz("import-trace", overrides(options), body, default=10, explicit=[[("--out", "")], [("--name", "\ud800")]])


@st.composite
def adjacency(draw: st.DrawFn) -> str:
    n = draw(st.sampled_from((0, 1, 2, 3, 8)))
    w = st.one_of(st.sampled_from(fm.EXTREME_NUMBERS + (None, "1", True)), st.integers(0, 3))
    matrix = [[draw(w) for _ in range(n)] for _ in range(n)]
    if n and draw(st.booleans()):
        matrix[0] = matrix[0][:-1]  # not square
    form = draw(st.sampled_from(("matrix", "object", "object-bad-gpus", "nested")))
    if form == "matrix":
        return fm.dumps(matrix)
    if form == "nested":
        return fm.nested(50_000)
    gpus = n if form == "object" else draw(st.sampled_from((-1, 0, 2**64, "8", None, 10**9)))
    return fm.dumps({"gpus": gpus, "adjacency": matrix})


def test_topology_options(workdir: Path) -> None:
    options: dict[str, st.SearchStrategy[Any]] = {
        "--preset": st.sampled_from(("p3.16xlarge", "dgx-a100", "pcie-8", "dgx-h100", "", "x")),
        "--trees": INTS,
        "--penalty": FLOATS,
        "--adjacency": adjacency(),
        "--json": st.just(True),
    }

    def body(pairs: list[tuple[str, Any]]) -> list[fh.Case]:
        drawn = dict(pairs)
        base: dict[str, Any] = {"--preset": "p3.16xlarge"}
        if "--adjacency" in drawn and not isinstance(drawn["--adjacency"], bytes):
            (workdir / "adj.json").write_text(drawn["--adjacency"])
            drawn["--adjacency"] = "adj.json"
            base = {}
        return [fh.run("topology", ["topology", *as_args(base, list(drawn.items()))], workdir)]

    explicit = [[("--trees", "1000000000")], [("--adjacency", "[[0, 99], [99, 0]]")]]
    fuzz("topology", overrides(options), body, default=10, explicit=explicit)


# -- (b) input files ------------------------------------------------------------------------

SIMULATE_FILE = ["-n", "4", "-b", "25Gbps", "-s", "ring", FLOWS]


def simulate_and_import(
    test: str, path: Path, workdir: Path, note: str, extra: Sequence[str] = (), fmt: Optional[str] = None
) -> list[fh.Case]:
    """`simulate --workload` the file; `import-trace` it, and simulate what it wrote."""
    fmt_args = [f"--workload-format={fmt}"] if fmt else []
    cases = [fh.run(test, ["simulate", f"--workload={path}", *fmt_args, *SIMULATE_FILE], workdir, note)]
    out = workdir / f"{path.stem}.imported.json"
    out.unlink(missing_ok=True)
    imp = fh.run(test, ["import-trace", str(path), *extra, *fmt_args, f"--out={out}"], workdir, note)
    cases.append(imp)
    if imp.rc == 0 and out.exists():
        cases.append(fh.run(test, ["simulate", f"--workload={out}", *SIMULATE_FILE], workdir, note + " (imported)"))
    return cases


SEEDS = st.integers(0, 2**32 - 1)


def test_workload_file_mutations(workdir: Path) -> None:
    import tensorwire as tw

    original = tw.load_model("alexnet").to_dict()

    def body(seed: int) -> list[fh.Case]:
        rng = random.Random(seed)
        data, notes = original, []
        for _ in range(rng.choice((1, 1, 1, 2))):
            data, note = fm.mutate_json(data, rng, fm.workload_focus)
            notes.append(note)
        raw = fm.dumps(data).encode("utf-8", "surrogatepass")
        if rng.random() < 0.1:
            raw, note = fm.mutate_bytes(raw, rng)
            notes.append(note)
        path = workdir / "workload.json"
        path.write_bytes(raw)
        return simulate_and_import("workload-file", path, workdir, "; ".join(notes))

    fuzz("workload-file", SEEDS, body, default=15)


def test_kineto_trace_mutations(workdir: Path) -> None:
    trace = fm.kineto_trace(0)
    focus = fm.kineto_focus(trace)

    def body(seed: int) -> list[fh.Case]:
        rng = random.Random(seed)
        data, notes = trace, []
        for _ in range(rng.choice((1, 1, 1, 2))):
            data, note = fm.mutate_json(data, rng, focus)
            notes.append(note)
        raw = fm.dumps(data).encode("utf-8", "surrogatepass")
        if rng.random() < 0.1:
            raw, note = fm.mutate_bytes(raw, rng)
            notes.append(note)
        gz = rng.random() < 0.5
        path = workdir / ("rank0.json.gz" if gz else "rank0.json")
        path.write_bytes(gzip.compress(raw, mtime=0) if gz else raw)
        if gz and rng.random() < 0.2:
            path.write_bytes(path.read_bytes()[: rng.randrange(1, path.stat().st_size)])
            notes.append("gzip truncated")
        second = [str(fm.KINETO_RANKS[1])] if rng.random() < 0.5 else []
        return simulate_and_import("kineto-file", path, workdir, "; ".join(notes), extra=second)

    fuzz("kineto-file", SEEDS, body, default=15)


def test_chakra_trace_mutations(workdir: Path) -> None:
    def body(seed: int) -> list[fh.Case]:
        rng = random.Random(seed)
        raw, note = fm.chakra_trace(rng)
        if rng.random() < 0.2:
            raw, more = fm.mutate_bytes(raw, rng)
            note += "; " + more
        path = workdir / "rank0.et"
        path.write_bytes(raw)
        return simulate_and_import("chakra-file", path, workdir, note, fmt=rng.choice((None, None, "chakra")))

    fuzz("chakra-file", SEEDS, body, default=15)


def test_five_attribute_trace_mutations(workdir: Path) -> None:
    def body(seed: int) -> list[fh.Case]:
        rng = random.Random(seed)
        text, note = fm.five_attribute(rng)
        raw = text.encode()
        if rng.random() < 0.2:
            raw, more = fm.mutate_bytes(raw, rng)
            note += "; " + more
        path = workdir / "trace.txt"
        path.write_bytes(raw)
        return [fh.run("five-attribute-file", ["simulate", f"--workload={path}", *SIMULATE_FILE], workdir, note)]

    fuzz("five-attribute-file", SEEDS, body, default=8)


def test_the_mutations_reach_the_readers(workdir: Path) -> None:
    """The unmutated fixtures are accepted, so refusals in the tests above come from the
    mutations (a fixture that no longer loads would make every case a trivial refusal)."""
    import tensorwire as tw

    wl = workdir / "plain.json"
    wl.write_text(json.dumps(tw.load_model("alexnet").to_dict()))
    et = workdir / "plain.et"
    rng = random.Random(0)
    while True:  # a draw without extreme values
        raw, note = fm.chakra_trace(rng)
        if note.endswith("layers") and not note.startswith("40"):
            break
    et.write_bytes(raw)
    for path in (wl, et, fm.KINETO_RANKS[0]):
        c = fh.run("fixtures", ["simulate", f"--workload={path}", *SIMULATE_FILE], workdir)
        assert c.rc == 0 and not c.problems, fh.report([c])
