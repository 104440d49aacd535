"""Malformed, huge or hostile input files: one line, exit 2, no traceback; nothing that
``import-trace`` writes is refused by ``simulate`` later."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any, Optional

import pytest
from chakra_writer import key, length_delimited, node, write
from tensorwire._core import InputError
from tensorwire.cli import main
from tensorwire.workload import Layer, Tensor
from tensorwire.workloads import chakra, kineto
from tensorwire.workloads.kineto import load_trace
from tensorwire.workloads.layering import Collective, with_owners

DATA = Path(__file__).parent / "data"
RANK0 = DATA / "ddp_tiny_rank0.json.gz"
SIM = ["-n", "4", "-b", "25Gbps", "-s", "ring"]


def _workload(**over: Any) -> dict[str, Any]:
    w: dict[str, Any] = {
        "format": "tensorwire-workload/1",
        "name": "w",
        "batch_size": 2,
        "layers": [{"name": "a", "forward_s": 0.001, "backward_s": 0.002, "tensors": [{"name": "t", "bytes": 4}]}],
    }
    w.update(over)
    return w


def _refused(capsys: pytest.CaptureFixture[str], path: Path, needle: str, *, imported: bool = True) -> None:
    """simulate --workload and import-trace both refuse ``path`` in one line with ``needle``."""
    runs = [["simulate", "--workload", str(path), *SIM]]
    if imported:
        runs.append(["import-trace", str(path), "-o", str(path.parent / "out.json")])
    for args in runs:
        assert main(args) == 2, args
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("tensorwire: error: ") and "Traceback" not in err, err
        assert needle in err, err
    assert not (path.parent / "out.json").exists()


@pytest.mark.parametrize(
    "name, content, needle",
    [
        (
            "bytes_2e64.json",
            json.dumps(
                _workload(
                    layers=[{"name": "a", "forward_s": 0, "backward_s": 0, "tensors": [{"name": "t", "bytes": 2**64}]}]
                )
            ),
            "workload.layers.0.tensors.0.bytes",
        ),
        (
            "bytes_1e20.json",
            json.dumps(
                _workload(
                    layers=[{"name": "a", "forward_s": 0, "backward_s": 0, "tensors": [{"name": "t", "bytes": 1e20}]}]
                )
            ),
            "workload.layers.0.tensors.0.bytes",
        ),
        ("batch.json", json.dumps(_workload(batch_size=10**30)), "workload.batch_size"),
        ("batch32.json", json.dumps(_workload(batch_size=2**32 + 1)), "workload.batch_size"),
        (
            "sum.json",
            json.dumps(
                _workload(
                    layers=[
                        {
                            "name": "a",
                            "forward_s": 0,
                            "backward_s": 0,
                            "tensors": [{"name": "t", "bytes": 2**63}, {"name": "u", "bytes": 2**63}],
                        }
                    ]
                )
            ),
            "workload.tensors",
        ),
        (
            "surrogate.json",
            '{"format": "tensorwire-workload/1", "name": "\\ud800", "batch_size": 1, "layers": [{"name": "a", "forward_s": 0, "backward_s": 0}]}',
            "lone surrogate",
        ),
        ("nested.json", '{"format": ' + "[" * 50000 + "]" * 50000 + "}", "nested too deeply"),
        ("fa_nan.txt", "# batch_size: nan\n0 t 4 w0 ps\n", "trace.batch_size"),
        ("fa_inf.txt", "# batch_size: inf\n0 t 4 w0 ps\n", "trace.batch_size"),
        ("fa_size.txt", f"0 t {10**23} w0 ps\n", "trace line 1"),
        ("fa_size64.txt", f"0 t {2**64} w0 ps\n", "trace line 1"),
        # Empty, or not any format: named as the file and what it was read as.
        ("empty.json", "", "empty.json: the file is empty"),
        ("garbage.json", "garbage\n", "garbage.json: not JSON, so read as a five-attribute trace"),
    ],
)
def test_workload_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: str, needle: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8", errors="surrogatepass")
    _refused(capsys, path, needle)


@pytest.mark.parametrize("where", [10, 100_000])
def test_non_utf8_anywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str], where: int) -> None:
    text = json.dumps(_workload(description=" " * 200_000)).encode()
    path = tmp_path / "w.json"
    path.write_bytes(text[:where] + b"\xff" + text[where:])
    _refused(capsys, path, f"not UTF-8 text (byte {where})")
    fa = tmp_path / "fa.txt"
    fa.write_bytes(b"0 t 4 w0 ps\n" + b"#" * where + b"\xfe\n")
    _refused(capsys, fa, "not UTF-8")
    # A gzip Kineto trace read as a tensorwire file is not text either.
    assert main(["import-trace", str(RANK0), "--workload-format", "tensorwire", "-o", str(tmp_path / "o.json")]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_deeply_nested_kineto_and_adjacency(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    k = tmp_path / "k.json"
    k.write_text('{"traceEvents": ' + "[" * 50000 + "]" * 50000 + "}")
    _refused(capsys, k, "nested too deeply")
    args = tmp_path / "k_args.json"
    args.write_text('{"traceEvents": [{"ph": "X", "ts": 0, "args": ' + "[" * 50000 + "]" * 50000 + "}]}")
    _refused(capsys, args, "nested too deeply")
    adj = tmp_path / "adj.json"
    adj.write_text("[" * 50000 + "]" * 50000)
    assert main(["topology", "--adjacency", str(adj)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err == "tensorwire: error: adjacency: adj.json: not valid JSON (nested too deeply)"
        or "nested too deeply" in err
    )


@pytest.mark.parametrize(
    "event, message",
    [
        ('{"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 5, "tid": {}}', "has tid {}"),
        ('{"ph": "X", "name": "a", "ts": 1' + "0" * 400 + ', "dur": 1}', "bad ts/dur"),
        ('{"ph": "X", "name": "ProfilerStep#1' + "0" * 4400 + '", "ts": 0, "dur": 5}', "no ProfilerStep#N"),
        # An infinite dur ended as a generated layer's error; a step numbered in other digits
        # was read as a step.
        ('{"ph": "X", "name": "a", "ts": 0, "dur": 1e999}', "bad ts/dur"),
        ('{"ph": "X", "name": "ProfilerStep#\u0661", "ts": 0, "dur": 5}', "no ProfilerStep#N"),
    ],
)
def test_kineto_events_of_the_wrong_shape_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], event: str, message: str
) -> None:
    # A dict as a thread id raised "unhashable type"; a 400-digit ts an OverflowError; a
    # step number of 4,401 digits Python's ValueError.
    k = tmp_path / "k.json"
    k.write_text('{"traceEvents": [' + event + "]}")
    _refused(capsys, k, message)


def test_adjacency_weights_are_0_to_3_and_rendered_without_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "adj.json"
    big.write_text("[[0,99],[99,0]]")
    assert main(["topology", "--adjacency", str(big)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "adjacency" in err and "0-3" in err
    odd = tmp_path / "[red]x.json"
    odd.write_text("[[0,3],[3,0]]")
    assert main(["topology", "--adjacency", str(odd)]) == 0
    assert "[red]x.json" in capsys.readouterr().out


def test_chakra_sizes_beyond_64_bits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # comm_size as uint64_val (field 13) holding a 10-byte varint: 2**69.
    size = length_delimited(1, b"comm_size") + key(13, 0) + bytes([0x80] * 9 + [0x40])
    path = write(
        tmp_path / "c.et",
        [
            node(0, "fwd", 4, 10),
            node(1, "layerBackward", 4, 10, ctrl_deps=[0]),
            node(2, "ar", 7, 5, ctrl_deps=[1], attrs={"comm_type": 0}) + length_delimited(10, size),
        ],
    )
    assert chakra.read_nodes(path)[1][2].attrs["comm_size"] == 2**69
    _refused(capsys, path, "comm_size")


def test_kineto_dims_beyond_64_bits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = load_trace(RANK0)
    for e in data["traceEvents"]:
        a = e.get("args", {})
        for field in ("Input Dims", "In msg nelems", "Out msg nelems"):
            if field in a and e.get("name") in ("gloo:all_reduce", "c10d::allreduce_", "record_param_comms"):
                a[field] = [[10**30]] if field == "Input Dims" else 10**30
    path = tmp_path / "k.json"
    path.write_text(json.dumps(data))
    # Naming the file and the event (it was `tensor.bytes: an integer of 102 bits`).
    _refused(capsys, path, "are more than 2^64 bytes")


def test_gzip_bomb_is_refused_without_inflating_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(kineto, "TRACE_FILE_LIMIT", 2**20)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (4 * 2**20) + b"]}"))
    assert bomb.stat().st_size < 2**16
    with pytest.raises(InputError, match="decompresses to more than the 1 MiB"):
        load_trace(bomb)
    # Two gzip members are both read (gzip's own rule).
    two = tmp_path / "two.json.gz"
    two.write_bytes(gzip.compress(b'{"traceEvents": ') + gzip.compress(b"[]}"))
    assert load_trace(two) == {"traceEvents": []}


def test_file_size_caps_and_devices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tensorwire.io

    monkeypatch.setattr(tensorwire.io, "WORKLOAD_FILE_LIMIT", 2**20)
    big = tmp_path / "big.json"
    big.write_text(json.dumps(_workload(description="x" * 2**21)))
    _refused(capsys, big, "larger than the 1 MiB")
    assert main(["simulate", "--workload", "/dev/zero", *SIM]) == 2
    assert capsys.readouterr().err.strip() == "tensorwire: error: workload: '/dev/zero' is a device, not a file"


def test_a_long_description_is_cut_in_titles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps(_workload(description="[bold]" + "d" * 100_000)))
    assert main(["simulate", "--workload", str(path), *SIM]) == 0
    out = capsys.readouterr().out
    assert "[bold]" in out and len(out) < 10_000
    assert main(["import-trace", str(path), "-o", str(tmp_path / "o.json")]) == 0
    assert len(capsys.readouterr().out) < 10_000


def _import_refused(capsys: pytest.CaptureFixture[str], args: list[str], out: Path, needle: str) -> None:
    """``import-trace ARGS -o OUT`` exits 2 with one line holding ``needle`` and writes nothing."""
    assert main(["import-trace", *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("tensorwire: error: ") and "Traceback" not in err, err
    assert needle in err, err
    assert not out.exists()
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")] == []


@pytest.mark.parametrize("content", ["{}", '{"foo": 1}', '{"num_nodes": 4, "bandwidth": "10Gbps"}'])
def test_json_that_is_neither_a_trace_nor_a_workload_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    path = tmp_path / "e.json"
    path.write_text(content)
    needle = "workload: e.json: no 'traceEvents' list; expected the JSON of torch.profiler's export_chrome_trace"
    _import_refused(capsys, [str(path)], tmp_path / "j.json", needle)


def test_the_same_rank_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The same file twice, before it is read (a file that records no rank takes its position).
    needle = f"workload: {RANK0} and {RANK0} are the same file; give one trace per rank"
    _import_refused(capsys, [str(RANK0), str(RANK0)], tmp_path / "j.json", needle)
    copy = tmp_path / "copy.json.gz"
    copy.write_bytes(RANK0.read_bytes())
    _import_refused(capsys, [str(RANK0), str(copy)], tmp_path / "j.json", f"rank 0 is in two files, {RANK0} and {copy}")


@pytest.mark.parametrize("name", ["j.csv", "j.json.gz", "j"])
def test_out_must_be_a_json_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    out = tmp_path / name
    _import_refused(capsys, [str(RANK0)], out, f"out: {str(out)!r}: choose a file ending in .json")
    assert main(["import-trace", str(RANK0), "-o", str(tmp_path / "J.JSON")]) == 0
    assert (tmp_path / "J.JSON").is_file()


def test_profile_output_must_be_a_json_file_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same rule for `profile -o` (shared: `tensorwire.io.check_workload_output`), checked
    before torch is needed or the model runs."""
    out = tmp_path / "p.csv"
    assert main(["profile", "resnet18", "-o", str(out)]) == 2
    assert (
        capsys.readouterr().err
        == f"tensorwire: error: output: {str(out)!r}: choose a file ending in .json (a tensorwire-workload/1 file)\n"
    )
    assert not out.exists()


