"""The logs' nodes against the topology's: hosts that hold more ranks than a node has GPUs
(nodes named by IP address, which nccl-tests cuts at the first '.'), multi-node runs of another
number of GPUs per node than any node tensorwire models, and no cluster file written that
``--cluster`` would refuse; and the parameters table's "from" column saying truthfully where
each value comes from."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.calibrate import cluster_file
from tensorwire.calibrate.fit import Calibration
from tensorwire.calibrate.predict import calibration_supported
from tensorwire.cli import main

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nccl-tests"
AZURE = FIXTURES / "azure-nd-h100-v5-allreduce.log"
GCP = FIXTURES / "gcp-a3-mega-2x8-allreduce.log"
_RANK_HOST = re.compile(r"^(#  Rank +([0-9]+) Group +[0-9]+ Pid +[0-9]+ on) +\S+")


def _with_hosts(tmp_path: Path, host_of_rank: dict[int, str]) -> Path:
    """The GCP fixture (16 ranks, all-reduce) with each rank on the host ``host_of_rank`` says."""
    lines = []
    for line in GCP.read_text().splitlines():
        m = _RANK_HOST.match(line)
        lines.append(
            _RANK_HOST.sub(lambda m: f"{m.group(1)} {host_of_rank[int(m.group(2))]:>10s}", line) if m else line
        )
    path = tmp_path / "hosts.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def _refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> str:
    """The one line ``calibrate nccl-tests ARGS --out OUT`` refuses with (exit 2, no OUT)."""
    out = tmp_path / "out.json"
    rc = main(["calibrate", "nccl-tests", *args, "--out", str(out)])
    stdout, stderr = capsys.readouterr()
    assert rc == 2 and stdout == "" and stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert not out.exists()
    return stderr


def test_nodes_named_by_ip_address_are_not_read_as_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """nccl-tests prints a host name up to its first '.': 10.0.0.5 and 10.0.0.6 both print as
    '10'. The 2 x 8 run read as one node of 16 GPUs on an 8-GPU dgx-h100, was fitted as such
    (exit 0), and its cluster file (gpus_per_node 16) was refused by every --cluster."""
    path = _with_hosts(tmp_path, {r: "10" for r in range(16)})
    err = _refused(capsys, tmp_path, str(path))
    assert err == (
        f"tensorwire: error: log: {path}: 16 ranks on host '10', more than the 8 GPUs of a node of "
        "rail:node=dgx-h100: nccl-tests prints a host name up to its first '.', so nodes named by IP address "
        "(10.0.0.5, 10.0.0.6: both '10') read as one host; run on host names that differ before their first '.', "
        "or edit the host names of its '#  Rank' lines to tell the nodes apart\n"
    )


@pytest.mark.parametrize("topology", ["rail:node=dgx-h100", "nodes:machine=dgx-a100"])
def test_multi_node_runs_of_four_gpus_per_node_are_refused_as_unsupported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, topology: str
) -> None:
    """Every node tensorwire models has 8 GPUs and no option sets a node's GPU count: 4 x 4
    GPUs would be modelled as 2 nodes of 8. It said "give --topology with that node", which no
    topology is."""
    path = _with_hosts(tmp_path, {r: f"h{r // 4}" for r in range(16)})
    extra = () if topology.startswith("rail") else ("--topology", topology, "-b", "200Gbps")
    err = _refused(capsys, tmp_path, str(path), *extra)
    kind = topology.split(":")[0]
    assert err.startswith(f"tensorwire: error: log: {path}: 4 GPUs per node on 4 nodes, where {topology} has 8: ")
    assert err.endswith(
        f"no node tensorwire models has 4 GPUs ({kind}'s presets have 8 and no option sets a node's GPU count), so "
        "multi-node runs of 4 GPUs per node are not supported: run nccl-tests with 8 GPUs per node\n"
    )


def test_a_cluster_file_the_cluster_option_refuses_is_not_written(tmp_path: Path) -> None:
    """``write`` checks what it writes as ``--cluster`` reads it: more GPUs per node than the
    node has, or a key the format does not have, is refused, and nothing is written."""
    path = tmp_path / "c.json"

    def keys(gpus: int, **over: Any) -> dict[str, Any]:
        source = {"path": "a.log", "sha256": "0" * 64, "collective": "allreduce", "nodes": 1}
        return {
            "tensorwire_cluster": cluster_file.FORMAT,
            "topology": "rail:node=dgx-h100",
            "bandwidth_bytes_per_s": None,
            "latency_s": 5e-6,
            "transport": "rdma",
            "gpus_per_node": gpus,
            "calibration": Calibration().as_dict(),
            "nccl_version_modelled": _core.NCCL_VERSION,
            "nccl_version_measured": None,
            "sources": [{**source, "gpus_per_node": gpus, "gpu": "NVIDIA H100 80GB HBM3", "rows": 3}],
            "max_abs_error": 0.0,
            "measured_with": {"algo": None, "proto": None, "strategy": "nccl"},
            "created": "2026-01-01T00:00:00Z",
            **over,
        }

    with pytest.raises(InputError) as e:
        cluster_file.write(str(path), keys(16))
    assert e.value.args[0] == "out" and not path.exists()
    assert e.value.args[1].startswith(
        f"{path} not written: --cluster would refuse it (cluster.gpus_per_node: 16 is more"
    )
    with pytest.raises(InputError) as e:
        cluster_file.write(str(path), keys(8, latency=1e-6))
    assert e.value.args[1] == (
        f"{path} not written: --cluster would refuse it (cluster.latency: not a key of a cluster file; its keys are "
        f"{', '.join(cluster_file.OPTION_KEYS + cluster_file.RECORD_KEYS)})"
    )
    assert not path.exists()
    cluster_file.write(str(path), keys(8))
    assert cluster_file.read(str(path)).gpus_per_node == 8


# --- where each parameter comes from -----------------------------------------------------


def _parameters(text: str) -> dict[str, tuple[str, str]]:
    """The parameters table's rows: name -> (value, from)."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 3 and re.fullmatch(r"(intra|inter|nvls|nvlstree)_\w+", cells[0]):
            rows[cells[0]] = (cells[1], cells[2])
    return rows


@pytest.mark.skipif(not calibration_supported(), reason="the core lacks the calibration options")
@pytest.mark.parametrize("drop_1mib", [False, True])
def test_the_from_column_says_why_a_value_is_nccls_figure(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, drop_1mib: bool
) -> None:
    """Azure's sweep: the rings' one row (1 MiB) is latency-bound, so their efficiency and fill
    are NCCL's figures, and said so. Without that row no row runs a ring: it said "its rows are
    latency-bound" of rows there were none of. Every value kept is NCCL's figure."""
    path = AZURE
    if drop_1mib:
        path = tmp_path / "from-2MiB.log"
        path.write_text("".join(t for t in AZURE.read_text().splitlines(True) if not t.lstrip().startswith("1048576 ")))
    rc = main(["calibrate", "nccl-tests", str(path)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    table = _parameters(out)
    why = "no row ran it" if drop_1mib else "too few bandwidth-bound rows"
    assert table["intra_efficiency"] == ("1", f"kept (NCCL's figure): {why}")
    assert table["intra_fill"] == ("1", f"kept (NCCL's figure): {why}")
    assert table["nvls_efficiency"][1] == "single-node NVLS rows"
    assert all(value in ("1", "0 ns") for value, source in table.values() if not source.startswith("single-node"))
