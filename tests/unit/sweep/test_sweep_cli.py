"""``tensorwire sweep``: options, the output file, one-line errors before any work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tensorwire as tw
from click.testing import CliRunner
from tensorwire.sweep import read_rows
from tensorwire.sweep.cli import sweep

# The main CLI with the sweep command registered, as the tensorwire console script has it.
MAIN = (
    "import sys; from tensorwire.cli import app, main; from tensorwire.sweep.cli import sweep; "
    "app.cli.add_command(sweep); sys.exit(main(sys.argv[1:]))"
)


def tensorwire(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", MAIN, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_the_issue_example_writes_one_row_per_configuration(tmp_path: Path) -> None:
    out = tmp_path / "results.parquet"
    result = CliRunner().invoke(
        sweep,
        [
            "--model",
            "resnet50,vgg16",
            "--workers",
            "4,8",
            "--bandwidth",
            "1Gbps,100Gbps",
            "--strategies",
            "ps,ring,ring:partition=4MiB",
            "--out",
            str(out),
            "--jobs",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"{out}: 24 configurations" in result.output
    rows = read_rows(out)
    assert len(rows) == 24
    assert {r["strategy"] for r in rows} == {"ps", "ring", "ring:partition=4MiB"}
    assert all(r["speedup_over_ps"] is not None for r in rows)


def test_every_grid_option(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    result = CliRunner().invoke(
        sweep,
        [
            "-m",
            "resnet50",
            "-n",
            "4",
            "-b",
            "10Gbps",
            "-s",
            "ps,ring",
            "--latency",
            "5us,50us",
            "--gpu",
            "v100",
            "--batch",
            "16",
            "--topology",
            "star,leaf-spine:hosts_per_leaf=2,spines=2",
            "--network",
            "flow,analytical",
            "--iterations",
            "2",
            "--seed",
            "0,7",
            "--compute-speedup",
            "1,4",
            "-o",
            str(out),
            "-j",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = read_rows(out)
    assert len(rows) == 2 * 2 * 2 * 2 * 2 * 2
    assert {r["topology"] for r in rows} == {"star", "leaf-spine:hosts_per_leaf=2,spines=2"}
    assert {(r["batch"], r["iterations"]) for r in rows} == {(16, 2)}
    assert {r["latency_s"] for r in rows} == {5e-6, 50e-6}
    assert {r["compute_speedup"] for r in rows} == {1.0, 4.0}


def test_json_output_and_deterministic(tmp_path: Path) -> None:
    args = ["-m", "vgg16", "-n", "4,8", "-b", "10Gbps", "-s", "ps,ring", "-o"]
    for name in ("a.json", "b.json"):
        assert CliRunner().invoke(sweep, [*args, str(tmp_path / name)]).exit_code == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_a_grid_option_given_twice_adds_to_the_list(tmp_path: Path) -> None:
    # `-m resnet50 -m vgg16 -n 4 -n 8` ran vgg16 on 8 workers only: the last one won.
    twice = ["-m", "resnet50", "-m", "vgg16", "-n", "4", "-n", "8", "-b", "10Gbps", "-s", "ring", "-o"]
    once = ["-m", "resnet50,vgg16", "-n", "4,8", "-b", "10Gbps", "-s", "ring", "-o"]
    for args, name in ((twice, "twice.json"), (once, "once.json")):
        assert CliRunner().invoke(sweep, [*args, str(tmp_path / name)]).exit_code == 0
    rows = read_rows(tmp_path / "twice.json")
    assert sorted((r["model"], r["workers"]) for r in rows) == [
        ("resnet50", 4),
        ("resnet50", 8),
        ("vgg16", 4),
        ("vgg16", 8),
    ]
    assert (tmp_path / "twice.json").read_bytes() == (tmp_path / "once.json").read_bytes()


def test_bad_input_fails_before_any_simulation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tensorwire.sweep.run as run

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("simulated before validating")

    monkeypatch.setattr(run, "simulate", never)
    out = tmp_path / "r.csv"
    result = CliRunner().invoke(sweep, ["-m", "vgg16", "-n", "4,8", "-b", "10Gbps,5Gbs", "-o", str(out)])
    assert isinstance(result.exception, tw.InputError) and result.exception.args[0] == "bandwidth"
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-n", "4,zero"], "tensorwire: error: workers: 'zero' is not an integer"),
        # Past the core's 32-bit count: was an OverflowError traceback from the grid's probe.
        (
            ["-n", "99999999999999999999999"],
            "tensorwire: error: workers: 99999999999999999999999 is not allowed; need an integer from 1 to 1048576",
        ),
        (["-s", "ps,ring:partition=huge"], "tensorwire: error: strategy.partition"),
        (["--topology", "ring", "-s", "ring+multicast"], "tensorwire: error: topology: ring+multicast with 4 workers"),
        (["--compute-speedup", "-1"], "tensorwire: error: compute_speedup"),
        (["--out", "r.xlsx"], "tensorwire: error: out: 'r.xlsx': choose a file ending in .csv, .json, .parquet"),
        (["--jobs", "0"], "tensorwire: error: Invalid value for '--jobs' / '-j'"),
    ],
)
def test_errors_are_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    base = {"-n": "4", "-b": "10Gbps", "-m": "vgg16", "--out": "r.csv"}
    for i in range(0, len(args), 2):
        base.pop(args[i], None)
    full = [x for kv in base.items() for x in kv] + args
    p = tensorwire("sweep", *full, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(message), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not any(tmp_path.iterdir())


#: A grid whose second point fails before simulating for what depends on the whole point
#: (the model with the strategy), not on any one axis: alexnet runs, gpt3_175b needs more
#: flows than the budget, or more pieces than a run can hold.
LATER_POINT_FAILS = [
    (
        ["-s", "ring:partition=1MiB"],
        "tensorwire: error: max_flows: gpt3_175b (h100, batch 1 x 2048 tokens, MFU 0.4, compute x1) on 4 workers",
    ),
    (
        ["-s", "ring:partition=64KiB"],
        "tensorwire: error: strategy.partition: gpt3_175b (h100, batch 1 x 2048 tokens, MFU 0.4, compute x1)",
    ),
]


@pytest.mark.parametrize(("args", "message"), LATER_POINT_FAILS, ids=["flow-budget", "pieces"])
def test_a_later_point_s_error_prints_nothing_before_it(tmp_path: Path, args: list[str], message: str) -> None:
    """Every point's scenario is checked before the first runs: one line on stderr, nothing on
    stdout (it printed the first point's progress, then the error), no file, exit 2."""
    p = tensorwire(
        "sweep", "-m", "alexnet,gpt3_175b", "-n", "4", "-b", "25Gbps", "-j", "1", "-o", "r.csv", *args, cwd=tmp_path
    )
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    assert p.stderr.startswith(message) and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not any(tmp_path.iterdir())


def test_points_are_checked_without_simulating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The up-front check builds each scenario in the core and simulates none of them."""
    import tensorwire.sweep.run as run

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("simulated before checking every point")

    monkeypatch.setattr(run, "simulate", never)
    out = tmp_path / "r.csv"
    result = CliRunner().invoke(
        sweep, ["-m", "alexnet,gpt3_175b", "-n", "4", "-s", "ring:partition=1MiB", "-o", str(out)]
    )
    assert isinstance(result.exception, tw.InputError) and result.exception.args[0] == "max_flows", result.output
    assert result.output == "" and not out.exists()
    # The API too (its default is no flow budget: pieces past what a run holds).
    with pytest.raises(tw.InputError, match="strategy.partition|gpt3_175b") as e:
        run.run_grid("alexnet,gpt3_175b", 4, "25Gbps", "ring:partition=64KiB", jobs=1)
    assert e.value.args[0] == "strategy.partition" and e.value.args[1].startswith("gpt3_175b "), e.value.args


def test_nccl_timed_defaults_are_left_out_of_the_analytical_network(tmp_path: Path) -> None:
    """NCCL's model times its collectives whatever the network model: under ``analytical``
    the default strategies it times gave the flow model's numbers again. They are left out
    of those points with a note; named with -s, the point is refused."""
    p = tensorwire(
        "sweep", "-m", "resnet50", "-n", "16", "--topology", "rail:node=dgx-h100", "--network", "flow,analytical",
        "-j", "1", "-o", "r.csv", cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "left out nccl (1 of its points), ddp (1 of its points)" in p.stderr
    assert "has no network model to choose" in p.stderr
    rows = read_rows(tmp_path / "r.csv")
    analytical = {r["strategy"] for r in rows if r["network"] == "analytical"}
    assert analytical and not analytical & {"nccl", "ddp", "fsdp", "zero3"}, analytical
    assert {"nccl", "ddp"} <= {r["strategy"] for r in rows if r["network"] == "flow"}
    p = tensorwire(
        "sweep", "-m", "resnet50", "-n", "16", "--topology", "rail:node=dgx-h100", "--network", "analytical",
        "-s", "ddp", "-o", "r2.csv", cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 2 and p.stderr.startswith("tensorwire: error: network:"), p.stderr


def test_an_llm_computes_on_each_rails_node_gpu(tmp_path: Path) -> None:
    """Without --gpu an LLM took the default H100 on every fabric of the grid; on a rail it
    computes on the node's GPU, on other fabrics on the default, one row per point."""
    p = tensorwire(
        "sweep", "-m", "llama3_8b", "-n", "16", "-b", "100Gbps", "-s", "ddp,ring", "-j", "1", "-o", "r.csv",
        "--topology", "rail:node=dgx-a100,rail:node=dgx-h100,star", cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    rows = read_rows(tmp_path / "r.csv")
    gpus = {(r["topology"], r["strategy"]): r["gpu"] for r in rows}
    assert len(rows) == len(gpus) == 6
    assert {g for (t, _), g in gpus.items() if t == "rail:node=dgx-a100"} == {"a100-80gb"}
    assert {g for (t, _), g in gpus.items() if t != "rail:node=dgx-a100"} == {"h100"}
