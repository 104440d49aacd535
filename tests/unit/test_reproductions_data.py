"""The published figures behind benchmarks/reproductions/nccl_tests.py and training.py:
the data files parse, every series names its source, the bandwidths obey nccl-tests'
definitions (doc/PERFORMANCE.md: busbw = algbw x 2(n-1)/n for all-reduce, (n-1)/n for
all-gather, reduce-scatter and all-to-all), and both scripts run on a tiny subset."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPRO = ROOT / "benchmarks" / "reproductions"
NCCL = json.loads((REPRO / "data" / "nccl_tests.json").read_text())
TRAINING = json.loads((REPRO / "data" / "training.json").read_text())
FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
}


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"repro_{name}", REPRO / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_nccl_series_name_a_source_and_a_cluster() -> None:
    ids = [s["id"] for s in NCCL["series"]]
    assert len(ids) == len(set(ids))
    for s in NCCL["series"]:
        assert s["source"].startswith("https://"), s["id"]
        assert s["publisher"] and s["system"] and s["topology"].startswith("rail:"), s["id"]
        assert s["collective"] in FACTOR and s["nodes"] >= 1 and s["gpus_per_node"] >= 1
        assert s["rows"], s["id"]
        for row in s["rows"]:
            size, busbw = row[0], row[1]
            assert isinstance(size, int) and 2**20 <= size <= 16 * 2**30, (s["id"], size)
            assert 0 < busbw < 1000, (s["id"], row)


def test_at_least_three_independent_publishers_and_every_collective() -> None:
    hosts = {s["source"].split("/")[3] for s in NCCL["series"] if "github.com" in s["source"]}
    assert len(hosts) >= 3, hosts
    assert {s["collective"] for s in NCCL["series"]} == set(FACTOR)
    assert {s["nodes"] for s in NCCL["series"]} >= {1, 2, 4}
    # the issue asks for 2-32 nodes: at least one measured series of 8 nodes or more
    assert any(s["nodes"] >= 8 and s.get("kind", "measurement") == "measurement" for s in NCCL["series"])


def test_busbw_is_algbw_times_the_nccl_tests_factor() -> None:
    checked = 0
    for s in NCCL["series"]:
        n = s["nodes"] * s["gpus_per_node"]
        for row in s["rows"]:
            if len(row) == 3:
                _, busbw, algbw = row
                # Both are printed with two decimals: allow the rounding of each.
                assert busbw == pytest.approx(algbw * FACTOR[s["collective"]](n), abs=0.01 + 0.005 * 2), (s["id"], row)
                checked += 1
    assert checked >= 40


def test_sizes_are_whole_mib_and_rise_within_a_series() -> None:
    # nccl-tests' `-f 2` sweeps print powers of two; a run stepped by bytes (`-i`) is taken
    # at a size it printed, a whole number of MiB, so the tables' size column is exact.
    for s in NCCL["series"]:
        sizes = [r[0] for r in s["rows"]]
        assert sizes == sorted(set(sizes))
        assert all(x % 2**20 == 0 for x in sizes), s["id"]
        powers = [x for x in sizes if x & (x - 1) == 0]
        assert powers == sizes or len(sizes) == 1, s["id"]


def test_training_results_have_sources_and_sourced_compute() -> None:
    for st in TRAINING["studies"]:
        assert st["source"].startswith("https://"), st["id"]
        assert st["metric"] in ("s_per_iter", "efficiency", "tokens_per_s_per_gpu", "rdma_over_tcp")
        # A ratio of two runs is a check, labelled as such, never a counted reproduction.
        assert (st["metric"] == "rdma_over_tcp") == (st.get("kind") == "check"), st["id"]
        for m in st["models"]:
            assert m["compute_source"], (st["id"], m["model"])
            for gpus, value in m["results"]:
                assert gpus >= 1 and value > 0
                if st["metric"] == "rdma_over_tcp":
                    assert value >= 1  # RDMA was measured faster than TCP
                elif st["metric"] == "efficiency":
                    assert value <= 1
                elif m["compute_s"] is not None:
                    # A data-parallel iteration is never faster than its compute alone.
                    assert value >= m["compute_s"]


def test_nccl_tests_script_runs_a_subset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _script("nccl_tests")
    out = tmp_path / "nccl.md"
    argv = ["--strategy", "ring", "--only", "azure-nda100v4-allreduce", "--only", "mle-h200-16GiB-allgather"]
    assert mod.main(argv + ["--max-rows", "1", "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "| azure-nda100v4-allreduce | allreduce | 8 | 1 MiB | 36.2 |" in text
    assert "Summary: 2 measured rows" in text
    assert mod.target(64 * 2**20) == 0.10 and mod.target(32 * 2**20) == 0.25


def test_nccl_tests_nvls_off_and_forced_algorithms_become_options() -> None:
    mod = _script("nccl_tests")
    by_id = {s["id"]: s for s in NCCL["series"]}
    assert mod.strategy_for(by_id["mle-h200-16GiB-ring"], "nccl") == "nccl:algo=^nvls+nvlstree"
    assert mod.strategy_for(by_id["aws-p5en-4x8-nvlstree"], "nccl") == "nccl:algo=nvlstree"
    assert mod.strategy_for(by_id["nvidia-h100-multinode-ring"], "nccl") == "nccl:algo=ring"
    assert mod.strategy_for(by_id["coreweave-h100-12x8-sharp"], "nccl") == "nccl:algo=collnetchain"
    assert mod.strategy_for(by_id["azure-nda100v4-allreduce"], "nccl") == "nccl"
    # Google's A3 Mega profile: NCCL's comma lists as "+", NCCL_ALGO wins over NVLS_ENABLE=0.
    assert mod.strategy_for(by_id["gcp-a3mega-2x8-allreduce"], "nccl") == "nccl:algo=ring+tree,proto=simple"
    tcp = {"env": "NCCL_NVLS_ENABLE=0 NCCL_PROTO=LL128,Simple", "transport": "tcp"}
    assert mod.strategy_for(tcp, "nccl") == "nccl:algo=^nvls+nvlstree,proto=ll128+simple,transport=tcp"


def test_training_script_runs_a_subset(tmp_path: Path) -> None:
    mod = _script("training")
    out = tmp_path / "training.md"
    assert mod.main(["--only", "horovod-128", "--max-rows", "1", "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "| horovod-128 | vgg16 | 128 | efficiency | 79% |" in text
    assert "skipped" in text  # ResNet-101: no sourced single-GPU time


def _llm_entries() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(st, m) for st in TRAINING["studies"] for m in st["models"] if "llm" in m]


def test_at_least_three_independent_training_publishers_one_sharded() -> None:
    hosts = {st["source"].split("/")[3] for st in TRAINING["studies"] if "github.com" in st["source"]}
    assert len(hosts) >= 3, hosts
    assert any(st["strategy"].startswith(("fsdp", "zero3")) for st in TRAINING["studies"])
    # Several GPU counts per sharded series.
    for _, m in _llm_entries():
        assert len({g for g, _ in m["results"]}) >= 3, m["model"]


def test_llm_architectures_reproduce_the_published_parameter_counts() -> None:
    mod = _script("training")
    entries = _llm_entries()
    assert entries
    for _, m in entries:
        # MPT in GPT-2 layout: 12 d^2 + 13 d per block (weights, biases, two LayerNorms),
        # vocab x d tied embedding, seq x d learned positions, final LayerNorm 2 d.
        a = m["llm"]
        d, n = a["d_model"], a["layers"]
        closed = n * (12 * d * d + 13 * d) + a["vocab"] * d + a["seq_len"] * d + 2 * d
        assert mod.parameters(mod.architecture(m)) == closed == a["parameters"], m["model"]


def test_llm_compute_is_the_smallest_count_s_own_throughput() -> None:
    mod = _script("training")
    assert _llm_entries()
    for st, m in _llm_entries():
        assert st["metric"] == "tokens_per_s_per_gpu"
        counts = [g for g, _ in m["results"]]
        assert counts == sorted(counts)
        base = m["results"][0][1]
        assert m["compute_s"] == pytest.approx(mod.tokens_per_gpu(m) / base, rel=1e-12)
        w = mod.llm_workload(m)
        assert w.compute_time_s == pytest.approx(m["compute_s"], rel=1e-9)
        assert sum(t.bytes for t in w.tensors) == 2 * m["llm"]["parameters"]  # bf16


def test_training_script_runs_an_fsdp_subset(tmp_path: Path) -> None:
    mod = _script("training")
    out = tmp_path / "training.md"
    assert mod.main(["--only", "mosaicml-mpt-a100", "--max-rows", "1", "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "| mosaicml-mpt-a100 | mpt-7b | 32 | tokens_per_s_per_gpu | 3,725 tok/s |" in text
    assert "| mosaicml-mpt-a100 | mpt-760m | 16 | tokens_per_s_per_gpu | 29,607 tok/s |" in text


def test_cross_calibration_never_fits_the_rows_it_predicts() -> None:
    mod = _script("nccl_tests")
    by_id = {s["id"]: s for s in NCCL["series"]}
    node = {"dgx-a100": "A100", "dgx-h100": "H100/H200", "hgx-h200": "H100/H200"}
    predicted = set()
    for s in NCCL["series"]:
        source = mod.calibration_source(s)
        if source is None:
            continue
        predicted.add(s["id"])
        fitted = by_id[source]
        assert source != s["id"], s["id"]
        # One node on one node's fit (intra-node triple), several nodes on several nodes' fit
        # (inter-node triple).
        assert (s["nodes"] == 1) == (fitted["nodes"] == 1), (s["id"], source)
        assert fitted["collective"] == "allreduce" and len(fitted["rows"]) >= 10, source
        # The same node's NVLink generation, another page (or another publisher).
        kind = lambda x: node[x["topology"].split("node=")[1].split(",")[0]]  # noqa: E731
        assert kind(s) == kind(fitted), (s["id"], source)
        assert s["source"] != fitted["source"], (s["id"], source)
        if s["nodes"] > 1:  # and the same NICs: 8 x 400 Gbit/s per node
            for x in (s, fitted):
                assert "400 Gbit/s" in x["system"] or "8x 400" in x["system"], x["id"]
    # Both A100 publishers and every single-node H100/H200 sweep are predicted cross-calibrated.
    assert {"azure-nda100v4-allreduce", "mle-a100-allreduce", "azure-ndh100v5-allreduce"} <= predicted
    assert {"azure-ndh200v5-allreduce", "mle-h200-allreduce-sweep"} <= predicted
    # Across nodes, both 8 x 400 Gbit/s all-reduce sweeps predict each other, and every other
    # multi-node series of that class is predicted too; EFA, TCPXO and A100 clusters are not.
    assert {"nccltests309-h100-8x8-allreduce", "xxrjun-h100-10x8-allgather", "coreweave-h100-12x8-sharp"} <= predicted
    assert not {"aws-p5en-4x8-ring", "gcp-a3mega-2x8-allreduce", "nvidia-dgxa100-multinode-ring"} & predicted


def test_a_multi_node_calibration_carries_the_inter_node_triple_only() -> None:
    mod = _script("nccl_tests")
    s = next(x for x in NCCL["series"] if x["id"] == "xxrjun-h100-10x8-allreduce")
    c = mod.fit_calibration(s)
    assert c.rows == len(s["rows"]) and c.options.startswith("inter_efficiency=")
    assert "intra_" not in c.options
    # The fitted efficiency is a factor on NCCL's network bandwidth: the measured large sizes
    # (314-321 GB/s from 4 GiB) are below the uncalibrated model's 364-379, so it is below 1.
    eff = float(c.options.split(",")[0].split("=")[1])
    assert 0.5 < eff < 1.0


def test_a_published_series_reads_as_the_run_calibrate_would_parse() -> None:
    mod = _script("nccl_tests")
    s = next(x for x in NCCL["series"] if x["id"] == "azure-ndh100v5-allreduce")
    run = mod.as_run(s)
    assert (run.ranks, run.nodes, run.collective) == (8, 1, "allreduce")
    for row, (size, busbw, *_) in zip(run.rows, s["rows"]):
        assert row.size == size and row.busbw == pytest.approx(busbw * 1e9, rel=1e-12)
        # nccl-tests: busbw = algbw x 2(n-1)/n, algbw = size / time.
        assert row.algbw == pytest.approx(size / row.seconds, rel=1e-12)
        assert row.busbw == pytest.approx(row.algbw * 2 * 7 / 8, rel=1e-12)
    c = mod.fit_calibration(s)
    assert c.rows == len(s["rows"]) and c.options.startswith("intra_efficiency=")
    assert "inter_" not in c.options and c.own_max < 0.10  # docs/calibration.md: worst row 8.2%


def test_nccl_tests_script_prints_the_cross_calibrated_column(tmp_path: Path) -> None:
    mod = _script("nccl_tests")
    out = tmp_path / "nccl.md"
    assert mod.main(["--only", "azure-nda100v4-allreduce", "--max-rows", "2", "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "; ml-eng A100) |" in text  # calibrated on the other publisher's A100 sweep
    assert "| ml-eng A100 | mle-a100-allreduce | 15 | `intra_efficiency=" in text
    assert "- uncalibrated: 2 rows;" in text and "- cross-calibrated: 2 rows;" in text
    assert (
        mod.main(
            ["--strategy", "ring", "--only", "azure-nda100v4-allreduce", "--max-rows", "1", "--markdown", str(out)]
        )
        == 0
    )
    assert "cross-calibrated: " not in out.read_text()


def test_horovod_rdma_over_tcp_check_runs_and_is_not_counted(tmp_path: Path) -> None:
    mod = _script("training")
    rows = mod.run_study(next(s for s in TRAINING["studies"] if s["id"] == "check-horovod-rdma-vs-tcp"), None)
    ratio = {r.model: r.predicted for r in rows}
    assert all(not r.counted for r in rows)
    # TCP (goodput 0.544 of the line rate) is slower; the communication-heavy VGG-16 loses more.
    assert 1 < ratio["inception_v3"] < ratio["vgg16"]
    assert mod.summary(rows)["rows"] == 0


def test_allgather_and_reducescatter_have_measured_sweeps_from_1MiB_to_8GiB() -> None:
    # The reproductions cover every collective with a sweep, not one large size.
    for coll in ("allreduce", "allgather", "reducescatter"):
        sweeps = [
            s
            for s in NCCL["series"]
            if s["collective"] == coll
            and s.get("kind", "measurement") == "measurement"
            and {2**k for k in range(20, 34)} <= {r[0] for r in s["rows"]}
        ]
        assert sweeps, coll


def test_allreduce_and_allgather_have_multi_node_sweeps() -> None:
    # Across nodes too: the network's share of a collective is what most clusters buy.
    for coll in ("allreduce", "allgather"):
        assert any(
            s["collective"] == coll
            and s["nodes"] >= 2
            and s.get("kind", "measurement") == "measurement"
            and {2**k for k in range(20, 34)} <= {r[0] for r in s["rows"]}
            for s in NCCL["series"]
        ), coll


def test_reducescatter_and_alltoall_have_measured_sweeps_on_one_and_many_nodes() -> None:
    # Every collective is measured across nodes and on a full node, as a sweep over the
    # sizes from 32 MiB to 16 GiB that a training job's buckets and shards span.
    span = {2**k for k in range(25, 35)}
    for coll in ("reducescatter", "alltoall"):
        for nodes_wanted in (lambda n: n == 1, lambda n: n >= 2):
            assert any(
                s["collective"] == coll
                and nodes_wanted(s["nodes"])
                and s["gpus_per_node"] == 8
                and s.get("kind", "measurement") == "measurement"
                and span <= {r[0] for r in s["rows"]}
                for s in NCCL["series"]
            ), coll


def test_an_algorithm_published_from_a_size_up_is_blank_below_it() -> None:
    mod = _script("nccl_tests")
    by_id = {s["id"]: s for s in NCCL["series"]}
    s = by_id["wh-h100-4gpu-allreduce"]  # the TUNING log covers 256 MiB-8 GiB only
    assert s["algo_published"] == {"from_bytes": 256 * 2**20, "algo": "ring/simple"}
    assert mod.published_algo(s, 128 * 2**20) == ""
    assert mod.published_algo(s, 256 * 2**20) == mod.published_algo(s, 8 * 2**30) == "ring/simple"
    # Forced algorithms and protocols of the same source run as NCCL_ALGO / NCCL_PROTO.
    assert mod.strategy_for(by_id["wh-h100-2gpu-allreduce-nvls"], "nccl") == "nccl:algo=nvls"
    assert mod.strategy_for(by_id["wh-h100-4gpu-allreduce-tree"], "nccl") == "nccl:algo=tree"
    assert mod.strategy_for(by_id["wh-h100-4gpu-allreduce-ll128"], "nccl") == "nccl:proto=ll128"
    # A partial node: the GPU count of the run, one node of the H100 preset.
    assert {(by_id[i]["nodes"], by_id[i]["gpus_per_node"]) for i in by_id if i.startswith("wh-h100-6gpu")} == {(1, 6)}
