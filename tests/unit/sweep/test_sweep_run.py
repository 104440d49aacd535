"""Running a grid: rows, the speedup column, parallel = serial, Ray."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import tensorwire as tw
from tensorwire.cli import main
from tensorwire.sweep import COLUMNS, expand, read_rows, run_configs, run_grid, write_rows

GRID = dict(
    models="resnet50,vgg16", workers="4,8", bandwidths="1Gbps,25Gbps", strategies="ps,ring,ps+ina,ring:partition=4MiB"
)


@pytest.fixture(scope="module")
def serial() -> list[dict[str, object]]:
    return run_grid(**GRID, jobs=1)  # type: ignore[arg-type]


def test_one_row_per_configuration_with_every_column(serial: list[dict[str, object]]) -> None:
    assert len(serial) == 2 * 2 * 2 * 4
    for row in serial:
        assert list(row) == [c.name for c in COLUMNS]
    first = serial[0]
    assert (first["model"], first["workers"], first["bandwidth_gbps"], first["strategy"]) == ("resnet50", 4, 1.0, "ps")
    assert serial[3]["strategy_name"] == "ring"


def test_rows_match_simulate(serial: list[dict[str, object]]) -> None:
    row = serial[5]
    r = tw.simulate(
        tw.load_model(str(row["model"])), tw.Cluster(int(row["workers"]), float(row["bandwidth"])), str(row["strategy"])
    )  # type: ignore[arg-type]
    assert row["iteration_time_s"] == r.iteration_time_s
    assert row["max_link_utilization"] == r.max_link_utilization
    assert row["exposed_comm_s"] == r.exposed_comm_s


def test_speedup_is_over_plain_ps_of_the_same_scenario(serial: list[dict[str, object]]) -> None:
    for i in range(0, len(serial), 4):
        scenario = serial[i : i + 4]
        ps = scenario[0]
        assert ps["strategy"] == "ps" and ps["speedup_over_ps"] == 1.0
        for row in scenario:
            assert row["speedup_over_ps"] == pytest.approx(
                float(ps["iteration_time_s"]) / float(row["iteration_time_s"])
            )  # type: ignore[arg-type]
    # each bandwidth has its own baseline: at 1 Gbps ring gains more over ps than at 25 Gbps
    assert serial[1]["speedup_over_ps"] != serial[5]["speedup_over_ps"]


def test_no_plain_ps_means_the_first_strategy_is_the_baseline_as_in_compare() -> None:
    rows = run_grid("vgg16", 4, "10Gbps", "ring,ps:num_ps=2", jobs=1)
    assert [r["speedup_over_ps"] for r in rows] == [None, None]
    assert [r["baseline"] for r in rows] == ["ring", "ring"]
    assert rows[0]["speedup_over_baseline"] == 1.0
    # (The samples/s ratio, the same as the iteration times' without partial collectives.)
    want = float(rows[0]["iteration_time_s"]) / float(rows[1]["iteration_time_s"])  # type: ignore[arg-type]
    assert rows[1]["speedup_over_baseline"] == pytest.approx(want, rel=1e-12)


def test_an_llm_sweep_is_over_ddp_as_compare_ranks_it(capsys: pytest.CaptureFixture[str]) -> None:
    """An LLM on a rail has no parameter server: its speedup column was empty over a `ps`
    that no LLM sweep has. Its baseline is `ddp`, the one `compare` ranks against."""
    rows = run_grid("llama3_8b", 16, None, "fsdp,ddp", topologies="rail:node=dgx-h100", gpus="h100", jobs=1)
    assert [r["baseline"] for r in rows] == ["ddp", "ddp"]
    assert [r["speedup_over_ps"] for r in rows] == [None, None]
    ddp, fsdp = rows[1], rows[0]
    want = float(ddp["iteration_time_s"]) / float(fsdp["iteration_time_s"])  # type: ignore[arg-type]
    assert fsdp["speedup_over_baseline"] == pytest.approx(want, rel=1e-12)
    assert main(["compare", "-m", "llama3_8b", "-n", "16", "--topology", "rail:node=dgx-h100",
                        "--gpu", "h100", "-s", "fsdp,ddp", "--json"]) == 0  # fmt: skip
    compared = {r["strategy"]: r for r in json.loads(capsys.readouterr().out)}
    assert compared["fsdp"]["baseline"] == "ddp"
    assert compared["fsdp"]["speedup_over_baseline"] == fsdp["speedup_over_baseline"]


def test_a_workload_without_compute_has_no_samples_to_count(tmp_path: Path) -> None:
    """A collective microbenchmark saved as a workload file: it said 839 samples/s and a
    scaling factor of 0; both are null, in every format, the Parquet columns typed still."""
    path = tmp_path / "allreduce.json"
    tw.Workload.collective("allreduce:4MiB").save(path)
    rows = run_grid(None, 4, "25Gbps", "ring", workload_file=str(path), jobs=1)
    assert (rows[0]["throughput_samples_per_s"], rows[0]["scaling_factor"]) == (None, None)
    for suffix in (".csv", ".json", ".parquet"):
        if suffix == ".parquet":
            pytest.importorskip("pyarrow")
        write_rows(tmp_path / f"r{suffix}", rows)
        assert read_rows(tmp_path / f"r{suffix}") == rows


def test_compute_speedup_divides_compute_time() -> None:
    rows = run_grid("resnet50", 4, "100Gbps", "ring", compute_speedups="1,2", jobs=1)
    assert rows[1]["compute_time_s"] == pytest.approx(float(rows[0]["compute_time_s"]) / 2)  # type: ignore[arg-type]
    assert rows[1]["iteration_time_s"] < rows[0]["iteration_time_s"]  # type: ignore[operator]


def test_parallel_threads_and_processes_equal_serial(serial: list[dict[str, object]]) -> None:
    configs = expand(**GRID)  # type: ignore[arg-type]
    assert run_configs(configs, jobs=2, executor="thread") == serial
    assert run_configs(configs, jobs=3) == serial  # processes, the default


def test_progress_counts_every_configuration() -> None:
    seen: list[int] = []
    rows = run_grid("vgg16", "4,8", "10Gbps,25Gbps", "ps,ring", jobs=2, progress=seen.append)
    assert sum(seen) == len(rows) == 8


def test_a_failing_configuration_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import tensorwire.sweep.run as run

    def boom(*args: object, **kwargs: object) -> None:
        raise tw.InputError("strategy", "cannot")

    monkeypatch.setattr(run, "simulate", boom)
    with pytest.raises(tw.InputError) as e:
        run_grid("vgg16", 4, "10Gbps", "ring", jobs=1)
    assert e.value.args[0] == "strategy" and "vgg16" in e.value.args[1] and "ring" in e.value.args[1]


def test_bad_jobs_and_executor() -> None:
    configs = expand("vgg16", 4, "10Gbps", "ring")
    with pytest.raises(tw.InputError, match="jobs"):
        run_configs(configs, jobs=0)
    with pytest.raises(tw.InputError, match="executor"):
        run_configs(configs, executor="fiber")  # type: ignore[arg-type]


def test_ray_missing_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(tw.InputError) as e:
        run_grid("vgg16", 4, "10Gbps", "ring", ray_address="auto")
    assert e.value.args[0] == "ray" and "tensorwire[ray]" in e.value.args[1]


class Ref:
    """An object reference: hashable, holding the task's result."""

    def __init__(self, value: Any) -> None:
        self.value = value


