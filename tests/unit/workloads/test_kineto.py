"""PyTorch profiler traces as workloads, on the DDP/Gloo fixtures made by
scripts/make_profiler_fixture.py (no torch needed here)."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tensorwire._core import InputError
from tensorwire.cli import main
from tensorwire.workload import Workload
from tensorwire.workloads.formats import detect_format
from tensorwire.workloads.kineto import from_profiler_trace, load_trace, read_step

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


def _cli_error(path: Path, tmp_path: Path) -> str:
    out = tmp_path / "out.json"
    p = subprocess.run(
        [sys.executable, "-m", "tensorwire", "import-trace", str(path), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
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
