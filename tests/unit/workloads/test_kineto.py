"""PyTorch profiler traces as workloads, on the DDP/Gloo fixtures made by
scripts/make_profiler_fixture.py (no torch needed here)."""

from __future__ import annotations

import collections
import dataclasses
import gzip
import json
import math
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest
from tensorwire._core import InputError
from tensorwire.cli import main
from tensorwire.io import InputWarning
from tensorwire.workload import Workload
from tensorwire.workloads import kineto
from tensorwire.workloads.formats import detect_format
from tensorwire.workloads.kineto import _Ev, _Launch, from_profiler_trace, load_trace, read_step

DATA = Path(__file__).parent / "data"
RANKS = [DATA / "ddp_tiny_rank0.json.gz", DATA / "ddp_tiny_rank1.json.gz"]
NOSTACK = DATA / "ddp_tiny_nostack_rank0.json.gz"
#: The fixture's model: Linear(32, 64), ReLU, Linear(64, 64), ReLU, Linear(64, 10), float32.
PARAM_BYTES = 4 * ((32 * 64 + 64) + (64 * 64 + 64) + (64 * 10 + 10))
#: DDP buckets, one per Linear, in launch order (the output layer's first).
BUCKETS = [4 * (64 * 10 + 10), 4 * (64 * 64 + 64), 4 * (32 * 64 + 64)]


def test_fixture_is_small() -> None:
    assert sum(p.stat().st_size for p in DATA.glob("ddp_tiny*.json.gz")) < 200_000


def test_layers_from_modules_in_forward_order_own_their_buckets() -> None:
    w = from_profiler_trace(RANKS)
    assert [layer.name for layer in w.layers] == ["Linear_0", "Linear_1", "Linear_2"]
    assert w.total_bytes == PARAM_BYTES
    assert [sum(t.bytes for t in layer.tensors) for layer in w.layers] == BUCKETS[::-1]
    assert w.batch_size == 16
    assert all(layer.forward_s > 0 and layer.backward_s > 0 for layer in w.layers)


def test_collectives_per_step_and_times_consistent_with_the_step() -> None:
    for path in RANKS:
        s = read_step(path)
        assert s.step == 3 and s.structure == "modules"
        assert [(c.kind, c.bytes, c.phase) for c in s.collectives] == [("allreduce", b, "backward") for b in BUCKETS]
        assert [c.layer for c in s.collectives] == ["Linear_2", "Linear_1", "Linear_0"]
        launches = [c.launch_s for c in s.collectives]
        assert launches == sorted(launches)
        for c in s.collectives:
            # Launched and started within the step (Gloo's range may close after the step ends).
            assert 0 <= c.launch_s <= c.start_s + 1e-6 < c.end_s + 1e-6 and c.start_s <= s.duration_s
            assert 0 <= c.overlap_s <= c.end_s - c.start_s + 1e-9
        # Layers' times add up to the forward and backward passes, within the step.
        assert math.fsum(layer.forward_s for layer in s.layers) == pytest.approx(s.forward_s, rel=1e-9)
        assert math.fsum(layer.backward_s for layer in s.layers) <= s.backward_s + 1e-9
        assert 0 < s.forward_s + s.backward_s < s.duration_s


def test_several_ranks_take_the_median_per_layer() -> None:
    steps = [read_step(p) for p in RANKS]
    w = from_profiler_trace(RANKS)
    for i, layer in enumerate(w.layers):
        # The median of two is their mean.
        assert layer.forward_s == pytest.approx(sum(s.layers[i].forward_s for s in steps) / 2)
        assert layer.backward_s == pytest.approx(sum(s.layers[i].backward_s for s in steps) / 2)


def test_without_module_ranges_the_backward_is_cut_at_collectives() -> None:
    s = read_step(NOSTACK)
    assert s.structure == "collectives"
    w = from_profiler_trace(NOSTACK)
    grads = [layer for layer in w.layers if layer.tensors]
    assert [sum(t.bytes for t in layer.tensors) for layer in grads] == BUCKETS[::-1]
    assert w.total_bytes == PARAM_BYTES
    # Segments cover the whole backward pass; the forward is split in the same proportions.
    assert math.fsum(layer.backward_s for layer in w.layers) == pytest.approx(s.backward_s)
    assert math.fsum(layer.forward_s for layer in w.layers) == pytest.approx(s.forward_s)
    # Backward segments end where the all-reduces were launched.
    marks = [c.launch_s for c in s.collectives]
    ends = []
    acc = 0.0
    for layer in reversed(w.layers):
        acc += layer.backward_s
        ends.append(acc)
    bwd0 = marks[0] - ends[0]
    assert [bwd0 + e for e in ends[: len(marks)]] == pytest.approx(marks, abs=1e-9)


def test_an_explicit_step_and_a_missing_one() -> None:
    assert read_step(RANKS[0], step=2).step == 2
    with pytest.raises(InputError, match="no ProfilerStep#9"):
        read_step(RANKS[0], step=9)


