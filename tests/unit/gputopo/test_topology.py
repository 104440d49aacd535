"""Topology: presets, adjacency files, detection (nvidia-smi text and NVML), trees and plans."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import types
from pathlib import Path
from typing import Any, Optional

import pytest
from tensorwire import InputError, _core
from tensorwire.gputopo import (
    PRESETS,
    Topology,
    nvlink_weight,
    nvml_adjacency,
    parse_nvidia_smi_topo,
)

DATA = Path(__file__).parent / "data"

#: docs/gputopo.md's p3.16xlarge matrix.
P3 = [
    [0, 2, 2, 3, 3, 1, 1, 1],
    [2, 0, 3, 2, 1, 3, 1, 1],
    [2, 3, 0, 3, 1, 1, 2, 1],
    [3, 2, 3, 0, 1, 1, 1, 2],
    [3, 1, 1, 1, 0, 2, 2, 3],
    [1, 3, 1, 1, 2, 0, 3, 2],
    [1, 1, 2, 1, 2, 3, 0, 3],
    [1, 1, 1, 2, 3, 2, 3, 0],
]


def field_of(e: pytest.ExceptionInfo[InputError]) -> str:
    return str(e.value.args[0])


def message_of(e: pytest.ExceptionInfo[InputError]) -> str:
    return str(e.value.args[1])


# -- presets ------------------------------------------------------------------------------------
def test_presets_are_the_cores() -> None:
    with pytest.raises(InputError) as e:
        _core.gpu_topology(preset="no-such-machine")
    listed = re.search(r"choose one of (.*)$", message_of(e))
    assert listed is not None
    assert tuple(listed.group(1).split(", ")) == PRESETS


def test_preset_matrices() -> None:
    p3 = Topology.preset("p3.16xlarge")
    assert [list(r) for r in p3.adjacency] == P3
    assert p3.source == "p3.16xlarge" and p3.gpus == 8
    a100 = Topology.preset("dgx-a100")
    assert all(a100.weight(i, j) == (0 if i == j else 3) for i in range(8) for j in range(8))
    assert Topology.preset("pcie-8") == Topology.uniform(8)
    assert len(p3.links) == 28 and all(i < j for i, j, _ in p3.links)


def test_unknown_preset_names_the_field_and_the_choices() -> None:
    with pytest.raises(InputError) as e:
        Topology.preset("p4d.24xlarge")
    assert field_of(e) == "preset"
    assert all(name in message_of(e) for name in PRESETS)


# -- adjacency files ----------------------------------------------------------------------------
def test_adjacency_file_object_matrix_and_cli_json_round_trip(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"gpus": 8, "adjacency": P3}))
    b = tmp_path / "b.json"
    b.write_text(json.dumps(P3))
    c = tmp_path / "c.json"
    p3 = Topology.preset("p3.16xlarge")
    c.write_text(json.dumps({**p3.to_dict(), "trees": [t.to_dict() for t in p3.trees(2)]}))
    for path in (a, b, c):
        t = Topology.from_file(path)
        assert t == p3 and hash(t) == hash(p3)
        assert t.source == str(path)


BAD_FILES: list[tuple[str, str, str, str]] = [
    ("not-json", '{"gpus": 2, ', "adjacency", "not valid JSON (line 1"),
    ("no-adjacency", json.dumps({"gpus": 2}), "adjacency", "no 'adjacency' key"),
    (
        "typo-key",
        json.dumps({"gpus": 2, "adjacency": [[0, 1], [1, 0]], "adjacencey": 1}),
        "adjacency",
        "unknown key 'adjacencey'",
    ),
    (
        "gpus-mismatch",
        json.dumps({"gpus": 3, "adjacency": [[0, 1], [1, 0]]}),
        "gpus",
        "'gpus' is 3 but the adjacency matrix has 2 rows",
    ),
    ("gpus-not-int", json.dumps({"gpus": "2", "adjacency": [[0, 1], [1, 0]]}), "gpus", "'gpus' is '2'"),
    (
        "not-square",
        json.dumps([[0, 1], [1, 0, 1]]),
        "adjacency",
        "row 1 has 3 entries; the matrix must be square (2 x 2)",
    ),
    ("float-weight", json.dumps([[0, 1.5], [1.5, 0]]), "adjacency", "entry [0][1] = 1.5 is not an integer link weight"),
    ("bool-weight", json.dumps([[0, True], [True, 0]]), "adjacency", "entry [0][1] = true is not an integer"),
    ("string-row", json.dumps([[0, 1], "1 0"]), "adjacency", 'row 1 is "1 0", not a list'),
    ("asymmetric", json.dumps([[0, 1], [2, 0]]), "adjacency", "symmetric"),
    ("diagonal", json.dumps([[1, 1], [1, 0]]), "adjacency", "[0][0]"),
    ("negative", json.dumps([[0, -1], [-1, 0]]), "adjacency", "[0][1]"),
    ("disconnected", json.dumps([[0, 1, 0], [1, 0, 0], [0, 0, 0]]), "adjacency", "connected"),
    ("empty", json.dumps([]), "adjacency", "non-empty square matrix"),
    ("scalar", json.dumps(3), "adjacency", "expected a JSON object or a square matrix, got int"),
    ("huge", json.dumps([[0, 2**70], [2**70, 0]]), "adjacency", "link weights"),
]


@pytest.mark.parametrize(("name", "text", "field", "words"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_malformed_adjacency_file_is_one_clear_input_error(
    tmp_path: Path, name: str, text: str, field: str, words: str
) -> None:
    path = tmp_path / f"{name}.json"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        Topology.from_file(path)
    assert field_of(e) == field
    assert message_of(e).startswith(f"{name}.json: "), message_of(e)
    assert words in message_of(e)
    assert "\n" not in message_of(e)


def test_missing_or_binary_adjacency_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        Topology.from_file(tmp_path / "absent.json")
    assert field_of(e) == "adjacency" and "cannot read" in message_of(e)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError) as e:
        Topology.from_file(binary)
    assert field_of(e) == "adjacency"


# -- nvidia-smi topo -m -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("sample", "want"),
    [
        ("dgx1v.txt", "p3.16xlarge"),  # DGX-1V / p3.16xlarge, 2017-2019 format: mlx5 NICs, CPU Affinity
        ("dgx1v_nic_numa.txt", "p3.16xlarge"),  # newer format: NIC0 column, NUMA Affinity, GPU NUMA ID (empty cells)
        ("dgx_a100.txt", "dgx-a100"),  # NV12 everywhere, space-aligned, 12 NICs
        ("k80_pcie4.txt", "uniform-4"),  # old format: PIX/PHB, SOC in the legend
        ("pcie2_phb.txt", "uniform-2"),
        ("h100_single.txt", "uniform-1"),  # recorded on a 1-GPU H100 machine (2026): escape codes in the header
    ],
)
def test_nvidia_smi_samples(sample: str, want: str) -> None:
    text = (DATA / sample).read_text()
    topo = Topology.from_nvidia_smi(text)
    expected = Topology.uniform(int(want.split("-")[1])) if want.startswith("uniform") else Topology.preset(want)
    assert topo == expected
    assert topo.source == "nvidia-smi"


def test_nvidia_smi_with_terminal_escapes_and_crlf() -> None:
    lines = (DATA / "dgx1v.txt").read_text().splitlines()
    lines[0] = "\x1b[4m" + lines[0] + "\x1b[0m"  # newer drivers underline the header
    lines[1] = "\x1b[1mGPU0\x1b[0m" + lines[1][4:]
    assert parse_nvidia_smi_topo("\r\n".join(lines)) == P3


def test_nvidia_smi_single_gpu() -> None:
    text = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-15\t0\t\tN/A\n\nLegend:\n\n  X    = Self\n"
    assert parse_nvidia_smi_topo(text) == [[0]]
    t = Topology.from_nvidia_smi(text)
    assert t.gpus == 1 and t.trees(1)[0].edges == ()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("No devices were found\n", "no GPU matrix found"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV1\n", "no row for GPU1"),
        ("\tGPU0\tGPU1\nGPU0\t X \tXYZ\nGPU1\tXYZ\t X \n", "GPU0-GPU1 link 'XYZ' is not understood"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\tNV2\t X \n", "symmetric"),
        ("\tGPU1\tGPU0\nGPU1\t X \tPHB\nGPU0\tPHB\t X \n", "expected GPU0 to GPU1 in order"),
    ],
)
def test_nvidia_smi_errors(text: str, words: str) -> None:
    with pytest.raises(InputError) as e:
        Topology.from_nvidia_smi(text)
    assert words in message_of(e)
    assert field_of(e) in ("nvidia-smi", "adjacency")


def test_nvlink_weights() -> None:
    assert [nvlink_weight(n) for n in (1, 2, 4, 12, 18)] == [2, 3, 3, 3, 3]
    with pytest.raises(InputError):
        nvlink_weight(0)


def _fake_nvidia_smi(tmp_path: Path, sample: Optional[str], status: int = 0) -> str:
    script = tmp_path / "nvidia-smi"
    body = (
        f"exec /bin/cat '{DATA / sample}'"
        if sample
        else "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.' >&2"
    )
    script.write_text(f"#!/bin/sh\n[ \"$1 $2\" = 'topo -m' ] || exit 9\n{body}\nexit {status}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(tmp_path)


def test_detect_runs_nvidia_smi_and_keeps_the_visible_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _fake_nvidia_smi(tmp_path, "dgx1v.txt") + os.pathsep + os.environ["PATH"])
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails: no NVML
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    t = Topology.detect()
    assert t == Topology.preset("p3.16xlarge") and t.source == "nvidia-smi"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,0,3")
    t = Topology.detect()
    assert [list(r) for r in t.adjacency] == [[0, 3, 1], [3, 0, 3], [1, 3, 0]]
    assert "CUDA_VISIBLE_DEVICES=4,0,3" in t.source
    assert Topology.detect(visible=False).gpus == 8
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-b41abe4a")
    with pytest.raises(InputError) as e:
        Topology.detect()
    assert field_of(e) == "CUDA_VISIBLE_DEVICES"
    # "²".isdigit() is True and int("²") a ValueError; 5,000 digits passed int()'s limit.
    for value in ("\u00b2", "9" * 5000):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
        with pytest.raises(InputError) as e:
            Topology.detect()
        assert field_of(e) == "CUDA_VISIBLE_DEVICES" and len(message_of(e)) < 200
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,\u00b2")  # CUDA stops at the first invalid entry
    assert Topology.detect().gpus == 1


def test_nvidia_smi_output_that_is_not_utf8_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A byte that is not UTF-8 (in a legend line) raised UnicodeDecodeError from subprocess.
    sample = tmp_path / "latin1.txt"
    sample.write_bytes((DATA / "dgx1v.txt").read_bytes() + b"\n  caf\xe9 legend\n")
    script = tmp_path / "nvidia-smi"
    script.write_text(f"#!/bin/sh\nexec /bin/cat '{sample}'\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ["PATH"])
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert Topology.detect() == Topology.preset("p3.16xlarge")


def test_detect_without_gpus_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi at all
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(InputError) as e:
        Topology.detect()
    assert field_of(e) == "detect"
    assert "nvidia-smi is not on PATH" in message_of(e) and "pynvml" in message_of(e)
    with pytest.raises(InputError) as e:
        Topology.detect(method="nvml")
    assert field_of(e) == "detect" and "nvidia-ml-py" in message_of(e)
    monkeypatch.setenv("PATH", _fake_nvidia_smi(tmp_path, None, status=9))
    with pytest.raises(InputError) as e:
        Topology.detect(method="nvidia-smi")
    assert "failed (status 9): NVIDIA-SMI has failed" in message_of(e)
    with pytest.raises(InputError) as e:
        Topology.detect(method="lspci")
    assert field_of(e) == "method"


# -- NVML (a stand-in for pynvml) ---------------------------------------------------------------
class _NVMLError(Exception):
    pass


def fake_pynvml(gpus: int, links: dict[int, list[Optional[int]]], switches: int = 0) -> types.ModuleType:
    """GPU i has bus 0x10+i; ``links[i][k]`` is the GPU at the far end of link k (None: down).
    ``switches``: every GPU also has this many links to NVSwitch ports (bus 0xf0+)."""
    m = types.ModuleType("pynvml")
    m.NVMLError = _NVMLError  # type: ignore[attr-defined]
    m.NVML_NVLINK_MAX_LINKS = 12  # type: ignore[attr-defined]
    m.NVML_FEATURE_ENABLED = 1  # type: ignore[attr-defined]
    calls: list[str] = []
    m.calls = calls  # type: ignore[attr-defined]

    def pci(bus: int) -> Any:
        return types.SimpleNamespace(busId=f"00000000:{bus:02X}:00.0".encode())

    def table(h: int) -> list[Any]:
        far: list[Any] = [("gpu", j) for j in links.get(h, [])] + [("switch", k) for k in range(switches)]
        return far

    def state(h: int, link: int) -> int:
        rows = table(h)
        if link >= len(rows):
            raise _NVMLError("Not Supported")
        return 0 if rows[link][1] is None else 1

    def remote(h: int, link: int) -> Any:
        kind, x = table(h)[link]
        return pci(0x10 + x) if kind == "gpu" else types.SimpleNamespace(busId=f"0000:{0xF0 + x:02x}:00.0")

    m.nvmlInit = lambda: calls.append("init")  # type: ignore[attr-defined]
    m.nvmlShutdown = lambda: calls.append("shutdown")  # type: ignore[attr-defined]
    m.nvmlDeviceGetCount = lambda: gpus  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    m.nvmlDeviceGetPciInfo = lambda h: pci(0x10 + h)  # type: ignore[attr-defined]
    m.nvmlDeviceGetNvLinkState = state  # type: ignore[attr-defined]
    m.nvmlDeviceGetNvLinkRemotePciInfo_v2 = remote  # type: ignore[attr-defined]
    return m


def _dgx1_links() -> dict[int, list[Optional[int]]]:
    """Each V100 has 6 NVLinks: one per single-NVLink peer, two per double-NVLink peer."""
    out: dict[int, list[Optional[int]]] = {}
    for i, row in enumerate(P3):
        far: list[Optional[int]] = []
        for j, w in enumerate(row):
            far += [j] * {3: 2, 2: 1}.get(w, 0)
        out[i] = far
    return out


def test_nvml_dgx1_nvswitch_and_pcie() -> None:
    dgx1 = fake_pynvml(8, _dgx1_links())
    assert nvml_adjacency(dgx1) == P3
    assert dgx1.calls == ["init", "shutdown"]  # type: ignore[attr-defined]
    assert nvml_adjacency(fake_pynvml(8, {}, switches=12)) == [list(r) for r in Topology.preset("dgx-a100").adjacency]
    assert nvml_adjacency(fake_pynvml(4, {})) == [list(r) for r in Topology.uniform(4).adjacency]
    down = fake_pynvml(2, {0: [1, None], 1: [0, None]})  # one of two links down: single NVLink
    assert nvml_adjacency(down) == [[0, 2], [2, 0]]


def test_detect_prefers_nvml_and_falls_back_when_it_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(8, _dgx1_links()))
    t = Topology.detect()
    assert t == Topology.preset("p3.16xlarge") and t.source == "nvml"
    broken = fake_pynvml(8, {})

    def no_driver() -> None:
        raise _NVMLError("Driver Not Loaded")

    broken.nvmlInit = no_driver  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    monkeypatch.setenv("PATH", _fake_nvidia_smi(tmp_path, "k80_pcie4.txt"))
    t = Topology.detect()
    assert t == Topology.uniform(4) and t.source == "nvidia-smi"
    with pytest.raises(InputError) as e:
        Topology.detect(method="nvml")
    assert "Driver Not Loaded" in message_of(e)


# -- trees, plans, the rest ---------------------------------------------------------------------
@pytest.mark.parametrize("name", PRESETS)
def test_trees_span_all_gpus_and_are_balanced(name: str) -> None:
    topo = Topology.preset(name)
    trees = topo.trees()
    assert len(trees) == 8 and [t.root for t in trees] == list(range(8))
    for t in trees:
        assert sorted(e.child for e in t.edges) == sorted(set(range(8)) - {t.root})
        assert t.height == 3
        assert t.weight == sum(topo.weight(e.parent, e.child) for e in t.edges)
        assert t.method in ("kernighan-lin", "exhaustive")
    assert trees[0].weight == 20 if name == "p3.16xlarge" else True
    assert topo.trees() is trees  # cached
    with pytest.raises(InputError) as e:
        topo.trees(0)
    assert field_of(e) == "trees"


def _simulate(plan: Any, gpus: int) -> list[list[int]]:
    """Runs every GPU's steps on integer vectors; round by round, sends read before receives land."""
    data = [[(g + 1) * (10 * i + 1) for i in range(plan.elements)] for g in range(gpus)]
    per_gpu = {g: list(plan.steps(g)) for g in range(gpus)}
    for transfers in plan.rounds:
        snapshot = [list(v) for v in data]
        for t in transfers:
            start, end = plan.slices[t.slice]
            for i in range(start, end):
                data[t.dst][i] = data[t.dst][i] + snapshot[t.src][i] if t.reduce else snapshot[t.src][i]
    # Each GPU's own step list matches the global rounds: every send has its receive.
    sends = sorted((g, s.peer, s.start, s.end, s.tag) for g, r in per_gpu.items() for st in r for s in st if s.send)
    recvs = sorted((s.peer, g, s.start, s.end, s.tag) for g, r in per_gpu.items() for st in r for s in st if not s.send)
    assert sends == recvs
    return data


