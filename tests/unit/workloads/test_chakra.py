"""Chakra execution traces as workloads; fixtures built by chakra_writer (protobuf wire
format written by hand, independent of the reader)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tensorwire._core import InputError
from tensorwire.workload import Workload
from tensorwire.workloads.chakra import COMM_COLL_NODE, COMP_NODE, from_chakra, read_nodes, read_step
from tensorwire.workloads.formats import detect_format

sys.path.insert(0, str(Path(__file__).parent))
import chakra_writer as cw  # noqa: E402

#: A Chakra trace records no batch; the warning that says so is tested where it is given.
pytestmark = pytest.mark.filterwarnings("ignore::tensorwire.io.InputWarning")


def ddp_like(
    path: Path,
    backward_us: tuple[int, ...] = (300, 200, 100),
    buckets: tuple[int, ...] = (2600, 16640, 8448),
    extra: int = 0,
) -> Path:
    """Forward of 3 layers, then per layer a backward op followed by its all-reduce."""
    nodes, prev, nid = [], None, 1
    for i in range(3):
        nodes.append(cw.node(nid, f"aten::linear_{i}", COMP_NODE, 50 + extra, ctrl_deps=[prev] if prev else []))
        prev, nid = nid, nid + 1
    for back, size in zip(backward_us, buckets):
        nodes.append(cw.node(nid, "AddmmBackward0", COMP_NODE, back, data_deps=[prev]))
        prev, nid = nid, nid + 1
        nodes.append(
            cw.node(nid, "ALL_REDUCE", COMM_COLL_NODE, 40, ctrl_deps=[prev], attrs={"comm_type": 0, "comm_size": size})
        )
        nid += 1
    return cw.write(path, nodes)


def test_layers_tensors_and_times(tmp_path: Path) -> None:
    p = ddp_like(tmp_path / "rank0.et")
    assert detect_format(p) == "chakra"
    w = Workload.from_file(p)
    # Three backward segments, one per all-reduce; the last is the layer nearest the input.
    assert [sum(t.bytes for t in layer.tensors) for layer in w.layers] == [8448, 16640, 2600]
    assert [layer.backward_s for layer in w.layers] == pytest.approx([100e-6, 200e-6, 300e-6])
    # The 150 us forward split in proportion to the backward times.
    assert [layer.forward_s for layer in w.layers] == pytest.approx([25e-6, 50e-6, 75e-6])
    s = read_step(p)
    assert [c.phase for c in s.collectives] == ["backward", "backward", "after"]
    assert s.duration_s == pytest.approx(750e-6)


def test_several_ranks_median_and_mismatch(tmp_path: Path) -> None:
    a = ddp_like(tmp_path / "r0.et", (300, 200, 100))
    b = ddp_like(tmp_path / "r1.et", (500, 200, 300))
    c = ddp_like(tmp_path / "r2.et", (400, 600, 200))
    w = from_chakra([a, b, c])
    assert [layer.backward_s for layer in w.layers] == pytest.approx([200e-6, 200e-6, 400e-6])
    d = ddp_like(tmp_path / "r3.et", buckets=(2600, 16640, 8452))
    with pytest.raises(InputError, match="different collectives"):
        from_chakra([a, d])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 2**40)), min_size=1, max_size=12))
def test_bytes_and_backward_time_are_preserved(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[int, int]]
) -> None:
    # A trace of no compute and no bytes is nothing to simulate (refused: the test below).
    assume(any(back or size for back, size in ops))
    nodes, nid = [], 1
    for back, size in ops:
        nodes.append(cw.node(nid, "MulBackward0", COMP_NODE, back, ctrl_deps=[nid - 1] if nid > 1 else []))
        nodes.append(
            cw.node(nid + 1, "ar", COMM_COLL_NODE, 1, ctrl_deps=[nid], attrs={"comm_type": 0, "comm_size": size})
        )
        nid += 2
    p = cw.write(tmp_path_factory.mktemp("c") / "t.et", nodes)
    w = from_chakra(p)
    assert w.total_bytes == sum(size for _, size in ops)
    assert math.fsum(layer.backward_s for layer in w.layers) == pytest.approx(sum(b for b, _ in ops) * 1e-6)
    assert len(w.tensors) == len(ops)


def test_a_trace_of_no_compute_and_no_bytes_is_refused(tmp_path: Path) -> None:
    nodes = [
        cw.node(1, "MulBackward0", COMP_NODE, 0),
        cw.node(2, "ar", COMM_COLL_NODE, 1, ctrl_deps=[1], attrs={"comm_type": 0, "comm_size": 0}),
    ]
    with pytest.raises(InputError, match="nothing to simulate") as e:
        from_chakra(cw.write(tmp_path / "t.et", nodes))
    assert e.value.args[0] == "workload.layers"


def test_reader_decodes_fields(tmp_path: Path) -> None:
    p = cw.write(
        tmp_path / "t.et",
        [
            cw.node(
                7,
                "x",
                COMM_COLL_NODE,
                12,
                ctrl_deps=[],
                attrs={"comm_type": 2, "comm_size": 300, "flag": True, "s": "v"},
            )
        ],
        version="0.0.4",
    )
    version, nodes = read_nodes(p)
    assert version == "0.0.4"
    assert (nodes[0].id, nodes[0].name, nodes[0].type, nodes[0].duration_micros) == (7, "x", COMM_COLL_NODE, 12)
    assert nodes[0].attrs == {"comm_type": 2, "comm_size": 300, "flag": True, "s": "v"}


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda b: b[: len(b) - 5], "truncated"),
        (lambda b: b"", "empty file"),
        (lambda b: b"\x05\x0a\x03abc\xff", "truncated varint"),
    ],
)
def test_malformed_files(tmp_path: Path, mutate, needle: str) -> None:  # type: ignore[no-untyped-def]
    p = ddp_like(tmp_path / "ok.et")
    bad = tmp_path / "bad.et"
    bad.write_bytes(mutate(p.read_bytes()))
    with pytest.raises(InputError, match=needle):
        from_chakra(bad)


def test_bad_nodes(tmp_path: Path) -> None:
    p = cw.write(tmp_path / "a.et", [cw.node(1, "x", COMM_COLL_NODE, 1, attrs={"comm_type": 42, "comm_size": 8})])
    with pytest.raises(InputError, match="comm_type 42"):
        from_chakra(p)
    p = cw.write(tmp_path / "b.et", [cw.node(1, "x", COMP_NODE, 1, ctrl_deps=[9])])
    with pytest.raises(InputError, match="unknown node 9"):
        from_chakra(p)
    p = cw.write(tmp_path / "c.et", [cw.node(1, "x", COMP_NODE, 1)])
    with pytest.raises(InputError, match="no communication nodes"):
        from_chakra(p)
    p = cw.write(tmp_path / "d.et", [cw.node(1, "x", COMM_COLL_NODE, 1, attrs={"comm_type": 0})])
    with pytest.raises(InputError, match="comm_size"):
        from_chakra(p)


def test_cli_simulate_and_error(tmp_path: Path) -> None:
    p = ddp_like(tmp_path / "rank0.et")
    args = [
        sys.executable,
        "-m",
        "tensorwire",
        "simulate",
        "--workload",
        str(p),
        "--workload-format",
        "chakra",
        "-n",
        "2",
        "-b",
        "1Gbps",
        "-s",
        "ring",
        "--json",
    ]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    # It ran on an assumed batch: said after the output, in one line.
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "batch size unknown" in r.stderr, r.stderr
    # Refused after the trace was read (over the flow budget): the error line alone (the
    # warning came first, and a refusal was two lines).
    r = subprocess.run([*args, "--max-flows", "1"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [r.stderr.strip()], r.stderr
    assert "max_flows" in r.stderr and "warning" not in r.stderr, r.stderr
    bad = tmp_path / "bad.et"
    bad.write_bytes(p.read_bytes()[:-3])
    args[args.index(str(p))] = str(bad)
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "malformed Chakra trace" in r.stderr, (
        r.stderr
    )


def test_more_collectives_than_a_workload_holds_are_refused_while_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 99 MB trace of 1.1 million collectives filled 2.7 GB before its layer count was
    # refused; the count is checked as nodes are decoded (the limit lowered here to 3).
    from tensorwire import _core
    from tensorwire.workloads import chakra

    monkeypatch.setattr(_core, "MAX_LAYERS", 3)
    comm = [cw.node(i, f"c{i}", COMM_COLL_NODE, attrs={"comm_type": 0, "comm_size": 4}) for i in range(1, 5)]
    p = cw.write(tmp_path / "many.et", [cw.node(0, "a", COMP_NODE, duration_micros=5), *comm])
    with pytest.raises(InputError, match="more than 3 communication nodes"):
        read_nodes(p)
    monkeypatch.setattr(chakra, "MAX_NODES", 2)
    with pytest.raises(InputError, match="5 nodes, more than the 2 read"):
        read_nodes(p)


def test_a_chakra_trace_says_no_batch_so_1_is_assumed_aloud_or_the_batch_given(tmp_path: Path) -> None:
    from tensorwire.io import InputWarning

    p = ddp_like(tmp_path / "rank0.et")
    with pytest.warns(InputWarning, match=r"rank0.et: batch size unknown \(a Chakra trace records none\)"):
        assert from_chakra(p).batch_size == 1
    assert from_chakra(p, batch_size=32).batch_size == 32