def test_detection_and_simulate_from_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert detect_format(RANKS[0]) == "kineto"
    assert Workload.from_file(RANKS[0]).total_bytes == PARAM_BYTES
    assert main(["simulate", "--workload", str(RANKS[0]), "-n", "2", "-b", "1Gbps", "-s", "ring", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["iteration_time_s"] > 0


def test_import_trace_writes_a_workload_file_that_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "w.json"
    p = subprocess.run(
        [sys.executable, "-m", "tensorwire", "import-trace", *map(str, RANKS), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "Linear_1" in p.stdout
    w = Workload.from_file(out)
    assert json.loads(out.read_text())["format"] == "tensorwire-workload/1"
    assert w == Workload.from_file(out, "tensorwire")
    assert w.layers == from_profiler_trace(RANKS).layers


# -- bad input ------------------------------------------------------------------------------


def _events() -> dict[str, Any]:
    return load_trace(RANKS[0])


def _write(tmp_path: Path, data: Any, name: str = "t.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


def _import_trace(path: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``tensorwire import-trace PATH --out OUT`` in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "tensorwire", "import-trace", str(path), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _cli_error(path: Path, tmp_path: Path) -> str:
    out = tmp_path / "out.json"
    p = _import_trace(path, out)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert not out.exists() and not list(tmp_path.glob(".out.json*"))
    return lines[0]


def test_truncated_gzip_and_json(tmp_path: Path) -> None:
    raw = RANKS[0].read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(raw[: len(raw) // 2])
    assert "not a complete gzip file" in _cli_error(cut, tmp_path)
    text = gzip.decompress(raw)
    half = tmp_path / "half.json"
    half.write_bytes(text[: len(text) // 2])
    assert "not valid JSON" in _cli_error(half, tmp_path)


def test_no_profiler_step(tmp_path: Path) -> None:
    data = _events()
    data["traceEvents"] = [e for e in data["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    with pytest.raises(InputError, match="no ProfilerStep#N range"):
        from_profiler_trace(_write(tmp_path, data))
    assert "no ProfilerStep#N" in _cli_error(_write(tmp_path, data), tmp_path)


def test_no_collectives(tmp_path: Path) -> None:
    data = _events()
    data["traceEvents"] = [
        e
        for e in data["traceEvents"]
        if "allreduce" not in str(e.get("name")) and "all_reduce" not in str(e.get("name"))
    ]
    with pytest.raises(InputError, match="launched no collectives"):
        from_profiler_trace(_write(tmp_path, data))


def test_unknown_dtype(tmp_path: Path) -> None:
    data = _events()
    for e in data["traceEvents"]:
        if e.get("name") == "gloo:all_reduce":
            e["args"]["Input type"] = ["quaternion"]
    with pytest.raises(InputError, match="unknown dtype 'quaternion'"):
        from_profiler_trace(_write(tmp_path, data))


def test_not_a_trace(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no 'traceEvents' list"):
        from_profiler_trace(_write(tmp_path, {"traceEvents": 3}))


def test_ranks_that_saw_different_collectives(tmp_path: Path) -> None:
    data = load_trace(RANKS[1])
    for e in data["traceEvents"]:
        if e.get("name") in ("gloo:all_reduce", "c10d::allreduce_") and "Input Dims" in e.get("args", {}):
            dims = e["args"]["Input Dims"]
            if dims == [[650]]:
                e["args"]["Input Dims"] = [[651]]
            elif dims and dims[0] == [[650]]:
                e["args"]["Input Dims"][0] = [[651]]
    other = _write(tmp_path, data, "rank1.json")
    with pytest.raises(InputError, match=r"different collectives.*2600 B on rank 0 but allreduce of 2604 B on rank 1"):
        from_profiler_trace([RANKS[0], other])


# -- small synthetic traces ------------------------------------------------------------------


def _x(name: str, ts: float, dur: float, tid: Any = 1, cat: str = "cpu_op", **args: Any) -> dict[str, Any]:
    """A complete ("X") event."""
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid, "cat": cat, "args": args}


def _small(
    launch_dims: Any = ((1000,),), exec_dims: Any = (1000,), scale: float = 1.0, extra: tuple[Any, ...] = ()
) -> dict[str, Any]:
    """ProfilerStep#1: a forward op, a backward op, one all-reduce launched on thread 1 and
    run by Gloo on thread 3 (times in us, times ``scale``)."""
    events = [
        _x("ProfilerStep#1", 0, 10_000_000 * scale, cat="user_annotation"),
        _x("aten::linear", 10 * scale, 100 * scale, **{"Sequence number": 1, "Input Dims": [[32, 10], [10, 10]]}),
        _x("autograd::engine::evaluate_function: AddmmBackward0", 200 * scale, 100 * scale),
        _x("c10d::allreduce_", 310 * scale, 5 * scale, **{"Input Dims": [json.loads(json.dumps(launch_dims))]}),
        _x(
            "gloo:all_reduce",
            312 * scale,
            5 * scale,
            tid=3,
            **{"Input Dims": [json.loads(json.dumps(exec_dims))], "Input type": ["float"]},
        ),
    ]
    return {"traceEvents": events + list(extra)}


def test_the_small_trace_imports(tmp_path: Path) -> None:
    # (The base of the tests below: what they change is all that is wrong.)
    s = read_step(_write(tmp_path, _small()))
    assert [(c.kind, c.bytes, c.start_s) for c in s.collectives] == [("allreduce", 4000, pytest.approx(312e-6))]
    assert s.rank == 0 and s.batch_size == 32


# -- matching launches to executions ---------------------------------------------------------


def _scan_match(launches: list[_Launch], executions: list[_Ev]) -> None:
    """The quadratic scan _match_executions replaced, verbatim: the reference."""
    used: set[int] = set()
    for launch in launches:
        for i, e in enumerate(executions):
            if i in used or e.ts < launch.ev.ts - 1.0 or kineto._exec_kind(e) != launch.kind:
                continue
            n = kineto._exec_nelems(e, "t.json")
            if launch.nelems is not None and n is not None and n != launch.nelems:
                continue
            used.add(i)
            launch.exec_ev = e
            if launch.nelems is None:
                launch.nelems = n
            if launch.dtype is None:
                launch.dtype = kineto._exec_dtype(e)
            break


def _random_execution(rng: random.Random, i: int) -> _Ev:
    args: dict[str, Any] = {"i": i}  # (no two executions are equal)
    size = rng.choice([None, 1, 2])
    if size is not None:
        if rng.random() < 0.5:
            args["In msg nelems"] = size
        else:
            args["Input Dims"] = [[size]]
    if rng.random() < 0.7:
        args["Input type"] = [rng.choice(["float", "c10::Half"])]
    name = rng.choice(["gloo:all_reduce", "gloo:all_reduce", "gloo:all_gather", "gloo:frobnicate"])
    return _Ev(name, 3, rng.randrange(20) + rng.choice([0.0, 0.5]), rng.choice([0.0, 1.0, 3.0]), "cpu_op", args)


def _random_launch(rng: random.Random) -> _Launch:
    ev = _Ev("c10d::allreduce_", 1, rng.randrange(20) + rng.choice([0.0, 0.5]), 2.0, "cpu_op", {})
    return _Launch(ev, rng.choice(["allreduce", "allreduce", "allgather"]), rng.choice([None, 1, 2]), None)


def test_matching_pairs_launches_and_executions_as_the_scan_did() -> None:
    rng = random.Random(20240611)
    matched = 0
    for _ in range(400):
        executions = sorted((_random_execution(rng, i) for i in range(rng.randrange(14))), key=lambda e: (e.ts, -e.dur))
        launches = [_random_launch(rng) for _ in range(rng.randrange(14))]
        if rng.random() < 0.8:  # (the importer's order; the result must not depend on it)
            launches.sort(key=lambda x: x.ev.ts)
        for x in launches:
            x.dtype = rng.choice([None, None, "Float"])
        mine = [dataclasses.replace(x) for x in launches]
        reference = [dataclasses.replace(x) for x in launches]
        kineto._match_executions(mine, executions, "t.json")
        _scan_match(reference, executions)
        assert [(x.exec_ev, x.nelems, x.dtype) for x in mine] == [(x.exec_ev, x.nelems, x.dtype) for x in reference]
        matched += sum(x.exec_ev is not None for x in mine)
    assert matched > 500  # (the cases are not all trivially unmatched)


def test_each_launch_gets_the_first_free_execution_of_its_size(tmp_path: Path) -> None:
    # Launches of 100, 200 and 100 floats; Gloo ran 200 first, then 100, then 100 again 0.5 us
    # before the third launch (within the 1 us allowed), and a 100 too early for anyone.
    data = _small()
    events = [e for e in data["traceEvents"] if e["name"] not in ("c10d::allreduce_", "gloo:all_reduce")]
    for ts, n in ((310, 100), (320, 200), (330, 100)):
        events.append(_x("c10d::allreduce_", ts, 5, **{"Input Dims": [[[n]]]}))
    for ts, n in ((305, 100), (321, 200), (322, 100), (329.5, 100)):
        events.append(_x("gloo:all_reduce", ts, 4, tid=3, **{"Input Dims": [[n]], "Input type": ["float"]}))
    s = read_step(_write(tmp_path, {"traceEvents": events}))
    got = [(c.bytes, round(c.launch_s * 1e6, 3), round(c.start_s * 1e6, 3)) for c in s.collectives]
    assert got == [(400, 310, 322), (800, 320, 321), (400, 330, 329.5)]


def test_matching_reads_each_execution_once_and_skips_each_taken_one_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The scan read every execution's kind and size for every launch: 2,000 launches that
    # match nothing took 4,000,000 reads (and 20,000 ran for minutes).
    calls: collections.Counter[str] = collections.Counter()
    for fn in ("_exec_kind", "_exec_nelems", "_find"):
        owner: Any = kineto._Queue if fn == "_find" else kineto
        real = getattr(owner, fn)

        def counted(*args: Any, _real: Any = real, _fn: str = fn) -> Any:
            calls[_fn] += 1
            return _real(*args)

        monkeypatch.setattr(owner, fn, counted)
    n = 2000

    def launches(nelems: Optional[int]) -> list[_Launch]:
        return [
            _Launch(_Ev("c10d::allreduce_", 1, 310.0 + 10 * i, 5.0, "cpu_op", {}), "allreduce", nelems, None)
            for i in range(n)
        ]

    def executions(size: int) -> list[_Ev]:
        args = {"Input Dims": [[size]], "Input type": ["float"]}
        return [_Ev("gloo:all_reduce", 3, 312.0 + 10 * i, 5.0, "cpu_op", args) for i in range(n)]

    none_match = launches(1000)
    kineto._match_executions(none_match, executions(999), "t.json")
    assert all(x.exec_ev is None for x in none_match)
    assert calls["_exec_kind"] == n and calls["_exec_nelems"] == n
    # Half the launches of known size, then half of unknown size: the queue of all
    # all-reduces meets the first half's executions taken, and steps over each once.
    calls.clear()
    mixed = launches(1000)[: n // 2] + launches(None)[n // 2 :]
    for x in mixed[n // 2 :]:
        x.ev = dataclasses.replace(x.ev, ts=0.0)
    kineto._match_executions(mixed, executions(1000), "t.json")
    assert all(x.exec_ev is not None for x in mixed)
    assert calls["_exec_kind"] == n and calls["_exec_nelems"] == n
    assert calls["_find"] <= 4 * n


def _scan_describe(c10d: list[_Launch], rpc: list[_Launch]) -> list[_Launch]:
    """The quadratic scans _describe_c10d replaced, verbatim: the reference."""
    for launch in c10d:
        inner = next((r for r in rpc if r.ev.tid == launch.ev.tid and launch.ev.ts <= r.ev.ts <= launch.ev.end), None)
        if inner is not None:
            launch.nelems = inner.nelems if inner.nelems is not None else launch.nelems
            launch.dtype = inner.dtype
    return [r for r in rpc if not any(c.ev.tid == r.ev.tid and c.ev.ts <= r.ev.ts <= c.ev.end for c in c10d)]


def test_record_param_comms_describe_the_c10d_op_they_are_nested_in_as_the_scan_did() -> None:
    rng = random.Random(11)
    for _ in range(400):

        def launch(name: str, i: int) -> _Launch:
            dur = rng.choice([0.0, 1.0, 4.0, 10.0, math.inf])
            ev = _Ev(name, rng.choice([1, 2, "t"]), float(rng.randrange(30)), dur, "cpu_op", {"i": i})
            return _Launch(ev, "allreduce", rng.choice([None, 1, 2]), rng.choice([None, "Float", "Half"]))

        c10d = sorted((launch("c10d::allreduce_", i) for i in range(rng.randrange(10))), key=lambda x: x.ev.ts)
        rpc = sorted((launch("record_param_comms", i) for i in range(rng.randrange(10))), key=lambda x: x.ev.ts)
        mine = [dataclasses.replace(x) for x in c10d]
        reference = [dataclasses.replace(x) for x in c10d]
        outside = kineto._describe_c10d(mine, rpc)
        assert [x.ev for x in outside] == [x.ev for x in _scan_describe(reference, rpc)]
        assert [(x.nelems, x.dtype) for x in mine] == [(x.nelems, x.dtype) for x in reference]


def test_spans_within_a_range_as_the_scan_found_them() -> None:
    rng = random.Random(5)
    for _ in range(300):
        events = [
            _Ev("e", 1, float(rng.randrange(30)), rng.choice([0.0, 0.0005, 2.0, 9.0, math.inf]), "", {})
            for _ in range(rng.randrange(8))
        ]
        spans = kineto._Spans(events)
        for _ in range(10):
            start = float(rng.randrange(-2, 32))
            end = start + rng.choice([0.0, 1.0, 5.0, 20.0, math.inf])
            assert spans.any_within(start, end) == any(kineto._within(e, start, end) for e in events)


def test_many_steps_and_many_launches_keep_their_result(tmp_path: Path) -> None:
    # 300 steps, each launching and running one all-reduce: the last complete one is read.
    events = []
    for i in range(300):
        t = i * 1000
        events += [
            _x(f"ProfilerStep#{i}", t, 900, cat="user_annotation"),
            _x("aten::linear", t + 10, 100, **{"Sequence number": i, "Input Dims": [[8, 10]]}),
            _x("autograd::engine::evaluate_function: AddmmBackward0", t + 200, 100),
            _x("c10d::allreduce_", t + 310, 5, **{"Input Dims": [[[1000]]]}),
            _x(
                "record_param_comms",
                t + 311,
                2,
                **{"Collective name": "allreduce", "In msg nelems": 1000, "dtype": "Float"},
            ),
        ]
        if i < 299:  # (the last step's all-reduce never ran: that step is incomplete)
            events.append(_x("gloo:all_reduce", t + 312, 5, tid=3, **{"Input Dims": [[1000]], "Input type": ["float"]}))
    s = read_step(_write(tmp_path, {"traceEvents": events}))
    assert s.step == 298 and [(c.bytes, c.dtype) for c in s.collectives] == [(4000, "Float")]
    assert s.collectives[0].start_s == pytest.approx(312e-6)


# -- shapes, counts and ranks ------------------------------------------------------------------


def test_deeply_nested_input_dims_are_read_without_recursion(tmp_path: Path) -> None:
    # Nested 900 deep (the JSON reader's limit is near 1,000) raised RecursionError.
    deep: Any = [1000]
    for _ in range(900):
        deep = [deep]
    s = read_step(_write(tmp_path, _small(launch_dims=deep)))
    assert [c.bytes for c in s.collectives] == [4000]
    # Deeper than JSON allows, built here: still a loop, not a recursion.
    for _ in range(100_000):
        deep = [deep, [2, 3]]
    ev = _Ev("c10d::allreduce_", 1, 0.0, 1.0, "cpu_op", {})
    assert kineto._nelems(deep, "t.json", ev) == 1000 + 100_000 * 6


@pytest.mark.parametrize(
    "launch_dims, exec_dims, message",
    [
        ([[-1000, -4]], [1000], "'c10d::allreduce_' at 310.0 us: Input Dims has size -1000;"),
        ([[True]], [1000], "'c10d::allreduce_' at 310.0 us: Input Dims has size True;"),
        ([[1.5]], [1000], "'c10d::allreduce_' at 310.0 us: Input Dims has size 1.5;"),
        ([["8"]], [1000], "Input Dims has size '8';"),
        ([[None]], [1000], "Input Dims has size None;"),
        ([[{"n": 8}]], [1000], "Input Dims has size an object;"),
        ([[2, [3]]], [1000], "Input Dims has a list of shapes among sizes;"),
        ([[1000]], [-1000], "'gloo:all_reduce' at 312.0 us: Input Dims has size -1000;"),
        ([[1000]], [False], "'gloo:all_reduce' at 312.0 us: Input Dims has size False;"),
        ([[2**40, 2**40]], [1000], "Input Dims give more than 2^64 - 1 elements"),
        ([[2**32, 2**31], [2**32, 2**31], [2**32, 2**31]], [1000], "Input Dims give more than 2^64 - 1 elements"),
    ],
)
def test_bad_shapes_are_refused_naming_the_event(
    tmp_path: Path, launch_dims: Any, exec_dims: Any, message: str
) -> None:
    with pytest.raises(InputError, match=re.escape(message)) as e:
        read_step(_write(tmp_path, _small(launch_dims=launch_dims, exec_dims=exec_dims)))
    assert e.value.field == "workload" and e.value.message.startswith("t.json: event ")
    if "size" in message:
        assert "expected a shape (a list of integers >= 0) or a list of shapes" in str(e.value)


def test_edge_shapes_still_count() -> None:
    ev = _Ev("c10d::allreduce_", 1, 0.0, 1.0, "cpu_op", {})
    assert kineto._nelems([], "t.json", ev) == 1  # a scalar
    assert kineto._nelems([[]], "t.json", ev) == 1
    assert kineto._nelems([0, 2**80], "t.json", ev) == 0  # (nothing to send however large)
    assert kineto._nelems([[2, 3], [[4], []]], "t.json", ev) == 6 + 4 + 1
    assert kineto._nelems("3", "t.json", ev) is None


def test_a_bad_batch_dimension_and_a_bad_message_count_are_refused(tmp_path: Path) -> None:
    data = _small()
    data["traceEvents"][1]["args"]["Input Dims"] = [[-5, 10]]
    with pytest.raises(InputError, match=r"'aten::linear' at 10.0 us: Input Dims has size -5"):
        read_step(_write(tmp_path, data))
    data["traceEvents"][1]["args"]["Input Dims"] = [[True, 10]]
    with pytest.raises(InputError, match=r"'aten::linear' at 10.0 us: Input Dims has size True"):
        read_step(_write(tmp_path, data))
    for count, message in ((True, "is True"), (-1, "is -1"), (1.5, "is 1.5"), ("8", "is '8'")):
        rpc = _x(
            "record_param_comms", 311, 2, **{"Collective name": "allreduce", "In msg nelems": count, "dtype": "Float"}
        )
        with pytest.raises(
            InputError,
            match=re.escape(
                f"t.json: event 'record_param_comms' at 311.0 us: 'In msg nelems' {message}; expected an integer >= 0"
            ),
        ):
            read_step(_write(tmp_path, _small(extra=(rpc,))))
    rpc = _x("record_param_comms", 311, 2, **{"Collective name": "allreduce", "In msg nelems": 2**64, "dtype": "Float"})
    with pytest.raises(InputError, match=r"'In msg nelems' gives more than 2\^64 - 1 elements"):
        read_step(_write(tmp_path, _small(extra=(rpc,))))


def test_bad_shapes_are_one_line_on_the_command_line(tmp_path: Path) -> None:
    line = _cli_error(_write(tmp_path, _small(launch_dims=[[-1000, -4]])), tmp_path)
    assert line.startswith("tensorwire: error: workload: t.json: event 'c10d::allreduce_' at 310.0 us: ")


@pytest.mark.parametrize("rank", [-1, 10**30, kineto.RANK_MAX + 1, True, "0", 1.5, [0]])
def test_a_rank_outside_0_to_2_31_is_refused(tmp_path: Path, rank: Any) -> None:
    data = _small()
    data["distributedInfo"] = {"rank": rank}
    with pytest.raises(
        InputError, match=r"t.json: distributedInfo.rank is .*; expected an integer from 0 to 2147483647"
    ):
        read_step(_write(tmp_path, data))


def test_ranks_in_range_or_not_recorded(tmp_path: Path) -> None:
    data = _small()
    data["distributedInfo"] = {"rank": kineto.RANK_MAX}
    assert read_step(_write(tmp_path, data)).rank == 2**31 - 1
    data["distributedInfo"] = {"backend": "gloo"}
    assert read_step(_write(tmp_path, data), default_rank=3).rank == 3


# -- times past the simulation horizon ---------------------------------------------------------


def test_compute_past_the_simulation_horizon_is_refused_at_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every ts and dur times 1e300: the import wrote a workload that simulate then refused.
    scaled = _write(tmp_path, _small(scale=1e300))
    with pytest.raises(InputError, match="past the simulation horizon") as e:
        from_profiler_trace(scaled)
    assert e.value.field == "workload"
    text = e.value.message
    assert text.startswith("'t.json' makes an iteration's compute 3e+296 s (ProfilerStep#1's forward and backward")
    assert "expected ts and dur in microseconds" in text
    assert "past the simulation horizon" in _cli_error(scaled, tmp_path)
    assert main(["simulate", "--workload", str(scaled), "-n", "2", "-b", "1Gbps", "-s", "ring"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("tensorwire: error: workload: 't.json' makes")
    # Far below it (3e5 s of compute, 3.5 days) is read.
    assert from_profiler_trace(_write(tmp_path, _small(scale=1e9))).compute_time_s == pytest.approx(3e5)


def _scan_innermost(mods: list[_Ev], op: _Ev) -> Optional[_Ev]:
    """The scan `_module_layers` ran per forward op before (quadratic): the reference."""
    best = None
    for m in mods:
        if m.ts <= op.ts and op.end <= m.end + 1e-3 and (best is None or m.dur <= best.dur):
            best = m
    return best


def test_innermost_modules_are_those_the_scan_found() -> None:
    # Nested, overlapping, equal-length and tolerance-edge (1e-3 us) modules; ops anywhere.
    rng = random.Random(3)
    for _ in range(400):
        mods = [
            _Ev(f"nn.Module: M{i}", 1, float(rng.randrange(20)), rng.choice([0.0, 1.0, 2.0, 5.0, 12.0]), "", {})
            for i in range(rng.randrange(12))
        ]
        ops = [
            _Ev("aten::op", 1, rng.randrange(25) + rng.choice([0.0, 0.5]), rng.choice([0.0, 0.999, 1.0, 3.0]), "", {})
            for _ in range(rng.randrange(12))
        ]
        assert kineto._innermost(mods, ops) == [_scan_innermost(mods, op) for op in ops]


# -- real traces of other jobs (scripts/make_profiler_fixture.py --variants ...) -----------------

LM = DATA / "lm_tiny_rank0.json.gz"
FSDP2 = DATA / "fsdp2_tiny_rank0.json.gz"
BF16 = DATA / "bf16_tiny_rank0.json.gz"
ACCUM = DATA / "accum_tiny_rank0.json.gz"


def test_the_fixtures_are_small() -> None:
    assert sum(p.stat().st_size for p in DATA.glob("*.json.gz")) < 200_000


def test_a_model_starting_with_an_embedding_gets_its_input_batch_not_its_vocabulary() -> None:
    # The LM's first op is aten::embedding(weight [50, 8], indices [4, 6]): the batch was 50.
    w = from_profiler_trace(LM)
    assert w.batch_size == 4
    assert w.total_bytes == 4 * (50 * 8 + 8 * 10 + 10)


def test_the_batch_skips_inputs_shaped_as_a_parameter(tmp_path: Path) -> None:
    embedding = _x("aten::embedding", 5, 4, **{"Sequence number": 0, "Input Dims": [[1000, 64], [8, 32], [], [], []]})
    grad = _x("torch::autograd::AccumulateGrad", 250, 1, **{"Input Dims": [[1000, 64]]})
    assert read_step(_write(tmp_path, _small(extra=(embedding, grad)))).batch_size == 8
    # Without the parameter's shape, the first input's leading dimension, as before.
    assert read_step(_write(tmp_path, _small(extra=(embedding,)))).batch_size == 1000


def test_an_unknown_batch_is_1_with_a_warning_and_import_trace_takes_batch(tmp_path: Path) -> None:
    data = _small()
    del data["traceEvents"][1]["args"]["Input Dims"]  # recorded without shapes
    trace = _write(tmp_path, data)
    assert read_step(trace).batch_size is None
    with pytest.warns(InputWarning, match=r"t.json: batch size unknown .*record_shapes=True.*--batch N"):
        assert from_profiler_trace(trace).batch_size == 1
    assert from_profiler_trace(trace, batch_size=24).batch_size == 24
    out = tmp_path / "w.json"
    p = _import_trace(trace, out)
    assert p.returncode == 0 and p.stderr.startswith("tensorwire: warning: t.json: batch size unknown"), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = subprocess.run(
        [sys.executable, "-m", "tensorwire", "import-trace", str(trace), "--out", str(out), "--batch", "24"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert Workload.from_file(out).batch_size == 24


def test_an_fsdp2_trace_imports_its_reduce_scatters_as_whole_gradients() -> None:
    # Gloo records an all-gather's half and runs a reduce-scatter as an all-reduce of the whole
    # buffer: no launch matched its execution, and the step was "not complete".
    s = read_step(FSDP2)
    kinds = collections.Counter((c.kind, c.phase) for c in s.collectives)
    assert kinds == {("allgather", "forward"): 3, ("allgather", "backward"): 3, ("reduce_scatter", "backward"): 2,
                     ("reduce_scatter", "after"): 1}  # fmt: skip
    assert all(c.end_s > c.start_s for c in s.collectives)  # each matched to its Gloo range
    w = from_profiler_trace(FSDP2)
    # Unsharded, one FSDP unit (a Linear) each; parameter-free ReLUs are no layers.
    assert [layer.name for layer in w.layers] == ["FSDPLinear_0", "FSDPLinear_1", "FSDPLinear_2"]
    assert [sum(t.bytes for t in layer.tensors) for layer in w.layers] == BUCKETS[::-1]
    assert w.total_bytes == PARAM_BYTES
    assert "3 gradient reduce-scatters of 27688 B" in w.description


def test_the_documented_fsdp_workflow_simulates_its_gradients(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--workload", str(FSDP2), "-n", "8", "-b", "25Gbps", "-s", "fsdp", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scaling_factor"] < 1


def test_sharded_launches_match_executions_of_the_part_or_of_the_kind_they_run_as(tmp_path: Path) -> None:
    # c10d::_allgather_base_(output 2000, input 1000): Gloo's range records the 1000; Gloo runs
    # _reduce_scatter_base_(output 1000, input 2000) as an all-reduce of 2000.
    data = _small()
    events = [e for e in data["traceEvents"] if e["name"] not in ("c10d::allreduce_", "gloo:all_reduce")]
    events += [
        _x("c10d::_allgather_base_", 50, 5, **{"Input Dims": [[2000], [1000], [], []]}),
        _x("gloo:all_gather", 52, 5, tid=3, **{"Input Dims": [[1000]], "Input type": ["float"]}),
        _x("c10d::_reduce_scatter_base_", 310, 5, **{"Input Dims": [[1000], [2000], [], []]}),
        _x("gloo:all_reduce", 312, 5, tid=3, **{"Input Dims": [[2000]], "Input type": ["float"]}),
    ]
    s = read_step(_write(tmp_path, {"traceEvents": events}))
    assert [(c.kind, c.bytes, c.phase, round(c.start_s * 1e6)) for c in s.collectives] == [
        ("allgather", 8000, "forward", 52),
        ("reduce_scatter", 8000, "after", 312),
    ]
    assert [c.is_gradient for c in s.collectives] == [False, True]


def test_nccl_sharded_launches_match_kernels_recording_the_part(tmp_path: Path) -> None:
    # record_param_comms gives In 1000 and Out 2000 for an all-gather; its kernel's In msg
    # nelems is the part, 1000.
    data = _small()
    events = [e for e in data["traceEvents"] if e["name"] not in ("c10d::allreduce_", "gloo:all_reduce")]
    rpc = {"Collective name": "_allgather_base", "In msg nelems": 1000, "Out msg nelems": 2000, "dtype": "BFloat16"}
    kernel = {"Collective name": "_allgather_base", "In msg nelems": 1000, "Out msg nelems": 2000, "dtype": "BFloat16"}
    events += [
        _x("record_param_comms", 310, 5, **rpc),
        _x("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 400, 50, tid=7, cat="kernel",
           **kernel),
    ]  # fmt: skip
    s = read_step(_write(tmp_path, {"traceEvents": events}))
    assert [(c.kind, c.bytes, round(c.start_s * 1e6)) for c in s.collectives] == [("allgather", 4000, 400)]


def test_a_bf16_trace_gives_2_byte_elements_so_reduce_dtype_does_not_halve_it_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    w = from_profiler_trace(BF16)
    assert w.dtype_bytes == 2 and w.total_bytes == PARAM_BYTES // 2

    def sent(spec: str) -> int:
        argv = ["simulate", "--workload", str(BF16), "-n", "4", "-b", "25Gbps", "-s", spec, "--json"]
        assert main(argv) == 0
        return int(json.loads(capsys.readouterr().out)["sent_bytes_per_worker"])

    assert sent("ddp:reduce_dtype=bf16") == sent("ddp")
    assert sent("ddp:reduce_dtype=fp32") == 2 * sent("ddp")
    assert from_profiler_trace(RANKS).dtype_bytes == 4


def test_gradient_accumulation_sums_the_micro_batches_and_synchronises_in_the_last_backward() -> None:
    s = read_step(ACCUM)
    assert s.passes == 3 and s.batch_size == 3 * 16
    w = from_profiler_trace(ACCUM)
    assert w.batch_size == 48 and "3 micro-batches" in w.description
    # Each bucket owned by its own layer, as without accumulation: the first layer's backward
    # swallowed the later micro-batches and owned every bucket.
    assert [layer.name for layer in w.layers] == ["Linear_0", "Linear_1", "Linear_2"]
    assert [sum(t.bytes for t in layer.tensors) for layer in w.layers] == BUCKETS[::-1]
    # The earlier micro-batches' forward and backward passes are compute before the last
    # backward (test_passes_are_split_where_a_forward_pass_ran checks the times).
    assert math.fsum(layer.forward_s for layer in s.layers) == pytest.approx(s.forward_s, rel=1e-9)
    assert math.fsum(layer.backward_s for layer in s.layers) <= s.backward_s + 1e-9
    assert s.forward_s + s.backward_s < s.duration_s


def _two_passes(gradient_in_first: bool) -> dict[str, Any]:
    """A step of two forward/backward passes (ops of sequence numbers 1-2, then 3-4); the
    first backward launches an all-reduce or not."""
    events = [
        _x("ProfilerStep#1", 0, 10_000, cat="user_annotation"),
        _x("aten::linear", 10, 50, **{"Sequence number": 1, "Input Dims": [[8, 10], [10, 10]]}),
        _x("aten::relu", 70, 20, **{"Sequence number": 2, "Input Dims": [[8, 10]]}),
        _x("autograd::engine::evaluate_function: AddmmBackward0", 200, 100, **{"Sequence number": 1}),
        _x("aten::linear", 400, 50, **{"Sequence number": 3, "Input Dims": [[8, 10], [10, 10]]}),
        _x("aten::relu", 460, 20, **{"Sequence number": 4, "Input Dims": [[8, 10]]}),
        _x("autograd::engine::evaluate_function: AddmmBackward0", 600, 100, **{"Sequence number": 3}),
        _x("c10d::allreduce_", 710, 5, **{"Input Dims": [[[1000]]]}),
        _x("gloo:all_reduce", 712, 5, tid=3, **{"Input Dims": [[1000]], "Input type": ["float"]}),
    ]
    if gradient_in_first:
        events += [
            _x("c10d::allreduce_", 310, 5, **{"Input Dims": [[[1000]]]}),
            _x("gloo:all_reduce", 312, 5, tid=3, **{"Input Dims": [[1000]], "Input type": ["float"]}),
        ]
    return {"traceEvents": events}


def test_passes_are_split_where_a_forward_pass_ran(tmp_path: Path) -> None:
    s = read_step(_write(tmp_path, _two_passes(False)))
    assert s.passes == 2 and s.batch_size == 16
    assert s.backward_s == pytest.approx(100e-6)
    # Without module ranges a forward runs from the step's start, or its first op: both
    # forwards (200 us, 200 us) and the first backward (100 us).
    assert s.forward_s == pytest.approx((200 + 100 + 200) * 1e-6)


def test_gradients_synchronised_in_an_earlier_micro_batch_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"2 forward/backward passes \(gradient accumulation\) and launches allreduce"):
        read_step(_write(tmp_path, _two_passes(True)))


def test_traces_sharing_no_step_say_so_and_do_not_blame_step(tmp_path: Path) -> None:
    data = load_trace(RANKS[1])
    for e in data["traceEvents"]:
        m = re.fullmatch(r"ProfilerStep#(\d+)", str(e.get("name")))
        if m:
            e["name"] = f"ProfilerStep#{int(m.group(1)) + 5}"
    shifted = _write(tmp_path, data, "rank1.json")
    with pytest.raises(InputError) as e:
        from_profiler_trace([RANKS[0], shifted])
    assert e.value.field == "workload"
    assert "share no complete ProfilerStep (ddp_tiny_rank0.json.gz has 2, 3; rank1.json has 7, 8)" in e.value.message


def test_the_hint_for_a_trace_without_steps_names_the_schedule(tmp_path: Path) -> None:
    # torch records ProfilerStep#N only with a schedule: prof.step() alone marks nothing.
    data = _events()
    data["traceEvents"] = [e for e in data["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    line = _cli_error(_write(tmp_path, data), tmp_path)
    assert "only with a schedule: pass schedule=torch.profiler.schedule(" in line and "prof.step()" in line


def test_a_trace_without_collectives_points_to_tensorwire_profile(tmp_path: Path) -> None:
    data = _events()
    data["traceEvents"] = [e for e in data["traceEvents"] if "all_reduce" not in str(e.get("name"))
                           and "allreduce" not in str(e.get("name"))]  # fmt: skip
    assert "`tensorwire profile` measures its workload" in _cli_error(_write(tmp_path, data), tmp_path)


def test_batch_is_for_traces_and_a_workload_file_keeps_its_own(tmp_path: Path) -> None:
    from tensorwire.workloads.formats import load_workload

    path = tmp_path / "w.json"
    from_profiler_trace(RANKS).save(path)
    with pytest.raises(InputError) as e:
        load_workload(path, batch_size=3)
    assert e.value.args == ("batch", "a tensorwire workload file states its own batch_size; --batch is for traces")
    assert load_workload(RANKS, batch_size=3).batch_size == 3
