"""Link and node failures through the Python API and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tensorwire as tw
from tensorwire.api import _run_jobs
from tensorwire.failures import parse_failure


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=120)


def test_halving_a_ring_uplink_doubles_the_bandwidth_term() -> None:
    n, size = 4, 4_000_000
    w = tw.Workload.collective(f"allreduce:{size}B")
    cluster = tw.Cluster(n, "8Gbps", latency=0.0)  # 1 byte/ns
    healthy = tw.simulate(w, cluster, "ring", iterations=2)
    degraded = tw.simulate(w, cluster, "ring", iterations=2, failures=[tw.Failure("h0->sw", 0.0, 0.5)])
    assert healthy.iteration_time_s == pytest.approx(2 * (n - 1) * size / n * 1e-9, rel=1e-9)
    assert degraded.iteration_time_s == pytest.approx(2 * healthy.iteration_time_s, rel=1e-9)
    assert degraded.failures_applied == 1 and not degraded.folded


def test_a_failure_after_the_run_is_refused_naming_it_and_the_runs_end() -> None:
    w = tw.load_model("resnet50")
    cluster = tw.Cluster(8, "25Gbps")
    end = tw.simulate(w, cluster, "ring").completions_s[-1]
    with pytest.raises(tw.InputError) as e:
        tw.simulate(w, cluster, "ring", failures=[tw.Failure("h0->sw", 0.0, 1.0), tw.Failure("sw", 100.0)])
    field, message = e.value.args
    assert field == "failures[1].at_s"
    assert f"after the run ended at {end} s" in message and "more iterations" in message
    # At the very end it is within the run.
    assert tw.simulate(w, cluster, "ring", failures=[tw.Failure("h0->sw", end, 0.5)]).failures_applied == 1


def test_jobs_refuse_a_failure_after_the_last_job_but_each_alone_may_end_before_it() -> None:
    size = 2_000_000
    w = tw.Workload.collective(f"allreduce:{size}B")
    cluster = tw.Cluster(4, "8Gbps", latency=0.0, topology="leaf-spine:hosts_per_leaf=2,spines=1,uplink=8Gbps")
    a = tw.Job("a", w, 2, "ring", hosts=[0, 2])
    b = tw.Job("b", w, 2, "ring", hosts=[1, 3])
    (alone,) = tw.simulate_jobs([a], cluster)
    together = tw.simulate_jobs([a, b], cluster)
    # Between the lone job's end and the end of both (they share a link: twice as long).
    late = [tw.Failure("h0->leaf0", 1.5 * alone.completions_s[-1], 1.0)]
    assert max(r.completions_s[-1] for r in together) > late[0].at_s
    assert tw.simulate_jobs([a, b], cluster, failures=late)[0].failures_applied == 1
    with pytest.raises(tw.InputError) as e:
        tw.simulate_jobs([a], cluster, failures=late)
    assert e.value.args[0] == "failures[0].at_s"
    (kept,) = _run_jobs([a], cluster, 3, 0, late, None, allow_failures_after_end=True)
    assert kept.failures_applied == 0 and kept.completions_s == alone.completions_s


def test_bad_failures_name_the_field() -> None:
    w = tw.load_model("resnet50")
    cluster = tw.Cluster(8, "25Gbps")
    with pytest.raises(tw.InputError) as e:
        tw.simulate(w, cluster, "ring", failures=[tw.Failure("spine9", 0.0, 0.5)])
    assert e.value.args[0] == "failures[0].target"
    with pytest.raises(tw.InputError, match="went down"):
        tw.simulate(w, cluster, "ring", failures=[tw.Failure("h3", 1e-3)])
    with pytest.raises(tw.InputError):
        tw.Failure("h0", 0.0, 1.5)


def test_parse_failure_reads_the_cli_form() -> None:
    assert parse_failure("leaf0->spine1@20ms:rate=0.25") == tw.Failure("leaf0->spine1", 0.02, 0.25)
    for bad in ["h0", "@1s", "h0@1s:speed=2", "h0@1s:rate=x"]:
        with pytest.raises(tw.InputError):
            parse_failure(bad)


def test_cli_shows_the_run_with_and_without_failures() -> None:
    p = run(
        "simulate", "-m", "resnet50", "-n", "8", "-b", "25Gbps", "-s", "ring", "--fail", "h0->sw@0s:rate=0.5", "--json"
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["iteration_time_s"] > out["without_failures"]["iteration_time_s"]
    bad = run("simulate", "-m", "resnet50", "-n", "8", "-b", "25Gbps", "-s", "ring", "--fail", "nothing@1s")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "failures[0].target" in bad.stderr


def test_cli_refuses_a_failure_after_the_run_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    p = run(
        "simulate",
        "-m",
        "resnet50",
        "-n",
        "8",
        "-b",
        "25Gbps",
        "-s",
        "ring",
        "--fail",
        "sw@100s",
        "--trace",
        str(trace),
        "--json",
    )
    assert p.returncode == 2 and p.stdout == ""
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("tensorwire: error: failures[0].at_s: 100 s is after the run ended at ")
    assert "Traceback" not in p.stderr
    assert list(tmp_path.iterdir()) == []
    jobs = run("jobs", "--job", "a:resnet50:4:ring", "--job", "b:resnet50:4:ring", "-b", "25Gbps", "--fail", "sw@100s")
    assert jobs.returncode == 2 and jobs.stdout == ""
    (line,) = jobs.stderr.strip().splitlines()
    assert line.startswith("tensorwire: error: failures[0].at_s: 100 s is after the run ended at ")


def test_a_failure_under_nccl_timing_suggests_what_runs() -> None:
    """The refusal suggested plain fsdp, which on a rail fabric is NCCL-timed and refused too."""
    c = tw.Cluster(16, None, topology="rail:node=dgx-h100")
    with pytest.raises(tw.InputError) as e:
        tw.simulate(tw.load_model("resnet50"), c, "ddp", failures=[tw.Failure("h3", 0.1)])
    assert "fsdp:comm=flows" in e.value.args[-1]
    with pytest.raises(tw.InputError) as e:
        tw.simulate(tw.load_model("resnet50"), c, "fsdp", failures=[tw.Failure("h3", 0.1)])
    assert e.value.args[0] == "strategy.comm" and "comm=flows" in e.value.args[-1]