def _reference(layers: list[Layer], colls: list[Collective]) -> list[Optional[str]]:
    """The old quadratic rule: the first tensor (dict order) whose name ends .KIND#INDEX."""
    owner = {t.name: layer.name for layer in layers for t in layer.tensors}
    return [
        next((n for t, n in owner.items() if t.endswith(f".{c.kind}#{c.index}")), None) if c.is_gradient else None
        for c in colls
    ]


@pytest.mark.parametrize("seed", range(20))
def test_with_owners_matches_the_quadratic_rule(seed: int) -> None:
    rng = random.Random(seed)
    kinds = ["allreduce", "allgather", "reduce_scatter"]
    colls = [
        Collective(rng.choice(kinds), 4, "float", 0, 0, 0, rng.choice(["forward", "backward", "after"]), index=i)
        for i in range(rng.randint(0, 30))
    ]
    layers = []
    for j in range(rng.randint(1, 6)):
        name = rng.choice(["l", "a.b", "x.y.z", f"m{j}"])
        tensors = tuple(
            Tensor(f"{name}.{c.kind}#{c.index}" if rng.random() < 0.8 else f"{name}{c.kind}#{c.index}", 4)
            for c in rng.sample(colls, k=min(len(colls), rng.randint(0, 8)))
        )
        layers.append(Layer(name, 0.0, 0.0, tensors))
    assert [c.layer for c in with_owners(layers, colls)] == _reference(layers, colls)


