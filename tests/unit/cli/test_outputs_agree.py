"""What a command prints agrees with what it ran: a workload file named like a built-in model
keeps its own rows, `--json` is the result without the trace, a failure shows in `jobs`,
overloaded links are flagged in sweeps and reports, small rates keep their decimals."""

from __future__ import annotations

import csv
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tensorwire import Layer, Tensor, Workload, load_model
from tensorwire._core import InputError
from tensorwire.cluster import Cluster
from tensorwire.result import over_capacity
from tensorwire.strategy import latency_seen
from tensorwire.sweep.grid import Config
from tensorwire.units import format_count
from tensorwire.workloads.formats import name_apart


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def _file_named_like_resnet50(tmp_path: Path) -> Path:
    """A workload file whose name is "resnet50" but whose layers are a small toy's (as
    `tensorwire profile resnet50` names its output)."""
    path = tmp_path / "mine.json"
    layers = [{"name": "fc", "forward_s": 0.0005, "backward_s": 0.001, "tensors": [{"name": "w", "bytes": 400_000}]}]
    path.write_text(
        json.dumps({"format": "tensorwire-workload/1", "name": "resnet50", "batch_size": 16, "layers": layers})
    )
    return path


def test_compare_keeps_a_file_named_like_a_model_apart_from_the_model(tmp_path: Path) -> None:
    mine = _file_named_like_resnet50(tmp_path)
    p = run("compare", "-m", "resnet50", "--workload", str(mine), "-n", "8", "-b", "10Gbps", "-s", "ps,ring", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    by_model: dict[str, dict[str, float]] = {}
    for r in rows:
        by_model.setdefault(r["model"], {})[r["strategy"]] = r["iteration_time_s"]
    assert set(by_model) == {"resnet50", "resnet50 (mine.json)"}
    # The zoo's ResNet-50 moves 97.5 MiB; the file 400 kB: its rows are far shorter.
    assert by_model["resnet50 (mine.json)"]["ring"] < by_model["resnet50"]["ring"] / 10
    # Both tables in the text output too, under their own titles.
    text = run("compare", "-m", "resnet50", "--workload", str(mine), "-n", "8", "-b", "10Gbps", "-s", "ps,ring")
    assert "resnet50 on 8 workers" in text.stdout and "resnet50 (mine.json) on 8 workers" in text.stdout


def test_sweep_and_report_keep_a_file_named_like_a_model_apart(tmp_path: Path) -> None:
    mine = _file_named_like_resnet50(tmp_path)
    out = tmp_path / "s.csv"
    p = run(
        "sweep", "-m", "resnet50", "--workload", str(mine), "-n", "8", "-b", "10Gbps", "-s", "ps,ring", "-o", str(out)
    )
    assert p.returncode == 0, p.stderr
    with out.open() as f:
        models = [(r["model"], r["gpu"]) for r in csv.DictReader(f)]
    assert models == [("resnet50", "v100")] * 2 + [("resnet50 (mine.json)", "file")] * 2
    page = tmp_path / "r.html"
    assert run("report", "--sweep", str(out), "-o", str(page), "--no-timeline").returncode == 0
    assert "resnet50 (mine.json)" in page.read_text()


def test_name_apart_only_renames_on_a_clash() -> None:
    assert name_apart("resnet50", ["resnet50"], "/x/r50.json") == "resnet50 (r50.json)"
    assert name_apart("toy", ["resnet50"], "/x/toy.json") == "toy"


def test_simulate_json_never_carries_the_timeline_and_a_gz_trace_is_gzip(tmp_path: Path) -> None:
    trace = tmp_path / "t.json.gz"
    p = run("simulate", "-m", "resnet50", "-n", "4", "-b", "10Gbps", "-s", "ring", "--json", "--trace", str(trace))
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert "timeline" not in d and d["bandwidth_bytes_per_s"] == d["bandwidth"]
    events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    assert any(e.get("ph") == "X" for e in events)


def test_a_ps_trace_holds_one_whole_iteration_of_compute(tmp_path: Path) -> None:
    # Parameter-server workers start the next forward pass while the servers still send: the
    # trace's period must still hold each worker's forward and backward pass.
    trace = tmp_path / "ps.json"
    p = run("simulate", "-m", "resnet50", "-n", "8", "-b", "25Gbps", "-s", "ps:num_ps=2", "--trace", str(trace))
    assert p.returncode == 0, p.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    worker0 = [e for e in events if e.get("ph") == "X" and e["pid"] == 1 and e["tid"] == 0 and e["cat"] == "compute"]
    w = load_model("resnet50")
    for kind, whole in (
        ("forward", sum(x.forward_s for x in w.layers)),
        ("backward", sum(x.backward_s for x in w.layers)),
    ):
        busy = sum(e["dur"] for e in worker0 if e["name"].startswith(kind)) / 1e6
        assert busy == pytest.approx(whole, rel=1e-3), kind


def test_jobs_with_a_failure_show_the_healthy_fabric_beside_it() -> None:
    args = ["jobs", "--job", "a:resnet50:8:ring", "--job", "b:vgg16:8:ps:num_ps=2", "-b", "25Gbps"]
    healthy = {j["job"]: j for j in json.loads(run(*args, "--json").stdout)}
    p = run(*args, "--fail", "h3@0.05s:rate=0.5", "--json")
    assert p.returncode == 0, p.stderr
    failed = {j["job"]: j for j in json.loads(p.stdout)}
    a = failed["a"]
    assert a["without_failures_iteration_time_s"] == pytest.approx(healthy["a"]["iteration_time_s"], rel=1e-9)
    assert a["iteration_time_s"] > 1.2 * a["without_failures_iteration_time_s"]  # h3 is one of a's hosts
    text = run(*args, "--fail", "h3@0.05s:rate=0.5")
    assert "no failures" in text.stdout and "1 failure in every run above" in text.stderr


def test_a_workload_of_no_compute_and_no_bytes_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nothing to simulate"):
        Workload("zero", 1, (Layer("l0", 0.0, 0.0, ()),))
    Workload("compute only", 1, (Layer("l0", 0.001, 0.0, ()),))  # a compute-only workload runs
    Workload("bytes only", 1, (Layer("l0", 0.0, 0.0, (Tensor("w", 4),)),))  # and so does a microbenchmark's
    path = tmp_path / "zero.json"
    layers = [{"name": "l0", "forward_s": 0, "backward_s": 0, "tensors": []}]
    path.write_text(json.dumps({"format": "tensorwire-workload/1", "name": "zero", "batch_size": 1, "layers": layers}))
    out = tmp_path / "z.csv"
    for args in (
        [
            "simulate",
            "--workload",
            str(path),
            "-n",
            "4",
            "-b",
            "10Gbps",
            "-s",
            "ring",
            "--trace",
            str(tmp_path / "z.json"),
        ],
        ["sweep", "--workload", str(path), "-n", "4", "-b", "10Gbps", "-s", "ps,ring", "-o", str(out)],
        ["compare", "--workload", str(path), "-n", "4", "-b", "10Gbps", "-s", "ps,ring"],
    ):
        p = run(*args)
        assert p.returncode == 2 and p.stderr.count("\n") == 1, (args, p.stderr)
        assert "workload.layers" in p.stderr
    assert not out.exists() and not (tmp_path / "z.json").exists()


def test_sweep_and_report_flag_links_the_analytical_model_overloads(tmp_path: Path) -> None:
    out = tmp_path / "an.csv"
    topology = "leaf-spine:hosts_per_leaf=8,spines=2,uplink=25Gbps"
    args = ["-m", "vgg16", "-n", "32", "-b", "25Gbps", "--network", "analytical", "--topology", topology]
    p = run("sweep", *args, "-s", "ps,butterfly", "-o", str(out))
    assert p.returncode == 0, p.stderr
    with out.open() as f:
        rows = {r["strategy"]: float(r["max_link_utilization"]) for r in csv.DictReader(f)}
    assert rows["butterfly"] > 1.001 and "note: butterfly: a link carries more than its capacity" in p.stderr
    page = tmp_path / "an.html"
    assert run("report", "--sweep", str(out), "-o", str(page), "--no-timeline").returncode == 0
    assert "note: butterfly: a link carries more than its capacity" in page.read_text()
    assert over_capacity(1.5) and not over_capacity(1.0) and not over_capacity(None)
    # The compare title says the network model is not the default one.
    c = run("compare", *args, "-s", "ps")
    assert "analytical network" in c.stdout


def test_report_checks_the_whole_grid_before_simulating(tmp_path: Path) -> None:
    # double-tree on 16 H100s with an LLM is over the flow budget (on 8 it is not); named, it
    # ends the report before any point runs.
    page = tmp_path / "r.html"
    p = run(
        "report",
        "-m",
        "llama3_8b",
        "--topology",
        "rail:node=dgx-h100",
        "-n",
        "8,16",
        "-s",
        "ddp,double-tree",
        "-o",
        str(page),
    )
    assert p.returncode == 2 and "max_flows" in p.stderr
    assert "configurations" not in p.stderr.split("error:")[0]  # no progress line before the error
    assert not page.exists()


def test_a_default_strategy_over_the_flow_budget_is_left_out_with_a_note(tmp_path: Path) -> None:
    out = tmp_path / "llm.csv"
    p = run("sweep", "-m", "llama3_8b", "--topology", "rail:node=dgx-h100", "-n", "16", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "left out double-tree" in p.stderr
    with out.open() as f:
        strategies = {r["strategy"] for r in csv.DictReader(f)}
    assert "double-tree" not in strategies and {"ddp", "fsdp", "nccl"} <= strategies


def test_small_rates_keep_their_decimals_in_reports_and_jobs(tmp_path: Path) -> None:
    assert format_count(0.795) == "0.795" and format_count(137042.4) == "137,042"
    out = tmp_path / "l70.csv"
    p = run(
        "sweep", "-m", "llama3_70b", "-n", "8", "--topology", "rail:node=dgx-h100", "-s", "ddp,fsdp", "-o", str(out)
    )
    assert p.returncode == 0, p.stderr
    with out.open() as f:
        rates = [format_count(float(r["throughput_samples_per_s"])) for r in csv.DictReader(f)]
    page = tmp_path / "l70.html"
    assert run("report", "--sweep", str(out), "-o", str(page), "--no-timeline").returncode == 0
    html = page.read_text()
    assert all(f"<td>{rate}</td>" in html for rate in rates) and all(float(rate) < 10 for rate in rates)


def test_compare_takes_models_as_a_comma_list() -> None:
    p = run("compare", "-m", "resnet50,vgg16", "-n", "8", "-b", "10Gbps", "-s", "ps,ring", "--json")
    assert p.returncode == 0, p.stderr
    assert {r["model"] for r in json.loads(p.stdout)} == {"resnet50", "vgg16"}


def test_a_microbenchmark_s_json_has_no_samples_to_count() -> None:
    """`--collective` computes nothing: its JSON said 10,502 samples/s and a scaling factor
    of 0. Both are null, in `simulate` and in `compare` of the same workload as a file."""
    p = run("simulate", "--collective", "allreduce:1GiB", "-n", "8", "-b", "100Gbps", "-s", "ring", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert (out["throughput_samples_per_s"], out["scaling_factor"]) == (None, None)
    assert out["busbw_bytes_per_s"] > 0 and out["iteration_time_s"] > 0
    trained = json.loads(run("simulate", "-m", "resnet50", "-n", "4", "-b", "25Gbps", "-s", "ring", "--json").stdout)
    assert trained["throughput_samples_per_s"] > 0 and trained["scaling_factor"] > 0


def test_compare_s_title_leaves_out_a_latency_no_strategy_shown_sees() -> None:
    """NCCL's model takes its own latencies: the LLM compare's title said "5 us/hop" of
    strategies that ignore it (and `simulate` refuses an explicit --latency for them)."""
    rail = Cluster(64, None, topology="rail:node=dgx-h100")
    assert rail.describe(latency_seen(["ddp", "nccl", "fsdp", "zero3"], rail.topology)) == (
        "64 GPUs, 400 Gbps NICs, rail:node=dgx-h100"
    )
    assert "5 us/hop" in rail.describe(latency_seen(["ddp", "hierarchical"], rail.topology))
    assert "5 us/hop" in Cluster(8, "25Gbps").describe(latency_seen(["ring"], "star"))


def test_a_sweep_error_names_no_latency_the_strategy_does_not_see() -> None:
    ddp = Config("llama3_8b", "h100", 1, 1.0, "rail:node=dgx-h100", "flow", 5e-6, 16, 5e10, "ddp", 3, 0)
    assert "/hop" not in ddp.describe() and "400 Gbps, rail:node=dgx-h100, ddp" in ddp.describe()
    ring = Config("resnet50", "v100", 32, 1.0, "star", "flow", 5e-6, 16, 3.125e9, "ring", 3, 0)
    assert "25 Gbps, 5 us/hop, star, ring" in ring.describe()


def test_jobs_title_counts_its_jobs_and_says_how_they_were_placed() -> None:
    """It said "1 jobs ..., placement packed" of a job --place had put."""
    p = run("jobs", "--job", "a:resnet50:4:ring", "-b", "25Gbps", "--place", "a=4-7")
    assert p.returncode == 0, p.stderr
    assert "1 job on a fabric of 8 hosts, 25 Gbps, 5 us/hop, star, placed by --place" in " ".join(p.stdout.split())
    p = run("jobs", "--job", "a:resnet50:4:ring", "--job", "b:vgg16:4:ddp", "-b", "25Gbps", "--place", "a=4-7")
    assert "2 jobs on a fabric of 8 hosts, 25 Gbps, 5 us/hop, star, a placed by --place, b by placement packed" in (
        " ".join(p.stdout.split())
    )
    p = run("jobs", "--job", "a:resnet50:4:ddp", "--job", "b:vgg16:4:nccl", "-b", "25Gbps")
    assert "2 jobs on a fabric of 8 hosts, 25 Gbps, star, placement packed" in " ".join(p.stdout.split())


def test_a_long_iteration_is_written_in_seconds_not_exponents() -> None:
    p = run("simulate", "-m", "gpt3_175b", "-n", "16", "-b", "1Gbps", "-s", "ps")
    assert p.returncode == 0, p.stderr
    assert "e+0" not in p.stdout and " s │" in p.stdout
    assert re.search(r"iteration time\s+│\s+\d{2},\d{3} s", p.stdout), p.stdout


def test_titles_say_the_run_had_stragglers() -> None:
    # Its scaling factor is not the workload's own: a table that did not say so read as it.
    fixed = "fixed:2,1,1,1"
    for command in ("simulate", "compare"):
        done = run(command, "-m", "resnet50", "-n", "4", "-b", "25Gbps", "-s", "ring", "--stragglers", fixed)
        assert done.returncode == 0, done.stderr
        assert f"stragglers {fixed}" in " ".join(done.stdout.split()), done.stdout
    plain = run("simulate", "-m", "resnet50", "-n", "4", "-b", "25Gbps", "-s", "ring")
    assert "stragglers" not in plain.stdout


def test_speedups_under_partial_collectives_are_the_ratio_of_samples_per_second() -> None:
    # Under a partial collective a job's rate is the sum of its workers' own rates, not n x
    # batch over the mean pace: compare's ranking, its speedup column, its JSON and a sweep's
    # rows (add_speedup) all give the samples/s ratio (the iteration times' ratio had said
    # 3.31x for 3.49x).
    from tensorwire.sweep.table import add_speedup

    args = ("-m", "resnet50", "-n", "4", "-b", "10Gbps", "--stragglers", "fixed:1,1,1,3")
    strategies = ("--strategies", "ps,ring,ring:partial=solo,ring:partial=majority")
    done = run("compare", *args, *strategies, "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    by = {r["strategy"]: r for r in rows}
    ps = by["ps"]
    for r in rows:
        want = r["throughput_samples_per_s"] / ps["throughput_samples_per_s"]
        assert r["speedup_over_baseline"] == pytest.approx(want, rel=1e-12), r["strategy"]
    rates = [r["throughput_samples_per_s"] for r in rows]
    assert rates == sorted(rates, reverse=True), "ranked by samples per second"
    solo = by["ring:partial=solo"]
    assert solo["speedup_over_baseline"] > ps["iteration_time_s"] / solo["iteration_time_s"] * 1.02
    assert f"{solo['speedup_over_baseline']:.2f}x" in run("compare", *args, *strategies).stdout
    keys = ("model", "strategy", "iteration_time_s", "throughput_samples_per_s")
    rebuilt = add_speedup([{k: r[k] for k in keys} for r in rows])
    assert [r["speedup_over_baseline"] for r in rebuilt] == pytest.approx([r["speedup_over_baseline"] for r in rows])
