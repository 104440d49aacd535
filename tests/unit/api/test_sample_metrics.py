"""A workload without compute (a collective microbenchmark) has no samples: its result's
samples/s and scaling factor are NaN (None in JSON and sweep rows, ``-`` in tables), and one
worker without a parameter server has nothing to exchange, refused by the API as by the CLI."""

from __future__ import annotations

import copy
import json
import math
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import tensorwire as tw
from tensorwire.result import SAMPLE_METRICS
from tensorwire.sweep import run_grid

BENCH = tw.Workload.collective("allreduce:1MiB")
C = tw.Cluster(8, "25Gbps")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=120)


def test_a_microbenchmarks_sample_metrics_are_nan_and_none_in_json() -> None:
    # Were 11000.86 samples/s and a scaling factor of 0.0, where to_dict() said None.
    r = tw.simulate(BENCH, C, "ring")
    for key in SAMPLE_METRICS:
        value = getattr(r, key)
        assert type(value) is float and math.isnan(value), key
        assert r.to_dict()[key] is None, key
    json.dumps(r.to_dict(), allow_nan=False)
    (job,) = tw.simulate_jobs([tw.Job("a", BENCH, 8, "ring")], C)
    assert math.isnan(job.throughput_samples_per_s) and math.isnan(job.scaling_factor)


def test_a_training_runs_sample_metrics_are_numbers() -> None:
    r = tw.simulate(tw.load_model("resnet50"), C, "ring")
    assert r.throughput_samples_per_s > 0 and 0 < r.scaling_factor <= 1
    assert r.to_dict()["scaling_factor"] == r.scaling_factor


def test_a_microbenchmarks_result_equals_itself_copied_and_pickled() -> None:
    # NaN is not equal to itself: a pickled copy of the result (a new NaN) compared unequal.
    r = tw.simulate(BENCH, C, "ring")
    for other in (pickle.loads(pickle.dumps(r)), copy.deepcopy(r), tw.simulate(BENCH, C, "ring")):
        assert other == r and not other != r
    assert r != tw.simulate(BENCH, C, "tree") and r != tw.simulate(tw.load_model("resnet50"), C, "ring")


def test_a_sweep_row_of_a_microbenchmark_has_none(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    BENCH.save(path)
    (row,) = run_grid(workers=8, bandwidths="25Gbps", strategies="ring", workload_file=str(path), jobs=1)
    assert row["throughput_samples_per_s"] is None and row["scaling_factor"] is None


def test_tables_show_a_dash_not_nan(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    BENCH.save(path)
    for command in ("simulate", "compare"):
        option = ["-s", "ring"] if command == "simulate" else ["--strategies", "ring,ps"]
        p = run(command, "--workload", str(path), "-n", "8", "-b", "25Gbps", *option)
        assert p.returncode == 0, p.stderr
        assert "nan" not in p.stdout.lower() and " - " in p.stdout, p.stdout


@pytest.mark.parametrize("strategy", ["ring", "tree", "halving-doubling"])
def test_one_worker_without_compute_is_refused_by_the_api_as_by_the_cli(strategy: str) -> None:
    # simulate gave an iteration of 0 s and inf samples/s where the CLI refused `-n 1`.
    one = tw.Cluster(1, "25Gbps")
    with pytest.raises(tw.InputError) as e:
        tw.simulate(BENCH, one, strategy)
    assert e.value.field == "workers" and "nothing to exchange" in e.value.message
    with pytest.raises(tw.InputError) as checked:
        tw.api.check_simulate(BENCH, one, strategy)
    assert checked.value.args == e.value.args
    with pytest.raises(tw.InputError) as job:
        tw.Job("a", BENCH, 1, strategy)
    assert job.value.field == "jobs.workers" and job.value.message == e.value.message
    p = run("simulate", "--collective", "allreduce:1MiB", "-n", "1", "-b", "25Gbps", "-s", strategy)
    assert p.returncode == 2 and p.stderr == f"tensorwire: error: {e.value}\n" and not p.stdout


def test_one_worker_with_a_server_or_compute_runs() -> None:
    # A worker and its parameter server exchange: push and pull, a time of its own.
    one = tw.Cluster(1, "25Gbps")
    assert tw.simulate(BENCH, one, "ps").iteration_time_s > 0
    assert tw.Job("a", BENCH, 1, "ps").hosts_needed == 2
    trained = tw.simulate(tw.load_model("resnet50"), one, "ring")
    assert trained.scaling_factor == pytest.approx(1.0) and math.isfinite(trained.throughput_samples_per_s)