def _cluster_file() -> dict[str, Any]:
    """A complete cluster file (every key ``--cluster`` requires) for a ``star`` of 1 Gbit/s."""
    from tensorwire import _core
    from tensorwire.calibrate.fit import Calibration

    source = {"path": "a.log", "sha256": "0" * 64, "collective": "allreduce", "nodes": 4, "gpus_per_node": 1}
    return {
        "tensorwire_cluster": 1,
        "topology": "star",
        "bandwidth_bytes_per_s": 1e9,
        "latency_s": 5e-6,
        "transport": "rdma",
        "gpus_per_node": 1,
        "calibration": Calibration().as_dict(),
        "nccl_version_modelled": _core.NCCL_VERSION,
        "nccl_version_measured": None,
        "sources": [{**source, "gpu": "NVIDIA H100 80GB HBM3", "rows": 3}],
        "max_abs_error": 0.0,
        "measured_with": {"algo": None, "proto": None, "strategy": "nccl"},
        "created": "2026-01-01T00:00:00Z",
    }


def test_an_output_over_an_input_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``import-trace --out`` over a trace and ``simulate --trace`` over its workload or
    cluster file wrote over the input (a 138 KB profiler trace became a 900 B workload file)."""
    trace = tmp_path / "rank0.json"
    trace.write_bytes(gzip.decompress(RANK0.read_bytes()))
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(_workload()))
    cluster = tmp_path / "c.json"
    cluster.write_text(json.dumps(_cluster_file()))
    before = {p: p.read_bytes() for p in (trace, workload, cluster)}
    for argv, what in (
        (["import-trace", str(trace), "--out", str(trace)], "out: {} is one of the traces"),
        (["simulate", "--workload", str(workload), *SIM, "--trace", str(workload)], "trace: {} is one of the workload files"),
        (["simulate", "--workload", str(workload), "-n", "4", "-s", "ring", "--cluster", str(cluster), "--trace",
          str(tmp_path / "." / "c.json")], "trace: {} is one of the cluster files"),
    ):  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and what.format(argv[-1]) in err, err
    assert {p: p.read_bytes() for p in before} == before


def test_an_empty_workload_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--name ""`` was taken as no name given (the file's name used instead)."""
    out = tmp_path / "w.json"
    assert main(["import-trace", str(RANK0), "--name", " ", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == "tensorwire: error: name: is empty; give the workload a name, or leave --name out for the default\n"
    assert not out.exists()