class FakeRay(types.ModuleType):
    """Just enough of Ray's API to drive tensorwire.sweep.run._run_ray without a cluster."""

    class exceptions:  # noqa: N801
        class RayTaskError(Exception):
            pass

    def __init__(self, fail_init: bool = False) -> None:
        super().__init__("ray")
        self.fail_init = fail_init
        self.calls: list[str] = []

    def is_initialized(self) -> bool:
        return False

    def init(self, address: str, **kwargs: object) -> None:
        self.calls.append(f"init {address}")
        if self.fail_init:
            raise ConnectionError("Could not find any running Ray instance.\nmore detail")

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 2.0}

    def remote(self, fn: Any) -> Any:
        ray = self

        class Task:
            def remote(self, chunk: Any) -> Any:
                ray.calls.append("task")
                return Ref(fn(chunk))

        return Task()

    def wait(self, refs: list[Any], num_returns: int) -> tuple[list[Any], list[Any]]:
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: Any) -> Any:
        return ref.value

    def shutdown(self) -> None:
        self.calls.append("shutdown")


def test_ray_driver_submits_chunks_and_keeps_grid_order(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    seen: list[int] = []
    rows = run_grid("vgg16", "4,8", "10Gbps,25Gbps", "ps,ring", ray_address="auto", progress=seen.append)
    assert rows == run_grid("vgg16", "4,8", "10Gbps,25Gbps", "ps,ring", jobs=1)
    assert fake.calls[0] == "init auto" and fake.calls[-1] == "shutdown"
    assert fake.calls.count("task") == 8 and sum(seen) == 8  # 2 CPUs x 8 chunks, capped at 8 configurations


def test_ray_unreachable_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", FakeRay(fail_init=True))
    with pytest.raises(tw.InputError) as e:
        run_grid("vgg16", 4, "10Gbps", "ring", ray_address="ray://head:10001")
    assert e.value.args == (
        "ray",
        "cannot connect to a Ray cluster at 'ray://head:10001': Could not find any running Ray instance.",
    )


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="ray is not installed (pip install 'tensorwire[ray]')"
)
@pytest.mark.skipif(
    os.environ.get("TENSORWIRE_TEST_RAY") != "1",
    reason="starting a Ray cluster takes 20-60 s on 2 cores; set TENSORWIRE_TEST_RAY=1 to run it",
)
def test_ray_local_cluster_gives_the_serial_rows() -> None:
    rows = run_grid("vgg16", "4,8", "10Gbps", "ps,ring", jobs=1)
    assert run_grid("vgg16", "4,8", "10Gbps", "ps,ring", ray_address="local") == rows
