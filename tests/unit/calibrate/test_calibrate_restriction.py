"""`calibrate nccl-tests --algo/--proto`: logs measured under NCCL_ALGO / NCCL_PROTO are fitted
with NCCL's choice restricted the same way, and the cluster file says how to simulate them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tensorwire.calibrate.fit import fit, nccl_list
from tensorwire.calibrate.predict import calibration_supported
from tensorwire.calibrate.reading import parse_log
from tensorwire.cli import main

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nccl-tests"
H100 = str(FIXTURES / "azure-nd-h100-v5-allreduce.log")
NATIVE = calibration_supported()


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(
    "given, expected",
    [("Ring,Tree", "ring+tree"), ("^NVLS,NVLSTree", "^nvls+nvlstree"), ("Simple", "simple"), (" LL128 ", "ll128")],
)
def test_nccl_lists_become_the_strategy_syntax(given: str, expected: str) -> None:
    assert nccl_list(given) == expected


def test_every_row_is_fitted_under_the_restriction() -> None:
    runs = [parse_log(H100)]
    free = fit(runs, "rail:node=dgx-h100", None, "rdma")
    assert {r.after.algo for r in free.rows} >= {"ring", "nvls"}  # NCCL's own choice mixes them
    ring = fit(runs, "rail:node=dgx-h100", None, "rdma", "ring", "simple")
    assert {(r.before.algo, r.before.proto) for r in ring.rows} == {("ring", "simple")}
    assert {(r.after.algo, r.after.proto) for r in ring.rows} == {("ring", "simple")}
    # Excluding NVLS leaves NCCL's other choices: no row runs NVLS.
    no_nvls = fit(runs, "rail:node=dgx-h100", None, "rdma", "^nvls+nvlstree")
    assert all(r.after.algo not in ("nvls", "nvlstree") for r in no_nvls.rows)


@pytest.mark.skipif(not NATIVE, reason="the core has no calibration options")
def test_the_cluster_file_says_how_the_logs_were_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.json"
    rc, stdout, _ = _run(capsys, "calibrate", "nccl-tests", H100, "--algo", "Ring", "--proto", "Simple", "-o", str(out))
    assert rc == 0
    assert "simulate with -s nccl:algo=ring,proto=simple" in stdout
    data = json.loads(out.read_text())
    assert data["measured_with"] == {"algo": "ring", "proto": "simple", "strategy": "nccl:algo=ring,proto=simple"}
    rc, stdout, _ = _run(capsys, "calibrate", "nccl-tests", H100, "--json")
    assert rc == 0 and json.loads(stdout)["strategy"] == "nccl"


@pytest.mark.parametrize(
    "args, field",
    [
        (["--algo", "bogus"], "algo"),
        (["--proto", "fast"], "proto"),
        (["--algo", "nvls", "--proto", "ll"], "proto"),  # NVLS runs only Simple
        (["--algo", "nvls", "--topology", "rail:node=dgx-a100"], "algo"),  # no NVLink SHARP on A100
    ],
)
def test_a_restriction_nccl_cannot_run_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], field: str
) -> None:
    out = tmp_path / "c.json"
    log = H100
    if "rail:node=dgx-a100" in args:  # an A100 log: an H100 one on A100 nodes is refused as such first
        log = str(tmp_path / "a100.log")
        Path(log).write_text(Path(H100).read_text().replace("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"))
    rc, stdout, err = _run(capsys, "calibrate", "nccl-tests", log, *args, "-o", str(out))
    assert rc == 2 and stdout == ""
    assert err.startswith(f"tensorwire: error: {field}: ") and err.count("\n") == 1, err
    assert not out.exists()


COREWEAVE = str(FIXTURES / "coreweave-h100-12x8-sharp-allreduce.log")


@pytest.mark.skipif(not NATIVE, reason="the core has no calibration options")
def test_a_multi_node_sharp_log_under_nccl_algo_is_fitted_within_5_percent() -> None:
    # CoreWeave's 12 x 8 H100 run with NCCL_ALGO=COLLNETCHAIN (SHARP in the switches): the
    # inter-node regime is fitted, every row stays on CollNet chain, as the run did.
    runs = [parse_log(COREWEAVE)]
    assert (runs[0].nodes, runs[0].gpus_per_node) == (12, 8)
    result = fit(runs, "rail:node=dgx-h100,sharp=true", None, "rdma", nccl_list("COLLNETCHAIN"))
    assert result.fitted == ("inter",)
    assert {(r.before.algo, r.after.algo) for r in result.rows} == {("collnetchain", "collnetchain")}
    assert max(abs(r.error) for r in result.rows) <= 0.05, [(r.size, r.error) for r in result.rows]


def test_collnet_without_sharp_in_the_switches_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    rc, stdout, err = _run(capsys, "calibrate", "nccl-tests", COREWEAVE, "--algo", "CollNetChain")
    assert rc == 2 and stdout == "" and err.startswith("tensorwire: error: algo: ") and err.count("\n") == 1
