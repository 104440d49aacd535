"""Link and node failures through the Python API and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tensorwire as tw
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


def test_failures_after_the_run_change_nothing_and_bad_ones_name_the_field() -> None:
    w = tw.load_model("resnet50")
    cluster = tw.Cluster(8, "25Gbps")
    r = tw.simulate(w, cluster, "ring", failures=[tw.Failure("sw", 100.0)])
    assert r.failures_applied == 0
    assert r.completions_s == tw.simulate(w, cluster, "ring").completions_s
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
    p = run("simulate", "-m", "resnet50", "-n", "8", "-b", "25Gbps", "-s", "ring", "--fail", "h0->sw@0s:rate=0.5", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["iteration_time_s"] > out["without_failures"]["iteration_time_s"]
    bad = run("simulate", "-m", "resnet50", "-n", "8", "-b", "25Gbps", "-s", "ring", "--fail", "nothing@1s")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "failures[0].target" in bad.stderr