@pytest.mark.parametrize(
    ("elements", "bound", "trees"), [(0, 10, 0), (1, 10, 0), (7, 10, 0), (1000, 1000, 0), (12345, 1000, 3), (9, 1, 0)]
)
def test_plans_sum_on_every_gpu(elements: int, bound: int, trees: int) -> None:
    topo = Topology.preset("p3.16xlarge")
    plan = topo.plan(elements, trees=trees, array_bound=bound)
    assert plan.trees == (1 if elements < bound else (trees or 8))
    total = sum(g + 1 for g in range(8))
    for g, vec in enumerate(_simulate(plan, 8)):
        assert vec == [total * (10 * i + 1) for i in range(elements)], g
    assert topo.plan(elements, trees=trees, array_bound=bound) is plan  # cached


def test_plan_arguments_are_checked() -> None:
    topo = Topology.uniform(3)
    for kwargs, field in [
        ({"elements": -1}, "elements"),
        ({"elements": 5, "trees": -1}, "trees"),
        ({"elements": 5, "array_bound": -2}, "array_bound"),
        ({"elements": 5, "penalty": 0.0}, "penalty"),
    ]:
        with pytest.raises(InputError) as e:
            topo.plan(**kwargs)  # type: ignore[arg-type]
        assert field_of(e) == field
    with pytest.raises(InputError) as e:
        topo.plan(4).steps(3)
    assert field_of(e) == "gpu"


def test_subset_uniform_and_json() -> None:
    p3 = Topology.preset("p3.16xlarge")
    quad = p3.subset([0, 1, 2, 3])
    assert [list(r) for r in quad.adjacency] == [row[:4] for row in P3[:4]]
    assert quad.source == "p3.16xlarge[0,1,2,3]"
    for bad in ([], [0, 0], [8], [True]):
        with pytest.raises(InputError) as e:
            p3.subset(bad)
        assert field_of(e) == "gpus"
    d = p3.to_dict()
    assert d["gpus"] == 8 and d["adjacency"] == P3 and [0, 3, 3] in d["links"]
    assert json.loads(json.dumps(d)) == d
    assert repr(p3) == "Topology(gpus=8, source='p3.16xlarge')"
    with pytest.raises(InputError) as e:
        Topology.uniform(0)
    assert field_of(e) == "gpus"
    nvswitch = Topology.uniform(4, weight=3)
    assert nvswitch.trees(1)[0].weight == 9
