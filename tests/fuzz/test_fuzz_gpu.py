"""Fuzzing of the GPU-cluster inputs: bad input gets one line and exit 2.

Hypothesis draws (a) ``nccl``/``ddp`` strategy specs and the sharded and ``ps`` options
(``algo``/``proto`` lists with ``^``, empty and unicode entries, numbers at extremes) on
``rail:node=...``, ``nodes`` and star fabrics, and rail/nodes topology options (``sharp``,
``nvls``, the calibration options, the node presets); (b) mutations of the nccl-tests
fixtures for ``calibrate nccl-tests`` (truncated, duplicated and dropped lines, corrupt
and swapped numbers, NaN/inf/negative, huge sizes, binary garbage, empty files,
directories, FIFOs, non-UTF-8), where ``--out`` must leave no file behind on a refusal;
(c) mutations of a cluster file written by ``calibrate`` for ``--cluster FILE`` on
simulate, compare, sweep and jobs; (d) ``_core.nccl_predict`` in-process: it returns or
raises InputError, and algbw x time = size.

Every CLI case runs as in test_fuzz_cli.py (a subprocess under a time and memory limit,
tests/fuzz/fuzz_harness.py); the default budget is small, TENSORWIRE_FUZZ_EXAMPLES=N
runs N examples per test.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
import fuzz_harness as fh  # noqa: E402
import fuzz_mutations as fm  # noqa: E402
from test_fuzz_cli import FLOATS, INTS, OPTION_VALUES, RATES, SEEDS, TIMES, argv_bytes, as_args, fuzz, junk_text  # noqa: E402

pytestmark = pytest.mark.fuzz

# -- value pools ----------------------------------------------------------------------------

NODES = ("dgx-h100", "dgx-a100", "hgx-h200", "a3-mega", "p3.16xlarge", "pcie-8", "dgx-1", "", "x", "é")
ALGOS = (
    "ring",
    "tree",
    "^ring",
    "ring+tree",
    "^nvls+nvlstree",
    "nvls",
    "nvlstree",
    "collnetdirect",
    "collnetchain",
    "pat",
    "^tree+ring+collnetdirect+collnetchain+nvls+nvlstree+pat",
    "ring+ring",
    "^",
    "",
    "+",
    "^^ring",
    "RING",
    "Ring+Tree",
    "é",
    "ring+",
)
PROTOS = ("ll", "ll128", "simple", "LL128", "^ll", "simple+ll", "^ll+ll128+simple", "^", "", "ll+", "fast", "é")
FLAGS = ("true", "false", "1", "0", "yes", "", "é")
NCCL_KEYS: dict[str, st.SearchStrategy[str]] = {
    "algo": st.sampled_from(ALGOS),
    "proto": st.sampled_from(PROTOS),
    "channels": INTS,
    "pxn": st.sampled_from(FLAGS),
    "launch": TIMES,
    "compute_slowdown": FLOATS,
    "transport": st.sampled_from(("tcp", "rdma", "", "x")),
    "fusion": OPTION_VALUES,
    "cycle": TIMES,
    "bucket": OPTION_VALUES,
    "first_bucket": OPTION_VALUES,
    "partition": OPTION_VALUES,
    "dispatch": TIMES,
}
SHARDED_KEYS: dict[str, st.SearchStrategy[str]] = {
    "comm": st.sampled_from(("nccl", "flows", "", "NCCL", "x")),
    "communicators": INTS,
    "reduce_bucket": FLOATS,
    "allgather_bucket": FLOATS,
    "overlap_comm": st.sampled_from(FLAGS),
    "prefetch_bucket": FLOATS,
    "param_persistence": FLOATS,
    "compute_slowdown": FLOATS,
    "bucket": OPTION_VALUES,
    "transport": st.sampled_from(("tcp", "rdma", "x")),
    "prefetch": INTS,
    "unit": INTS,
}
PS_KEYS: dict[str, st.SearchStrategy[str]] = {
    "colocated": st.sampled_from(FLAGS),
    "distribution": st.sampled_from(("concurrent", "sharded", "round-robin", "", "x")),
    "num_ps": INTS,
    "transport": st.sampled_from(("tcp", "rdma", "x")),
}
FAMILIES = {
    "nccl": NCCL_KEYS,
    "ddp": NCCL_KEYS,
    "zero1": SHARDED_KEYS,
    "zero2": SHARDED_KEYS,
    "zero3": SHARDED_KEYS,
    "fsdp": SHARDED_KEYS,
    "hsdp": SHARDED_KEYS,
    "ps": PS_KEYS,
}


@st.composite
def gpu_strategy(draw: st.DrawFn) -> str:
    """A strategy spec of the GPU-cluster strategies with drawn options (sometimes junk)."""
    name = draw(st.sampled_from(sorted(FAMILIES) + ["NCCL", "nccl ", "ddp:", ""]))
    keys = FAMILIES.get(name.strip(": ").lower(), NCCL_KEYS)
    pair = st.sampled_from(sorted(keys)).flatmap(lambda k: st.tuples(st.just(k), keys[k] | junk_text()))
    opts = draw(st.lists(pair, max_size=3))
    if not opts:
        return name
    return name.rstrip(":") + ":" + ",".join(f"{k}={v}" for k, v in opts)


RAIL_KEYS: dict[str, st.SearchStrategy[str]] = {
    "node": st.sampled_from(NODES),
    "sharp": st.sampled_from(FLAGS),
    "nvls": st.sampled_from(FLAGS),
    "intra_efficiency": FLOATS,
    "inter_efficiency": FLOATS,
    "intra_latency": TIMES,
    "inter_latency": TIMES,
    "intra_fill": FLOATS,
    "inter_fill": FLOATS,
    "intra_step": TIMES,
    "inter_step": TIMES,
    "nodes_per_group": INTS,
    "spines": INTS,
    "oversubscription": FLOATS,
    "nic": RATES,
    "nvlink": RATES,
}


@st.composite
def gpu_topology(draw: st.DrawFn) -> str:
    """A rail or nodes topology with drawn options, a node preset, or star."""
    kind = draw(st.sampled_from(("rail", "rail", "rail", "nodes", "star", "leaf-spine")))
    if kind in ("star", "leaf-spine"):
        return kind
    keys = dict(RAIL_KEYS)
    if kind == "nodes":
        keys["machine"] = keys.pop("node")
        keys["nodes_per_leaf"] = INTS  # machines behind leaves (with oversubscription)
    pair = st.sampled_from(sorted(keys)).flatmap(lambda k: st.tuples(st.just(k), keys[k]))
    opts = draw(st.lists(pair, max_size=3))
    return kind + (":" + ",".join(f"{k}={v}" for k, v in opts) if opts else "")


def gpu_options() -> st.SearchStrategy[list[tuple[str, Any]]]:
    """Strategy and topology (one, the other or both), sometimes a worker count or a
    non-UTF-8 strategy."""
    opts = st.fixed_dictionaries(
        {},
        optional={
            "--strategy": gpu_strategy(),
            "--topology": gpu_topology(),
            "--workers": st.sampled_from(("1", "2", "7", "8", "16", "24", "64", "0", "100000")),
        },
    ).map(lambda d: list(d.items()))
    raw = st.tuples(st.sampled_from(("--strategy", "--topology")), argv_bytes()).map(lambda p: [p])
    return st.one_of(opts, opts, opts, opts, opts, opts, opts, opts, opts, opts, opts, opts, opts, opts, opts, raw)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fuzz-gpu")
    (d / "adir.log").mkdir()
    (d / "afile").write_text("x")
    os.mkfifo(d / "fifo.log")
    (d / "dirlink.log").symlink_to(d / "adir.log")
    return d


def test_gpu_strategy_and_topology_options(workdir: Path) -> None:
    def body(pairs: list[tuple[str, Any]]) -> list[fh.Case]:
        drawn = dict(pairs)
        strategy = drawn.get("--strategy", "nccl")
        name = strategy.split(":")[0].strip().lower() if isinstance(strategy, str) else ""
        base: dict[str, Any] = {
            "--workers": "16",
            "--topology": "rail:node=hgx-h200",
            "--strategy": "nccl",
            "--max-flows": "2000000",
        }
        if name in ("ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp", "ps"):
            base["--model"] = "gpt2" if name != "ps" else "resnet50"
        else:
            base["--collective"] = "allreduce:64MiB"
        topology = drawn.get("--topology", "")
        if isinstance(topology, str) and not topology.startswith("rail") or name == "ps":
            base["--bandwidth"] = "100Gbps"
        return [fh.run("gpu-options", ["simulate", *as_args(base, pairs)], workdir)]

    explicit = [
        [("--strategy", "nccl:launch=1e300s")],
        [("--strategy", "nccl:algo=^")],
        [("--strategy", "nccl:algo=^tree+ring+collnetdirect+collnetchain+nvls+nvlstree+pat")],
        [("--strategy", "ddp:bucket=1B,first_bucket=1B")],
        [("--strategy", "zero3:comm=nccl,communicators=2")],
        [("--strategy", "ps:colocated=true,distribution=concurrent")],
        [("--topology", "rail:node=hgx-h200,inter_latency=1e300s")],
        [("--topology", "rail:intra_efficiency=1e-300")],
        [("--topology", "rail:node=a3-mega,sharp=true"), ("--strategy", "nccl:algo=collnetdirect")],
        [("--topology", "star"), ("--strategy", "nccl:proto=ll")],
        [("--topology", "nodes:nodes_per_leaf=1,oversubscription=1024"), ("--strategy", "nccl:algo=ring")],
        [("--topology", "nodes:machine=dgx-a100,nodes_per_leaf=1,oversubscription=1e-300")],
    ]
    fuzz("gpu-options", gpu_options(), body, default=25, explicit=explicit)


def test_gpu_compare_and_topology_command(workdir: Path) -> None:
    """compare with two GPU strategies on a drawn rail fabric, and ``topology`` on a rail spec."""

    def body(pairs: list[tuple[str, Any]]) -> list[fh.Case]:
        drawn = dict(pairs)
        topology = drawn.get("--topology", "rail:node=a3-mega")
        strategies = drawn.get("--strategy", "ddp")
        if isinstance(strategies, str):
            strategies = f"nccl,{strategies}"
        base: dict[str, Any] = {"--model": "gpt2", "--workers": drawn.get("--workers", "16")}
        cases = [
            fh.run(
                "gpu-compare",
                ["compare", *as_args(base, [("--topology", topology), ("--strategies", strategies)])],
                workdir,
            )
        ]
        return cases

    fuzz("gpu-compare", gpu_options(), body, default=8)


# -- calibrate nccl-tests -------------------------------------------------------------------


def _calibrate(test: str, logs: list[str], workdir: Path, note: str, extra: list[str]) -> list[fh.Case]:
    """``calibrate nccl-tests LOGS --out FILE``: on a refusal FILE must not exist; on success
    it is a cluster file that ``simulate --cluster`` takes (or refuses in one line)."""
    out = workdir / "cluster.json"
    out.unlink(missing_ok=True)
    case = fh.run(test, ["calibrate", "nccl-tests", *logs, *extra, f"--out={out}"], workdir, note)
    cases = [case]
    if case.rc != 0 and out.exists():
        case.problems.append("--out left a file behind on a refusal")
    for tmp in workdir.glob(".cluster.json.*"):
        case.problems.append(f"temporary file {tmp.name} left behind")
        tmp.unlink()
    if case.rc == 0:
        try:
            data = json.loads(out.read_text())
            assert data["tensorwire_cluster"] == 1
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            case.problems.append(f"--out wrote no cluster file ({e!r})")
        else:
            args = ["simulate", f"--cluster={out}", "-n", "16", "-s", "nccl", "--collective=allreduce:64MiB"]
            cases.append(fh.run(test, args, workdir, note + " (its cluster file)"))
    return cases


def test_calibrate_log_mutations(workdir: Path) -> None:
    texts = [p.read_text() for p in fm.NCCL_LOGS]

    def body(seed: int) -> list[fh.Case]:
        rng = random.Random(seed)
        which = rng.randrange(len(texts))
        data: Any = texts[which]
        notes = [fm.NCCL_LOGS[which].name]
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            if isinstance(data, bytes):
                data, note = fm.mutate_bytes(data, rng)
            else:
                data, note = fm.mutate_log(data, rng)
            notes.append(note)
        path = workdir / "run.log"
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
        logs = [str(path)]
        if rng.random() < 0.3:
            logs.append(str(fm.NCCL_LOGS[rng.randrange(len(texts))]))
        extra: list[str] = []
        if rng.random() < 0.3:
            extra.append("--collective=" + rng.choice(("allreduce", "allgather", "reducescatter", "alltoall")))
        if rng.random() < 0.3:
            extra.append(
                "--topology=" + rng.choice(("rail:node=dgx-h100", "rail:node=hgx-h200", "star", "rail:node=x"))
            )
        if rng.random() < 0.2:
            extra.append("--json")
        if rng.random() < 0.2:
            extra.append(
                "--algo=" + rng.choice(("Ring,Tree", "^NVLS", "nvls", "pat", "Ring,,Tree", "^", "ring+x", "\udcff"))
            )
        if rng.random() < 0.2:
            extra.append("--proto=" + rng.choice(("Simple", "LL,LL128", "^simple", "ll+", "", "x" * 5000)))
        return _calibrate("calibrate-log", logs, workdir, "; ".join(notes), extra)

    fuzz("calibrate-log", SEEDS, body, default=25)


@pytest.mark.parametrize(
    "path",
    ["adir.log", "dirlink.log", "fifo.log", "afile/x.log", "missing.log", "/dev/null", "/dev/zero", "", "\udcff.log"],
)
def test_calibrate_special_paths(workdir: Path, path: str) -> None:
    """Directories, a FIFO (no writer: reading would wait for ever), devices, missing and
    non-UTF-8 names: one line each, and no cluster file."""
    cases = _calibrate("calibrate-path", [path], workdir, path, [])
    failing = [c for c in cases if c.problems]
    assert not failing, fh.report(failing)
    assert cases[0].rc == 2


def test_calibrate_out_paths(workdir: Path) -> None:
    """``--out`` that cannot be written is refused before the fit, and writes nothing."""
    log = str(fm.NCCL_LOGS[0])
    for out in ("adir.log", "afile/x.json", "", "new/deep/c.json"):
        case = fh.run("calibrate-out", ["calibrate", "nccl-tests", log, f"--out={out}"], workdir, out)
        assert not case.problems, fh.report([case])
        if out == "new/deep/c.json":
            assert case.rc == 0 and (workdir / out).is_file()
        else:
            assert case.rc == 2


# -- --cluster FILE -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster_json(workdir: Path) -> Any:
    out = workdir / "base-cluster.json"
    c = fh.run("cluster-base", ["calibrate", "nccl-tests", str(fm.NCCL_LOGS[0]), f"--out={out}"], workdir)
    assert c.rc == 0 and not c.problems, fh.report([c])
    return json.loads(out.read_text())


def test_cluster_file_mutations(workdir: Path, cluster_json: Any) -> None:
    def body(seed: int) -> list[fh.Case]:
        rng = random.Random(seed)
        data, notes = cluster_json, []
        for _ in range(rng.choice((1, 1, 2))):
            if rng.random() < 0.2:
                t = rng.choice(fm.TOPOLOGY_TEXTS)
                data = fm.replace(data, ("topology",), t)
                notes.append(f"topology {t[:40]!r}")
            elif rng.random() < 0.1:
                data = {**data, rng.choice(("extra", "", "é", "tensorwire_cluster2")): rng.choice(fm.OTHER_VALUES)}
                notes.append("extra key")
            else:
                data, note = fm.mutate_json(data, rng, fm.cluster_focus)
                notes.append(note)
        raw = fm.dumps(data).encode("utf-8", "surrogatepass")
        if rng.random() < 0.1:
            raw, note = fm.mutate_bytes(raw, rng)
            notes.append(note)
        path = workdir / "cluster-in.json"
        path.write_bytes(raw)
        c = f"--cluster={path}"
        command = rng.choice(
            (
                ["simulate", c, "-n", "16", "-s", "nccl", "--collective=allreduce:64MiB"],
                ["simulate", c, "-n", "16", "-s", "ddp", "--model=gpt2"],
                ["simulate", c, "-n", "8", "-s", "ring", "--model=resnet50", "--max-flows=2000000"],
                ["compare", c, "-n", "16", "--strategies=nccl,ddp", "--model=gpt2"],
                ["sweep", c, "--workers=8,16", "--strategies=nccl", "--model=gpt2", "--jobs=1", "--out=r.csv"],
                ["jobs", c, "--job=a:resnet50:4:ring", "--job=b:vgg16:4:ring", "--max-flows=2000000"],
            )
        )
        return [fh.run("cluster-file", command, workdir, "; ".join(notes))]

    fuzz("cluster-file", SEEDS, body, default=25)


# -- _core.nccl_predict in-process ----------------------------------------------------------

PREDICT_TOPOLOGIES = st.one_of(
    gpu_topology(),
    st.sampled_from(("rail", "rail:node=hgx-h200", "rail:node=a3-mega,sharp=true", "nodes", "\ud800", "")),
    junk_text(),
)
INT_ARGS = st.one_of(st.integers(-3, 70), st.sampled_from((2**31, 2**32 + 1, 2**63, 2**64, 2**70, -(2**70), 10**6)))
FLOAT_ARGS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from((0.0, -0.0, 1.0, 5e-324, 1e308, 2.0**64, 1e-300)),
    st.integers(0, 2**40),
    st.sampled_from((2**1100, -(2**1100))),
)


@st.composite
def predict_args(draw: st.DrawFn) -> tuple[tuple[Any, ...], dict[str, Any]]:
    topology = draw(PREDICT_TOPOLOGIES)
    gpus = draw(INT_ARGS)
    collective = draw(
        st.sampled_from(("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "gather", ""))
    )
    size = draw(FLOAT_ARGS)
    kwargs: dict[str, Any] = {}
    if draw(st.booleans()):
        kwargs["bandwidth"] = draw(FLOAT_ARGS)
    if draw(st.booleans()):
        kwargs["transport"] = draw(st.sampled_from(("rdma", "tcp", "x", "\ud800")))
    if draw(st.booleans()):
        kwargs["algo"] = draw(st.sampled_from(ALGOS) | junk_text())
    if draw(st.booleans()):
        kwargs["proto"] = draw(st.sampled_from(PROTOS) | junk_text())
    if draw(st.booleans()):
        kwargs["channels"] = draw(INT_ARGS)
    return (topology, gpus, collective, size), kwargs


VALID_TOPOLOGIES = st.tuples(
    st.sampled_from(("rail:node=dgx-h100", "rail:node=hgx-h200", "rail:node=a3-mega", "rail:node=dgx-a100", "rail")),
    st.lists(
        st.sampled_from(
            (
                "sharp=true",
                "nvls=false",
                "intra_efficiency=0.5",
                "inter_efficiency=1e-6",
                "inter_efficiency=2",
                "intra_latency=1ms",
                "inter_latency=0ns",
                "intra_fill=0",
                "inter_fill=10",
                "intra_step=500ns",
                "inter_step=1ms",
                "nodes_per_group=2",
                "oversubscription=4",
            )
        ),
        max_size=3,
        unique_by=lambda o: o.split("=")[0],
    ),
).map(lambda t: t[0] + ((("," if ":" in t[0] else ":") + ",".join(t[1])) if t[1] else ""))


@st.composite
def valid_predict_args(draw: st.DrawFn) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Arguments NCCL's model answers for (so the invariant is checked on many)."""
    size = draw(st.one_of(st.integers(0, 2**40), st.floats(0, 1e300), st.sampled_from((1e18, 2.0**64, 0.5))))
    kwargs: dict[str, Any] = {}
    if draw(st.booleans()):
        kwargs["bandwidth"] = draw(st.floats(1e-3, 1e15))
    if draw(st.booleans()):
        kwargs["transport"] = draw(st.sampled_from(("rdma", "tcp")))
    if draw(st.integers(0, 3)) == 0:
        kwargs["algo"] = draw(st.sampled_from(("ring", "tree", "^ring", "ring+tree", "^nvls+nvlstree", "pat")))
    if draw(st.integers(0, 3)) == 0:
        kwargs["proto"] = draw(st.sampled_from(("ll", "ll128", "simple", "^ll", "simple+ll")))
    if draw(st.integers(0, 3)) == 0:
        kwargs["channels"] = draw(st.integers(1, 64))
    gpus = draw(st.one_of(st.integers(1, 64), st.sampled_from((128, 1000, 4096, 100_000))))
    collective = draw(st.sampled_from(("allreduce", "allgather", "reducescatter", "alltoall", "broadcast")))
    return (draw(VALID_TOPOLOGIES), gpus, collective, size), kwargs


