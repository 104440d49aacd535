"""A built-in model's options (--gpu, --batch, --seq-len, --mfu, --recompute) beside a
workload file alone: refused by compare, sweep and report as simulate refuses them, in the
same words. They were ignored, even values that exist nowhere (`--gpu nonsense-gpu`), and
sweep wrote rows saying gpu ``file`` and the file's batch."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import tensorwire as tw
from tensorwire.sweep import expand

GIVES = "applies to --model, not --workload (the file gives the iteration)"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


@pytest.fixture
def workload(tmp_path: Path) -> Path:
    path = tmp_path / "w.json"
    tw.load_model("resnet50").save(path)
    return path


@pytest.mark.parametrize(
    "args, field",
    [
        (["compare", "-n", "4", "-s", "ring,ps", "--gpu", "nonsense-gpu", "--batch", "7"], "gpu"),
        (["compare", "-n", "4", "-s", "ring", "--seq-len", "7", "--mfu", "0.9"], "seq-len"),
        (["compare", "-n", "4", "-s", "ring", "--mfu", "0.9"], "mfu"),
        (["compare", "-n", "4", "-s", "ring", "--recompute"], "recompute"),
        (["sweep", "-n", "4", "-s", "ring", "--gpu", "nonsense-gpu", "--batch", "7", "-o", "wb.csv"], "gpu"),
        (["sweep", "-n", "4", "-s", "ring", "--batch", "7", "-o", "wb.csv"], "batch"),
        (["report", "-n", "4", "-s", "ring", "--gpu", "nonsense-gpu", "--batch", "7", "--out", "r.html"], "gpu"),
        (["report", "-n", "4", "-s", "ring", "--batch", "7", "--out", "r.html"], "batch"),
    ],
)  # fmt: skip
def test_model_options_beside_a_workload_file_alone_are_refused(workload: Path, args: list[str], field: str) -> None:
    p = run(*args, "--workload", workload.name, cwd=workload.parent)
    assert p.returncode == 2 and p.stdout == "", p.stderr
    assert p.stderr == f"tensorwire: error: {field}: {GIVES}\n"
    assert [f.name for f in workload.parent.iterdir()] == ["w.json"]  # no results file, no report


def test_compare_says_what_simulate_says(workload: Path) -> None:
    flags = ["--workload", workload.name, "-n", "4", "-b", "25Gbps", "--gpu", "nonsense-gpu", "--batch", "7"]
    simulate = run("simulate", "-s", "ring", *flags, cwd=workload.parent)
    compare = run("compare", "-s", "ring", *flags, cwd=workload.parent)
    assert simulate.returncode == compare.returncode == 2
    assert simulate.stderr == compare.stderr == f"tensorwire: error: gpu: {GIVES}\n"


def test_beside_a_model_they_still_apply_to_its_rows(workload: Path) -> None:
    """With --model too, --gpu and --batch are the model's (the file's row keeps its own)."""
    p = run(
        "sweep", "-m", "resnet50", "--workload", workload.name, "-n", "4", "-s", "ring", "--gpu", "v100",
        "--batch", "16", "-o", "s.csv", cwd=workload.parent,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader((workload.parent / "s.csv").open()))
    assert [(r["model"], r["gpu"], r["batch"]) for r in rows] == [
        ("resnet50", "v100", "16"),
        ("resnet50 (w.json)", "file", "32"),
    ]
    p = run(
        "compare", "-m", "resnet50", "--workload", workload.name, "-n", "4", "-s", "ring", "--batch", "16",
        "--json", cwd=workload.parent,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("axis, field", [({"gpus": "nonsense-gpu"}, "gpu"), ({"batches": [7]}, "batch")])
def test_the_grid_refuses_them_for_a_workload_file_alone(workload: Path, axis: dict[str, object], field: str) -> None:
    with pytest.raises(tw.InputError, match=f"^{field}: applies to --model"):
        expand(workers=4, strategies="ring", workload_file=str(workload), **axis)  # type: ignore[arg-type]
    # Left at their defaults they are not given.
    assert [c.gpu for c in expand(workers=4, strategies="ring", workload_file=str(workload), gpus=[None])] == ["file"]
