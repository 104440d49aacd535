"""The CLI contract: options, JSON keys, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tensorwire.cli import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=120)


def test_simulate_json_has_the_contract_keys() -> None:
    p = run(
        "simulate", "--model", "resnet50", "--workers", "8", "--bandwidth", "25Gbps", "--strategy", "ring", "--json"
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    for key in (
        "iteration_time_s",
        "throughput_samples_per_s",
        "scaling_factor",
        "comm_time_s",
        "exposed_comm_s",
        "link_utilization",
    ):
        assert key in out
    assert out["workers"] == 8 and out["strategy"] == "ring"


def test_simulate_collective_and_workload_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["simulate", "--collective", "allreduce:1MiBx4", "-n", "4", "-b", "10Gbps", "-s", "ring", "--json"]) == 0
    )
    first = json.loads(capsys.readouterr().out)
    assert first["iteration_time_s"] > 0
    path = tmp_path / "w.json"
    assert (
        main(
            [
                "simulate",
                "--model",
                "alexnet",
                "-n",
                "2",
                "-b",
                "1Gbps",
                "-s",
                "ps",
                "--latency",
                "10us",
                "--seed",
                "3",
                "--iterations",
                "2",
                "--json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    import tensorwire as tw

    tw.load_model("alexnet").save(path)
    assert main(["simulate", "--workload", str(path), "-n", "2", "-b", "1Gbps", "-s", "ps", "--json"]) == 0


def test_partial_collectives_show_the_number_of_active_processes(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "simulate",
        "--model",
        "resnet50",
        "-n",
        "8",
        "-b",
        "10Gbps",
        "-s",
        "ring:partial=solo",
        "--stragglers",
        "lognormal:0.3",
    ]
    assert main([*args, "--json"]) == 0
    nap = json.loads(capsys.readouterr().out)["nap"]
    assert 1 <= nap <= 8
    assert main(args) == 0
    assert f"{nap:.2f} of 8" in capsys.readouterr().out
    assert main(["simulate", "--model", "resnet50", "-n", "8", "-b", "10Gbps", "-s", "ring"]) == 0
    assert "NAP" not in capsys.readouterr().out


def test_simulate_is_deterministic() -> None:
    args = ("simulate", "--model", "vgg16", "-n", "4", "-b", "10Gbps", "-s", "ps:num_ps=2", "--json")
    assert run(*args).stdout == run(*args).stdout


def test_compare_ranks_strategies_with_speedups() -> None:
    p = run(
        "compare",
        "--model",
        "vgg16",
        "--workers",
        "8",
        "--bandwidth",
        "10Gbps",
        "--strategies",
        "ps,ring:partition=4MiB",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    times = [r["iteration_time_s"] for r in rows]
    assert times == sorted(times)
    ps = next(r for r in rows if r["strategy"] == "ps")
    assert ps["speedup_over_ps"] == 1.0
    assert all(r["speedup_over_ps"] == pytest.approx(ps["iteration_time_s"] / r["iteration_time_s"]) for r in rows)


def test_compare_with_no_arguments_runs_the_default_scenario() -> None:
    p = run("compare")
    assert p.returncode == 0, p.stderr
    for model in ("resnet50", "vgg16", "bert_base"):
        assert model in p.stdout
    assert "vs ps" in p.stdout


def test_listings() -> None:
    p = run("models")
    assert p.returncode == 0 and "resnet50" in p.stdout and "25,557,032" in p.stdout
    p = run("strategies")
    assert p.returncode == 0 and "partition" in p.stdout and "num_ps" in p.stdout
    assert {s["name"] for s in json.loads(run("strategies", "--json").stdout)} >= {"ps", "ring"}
    assert len(json.loads(run("models", "--json").stdout)) == 13 + 4  # zoo + LLMs


BAD = [
    (["simulate", "--model", "resnet-50", "-n", "4", "-b", "1Gbps", "-s", "ring"], "model"),
    (["simulate", "--model", "resnet50", "-n", "0", "-b", "1Gbps", "-s", "ring"], "workers"),
    (["simulate", "--model", "resnet50", "-n", "-3", "-b", "1Gbps", "-s", "ring"], "workers"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "0Gbps", "-s", "ring"], "bandwidth"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "-5Gbps", "-s", "ring"], "bandwidth"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "fast", "-s", "ring"], "bandwidth"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "allgather"], "strategy"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ring:bogus=1"], "strategy.bogus"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ps:num_ps=zero"], "strategy.num_ps"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ring:inflight=0"], "strategy.inflight"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ring:streams=maybe"], "strategy.connections"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ps:dispatch=1us"], "strategy.dispatch"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ring:dispatch=-3us"], "strategy.dispatch"),
    (
        ["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ring:execution=sideways"],
        "strategy.execution",
    ),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ps:execution=stream"], "strategy.execution"),
    (
        ["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ring:segments=overlapped"],
        "strategy.segments",
    ),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ps:segments=pipelined"], "strategy.segments"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ring", "--latency", "-1us"], "latency"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "-s", "ring", "--topology", "mesh"], "topology"),
    (["simulate", "--model", "resnet50", "--gpu", "tpu", "-n", "4", "-b", "1Gbps", "-s", "ring"], "gpu"),
    (["simulate", "--collective", "allreduce:1MiBx0", "-n", "4", "-b", "1Gbps", "-s", "ring"], "collective"),
    (["simulate", "-n", "4", "-b", "1Gbps", "-s", "ring"], "exactly one of"),
    (["simulate", "--model", "resnet50", "-b", "1Gbps", "-s", "ring"], "--workers"),
    (["simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps"], "--strategy"),
    (["simulate", "--model", "resnet50", "--bogus"], "--bogus"),
    (["compare", "--strategies", "ps,warp"], "strategy"),
    (["frobnicate"], "frobnicate"),
]


@pytest.mark.parametrize(("args", "needle"), BAD)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    p = run(*args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("tensorwire: error: ") and needle in lines[0]
    assert "Traceback" not in p.stderr and "panicked" not in p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize(
    ("topology", "line"),
    [
        (
            "nodes:machine=dgx-a100",
            "workers: 64 is not allowed: multitree runs inside one machine and a dgx-a100 has 8 GPUs; "
            "give 8 workers (tree, ring or hierarchical for more machines)",
        ),
        (
            "leaf-spine",
            "topology: leaf-spine has no multi-GPU machine and multitree runs inside one: use nodes:machine=NAME "
            "with as many workers as it has GPUs: p3.16xlarge (8 GPUs), dgx-a100 (8 GPUs), pcie-8 (8 GPUs)",
        ),
    ],
)
def test_more_workers_than_one_machine_is_one_line_and_writes_nothing(tmp_path: Path, topology: str, line: str) -> None:
    trace = tmp_path / "trace.json"
    p = run(
        "simulate",
        "-m",
        "resnet50",
        "-n",
        "64",
        "-b",
        "25Gbps",
        "--topology",
        topology,
        "-s",
        "multitree",
        "--trace",
        str(trace),
    )
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [f"tensorwire: error: {line}"]
    assert not trace.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (
            '{"format": "tensorwire-workload/1", "name": "x", "batch_size": 1, "layers": [{"name": "a", "forward_s": "slow", "backward_s": 0}]}',
            "workload.layers.0.forward_s",
        ),
        ("0.1 fc 100 w0\n", "trace line 1"),
        ("{", "not valid JSON"),
    ],
)
def test_malformed_workload_files_are_one_line(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "w.json"
    path.write_text(content)
    p = run("simulate", "--workload", str(path), "-n", "2", "-b", "1Gbps", "-s", "ring")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr, p.stderr


def test_help_and_version() -> None:
    assert run("--help").returncode == 0
    p = run("--version")
    assert p.returncode == 0 and "tensorwire" in p.stdout


@pytest.mark.parametrize(
    "args, field",
    [
        # 1 worker: the collective took no time, and --json printed Infinity and NaN (not JSON);
        # with --trace it was a traceback.
        (["--collective", "allreduce:1GiB", "-n", "1", "--topology", "rail", "-s", "nccl", "--json"], "workers"),
        (["--collective", "allreduce:1GiB", "-n", "1", "-b", "10Gbps", "-s", "ring", "--trace", "t.json"], "workers"),
        # Options of a model's iteration beside a collective or a workload file were ignored.
        (["--collective", "allreduce:1GiB", "-n", "64", "--topology", "rail", "-s", "nccl", "--seq-len", "1024"],
         "seq-len"),
        (["--collective", "allreduce:1GiB", "-n", "8", "-b", "10Gbps", "-s", "ring", "--gpu", "h100"], "gpu"),
        (["--collective", "allreduce:1GiB", "-n", "8", "-b", "10Gbps", "-s", "ring", "--compute-speedup", "2"],
         "compute-speedup"),
        (["--collective", "allreduce:1GiB", "-n", "8", "-b", "10Gbps", "-s", "ring", "--recompute"], "recompute"),
    ],
)  # fmt: skip
def test_options_a_collective_cannot_use_are_refused(tmp_path: Path, args: list[str], field: str) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "tensorwire", "simulate", *args], capture_output=True, text=True, timeout=120,
        cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(f"tensorwire: error: {field}: ") and not list(tmp_path.iterdir()), p.stderr


def test_model_options_beside_a_workload_file_are_refused(tmp_path: Path) -> None:
    """The file gives the iteration: --gpu/--batch were ignored; the what-ifs still apply."""
    import tensorwire as tw

    path = tmp_path / "w.json"
    tw.load_model("resnet50").save(path)
    base = ["simulate", "--workload", str(path), "-n", "4", "-b", "10Gbps", "-s", "ring"]
    p = run(*base, "--batch", "64")
    assert p.returncode == 2 and p.stderr.startswith("tensorwire: error: batch: applies to --model, not --workload")
    assert run(*base, "--compute-speedup", "2").returncode == 0


def test_a_zero_time_result_traces_as_empty() -> None:
    """Nothing ran (a result of no time, built by hand: one worker with a collective, which
    gave one, is refused now): an empty trace, not an error; a result simulated without a
    timeline still says how to get one."""
    import dataclasses

    import tensorwire as tw
    from tensorwire.chrome_trace import chrome_trace

    two = tw.simulate(tw.Workload.collective("allreduce:1MiB"), tw.Cluster(2, "10Gbps"), "ring")
    one = dataclasses.replace(two, workers=1, iteration_time_s=0.0, timeline=())
    assert chrome_trace(one)["traceEvents"] == []
    with pytest.raises(ValueError, match="timeline=True"):
        chrome_trace(two)


@pytest.mark.parametrize("bad", ["nccl:algo=pat", "hsdp:shard_group=3"])
def test_compare_checks_every_strategy_before_running_any(bad: str) -> None:
    """A strategy the fabric refuses was found only when its turn came, after progress lines
    for the others: now the only line on stderr."""
    p = run("compare", "--model", "llama3_8b", "-n", "64", "--topology", "rail", "--strategies", f"ddp,nccl,fsdp,{bad}")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stdout == "", p.stderr
    assert p.stderr.startswith("tensorwire: error: strategy.")