def test_nccl_predict_returns_or_raises_input_error() -> None:
    """Any values of the documented types: a prediction whose algbw x seconds is the size
    (seconds finite and >= 0, busbw = algbw x the bus factor's ratio), or InputError."""
    from tensorwire import _core

    @settings(
        max_examples=fh.examples(300),
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.one_of(valid_predict_args(), valid_predict_args(), predict_args()))
    def check(drawn: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
        args, kwargs = drawn
        try:
            d = _core.nccl_predict(*args, **kwargs)
        except _core.InputError as e:
            assert len(e.args) == 2 and isinstance(e.args[0], str) and "\n" not in str(e.args[1])
            return
        size = float(args[3])
        seconds, algbw, busbw = d["seconds"], d["algbw"], d["busbw"]
        assert math.isfinite(seconds) and seconds >= 0, d
        assert 1 <= d["channels"] <= 64, d
        if seconds == 0:
            assert algbw == 0 and busbw == 0, d
            return
        assert math.isfinite(algbw) and algbw >= 0, d
        if size >= 1 and algbw >= sys.float_info.min:
            assert math.isclose(algbw * seconds, size, rel_tol=1e-9), (d, size)
        assert busbw >= 0 and math.isfinite(busbw), d

    check()


def test_nccl_predict_known_bad_values_are_input_errors() -> None:
    """The reproductions: ints out of range and lone surrogates were OverflowError and
    UnicodeEncodeError."""
    from tensorwire import _core

    for args, kwargs in (
        (("rail", -1, "allreduce", 1e6), {}),
        (("rail", 2**70, "allreduce", 1e6), {}),
        (("rail", 8, "allreduce", 1e6), {"channels": -1}),
        (("\ud800", 8, "allreduce", 1e6), {}),
        (("rail", 8, "allreduce", 2**1100), {}),
    ):
        with pytest.raises(_core.InputError):
            _core.nccl_predict(*args, **kwargs)
