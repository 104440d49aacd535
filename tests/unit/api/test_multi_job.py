"""Several jobs on one fabric: the Python API and `tensorwire jobs`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tensorwire as tw


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=120)


FABRIC = "leaf-spine:hosts_per_leaf=2,spines=1,uplink=8Gbps"


def test_two_jobs_on_one_bottleneck_each_get_half_the_rate() -> None:
    size = 2_000_000
    w = tw.Workload.collective(f"allreduce:{size}B")
    cluster = tw.Cluster(4, "8Gbps", latency=0.0, topology=FABRIC)  # 1 byte/ns everywhere
    a = tw.Job("a", w, 2, "ring", hosts=[0, 2])
    b = tw.Job("b", w, 2, "ring", hosts=[1, 3])
    together = tw.simulate_jobs([a, b], cluster)
    (alone,) = tw.simulate_jobs([a], cluster)
    assert alone.iteration_time_s == pytest.approx(2 * size / 2 * 1e-9, rel=1e-9)
    for r in together:
        assert r.iteration_time_s == pytest.approx(2 * alone.iteration_time_s, rel=1e-9)
        assert not r.folded


def test_one_job_alone_matches_simulate() -> None:
    w = tw.load_model("resnet50")
    cluster = tw.Cluster(8, "25Gbps")
    (r,) = tw.simulate_jobs([tw.Job("a", w, 8, "ring")], cluster)
    assert r.completions_s == tw.simulate(w, cluster, "ring", fold=False).completions_s


def test_bad_jobs_name_the_field() -> None:
    w = tw.load_model("resnet50")
    with pytest.raises(tw.InputError) as e:
        tw.simulate_jobs([tw.Job("a", w, 6, "ring"), tw.Job("b", w, 6, "ring")], tw.Cluster(8, "25Gbps"))
    assert e.value.args[0] == "jobs"
    with pytest.raises(tw.InputError) as e:
        tw.simulate_jobs([tw.Job("a", w, 2, "ps")], tw.Cluster(8, "25Gbps"))
    assert e.value.args[0] == "jobs[0].strategy"


def test_cli_prints_each_job_beside_itself_alone() -> None:
    p = run("jobs", "--job", "a:resnet50:4:ring", "--job", "b:resnet50:4:ring", "-b", "8Gbps",
            "--topology", "leaf-spine:hosts_per_leaf=4,spines=1,uplink=8Gbps", "--placement", "spread", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["job"] for r in rows] == ["a", "b"]
    assert all(r["slowdown"] > 1.0 for r in rows)
    bad = run("jobs", "--job", "a:resnet50:16:ring", "-n", "8", "-b", "25Gbps")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "jobs" in bad.stderr
