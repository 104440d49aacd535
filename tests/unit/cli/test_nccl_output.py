"""What runs timed by NCCL's model show: NCCL's choice in `simulate`'s table and
JSON, each rank's collectives in a trace, and no link figure where no link was measured
(decided by the result, not by the strategy's name)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import tensorwire as tw
from rich.console import Console
from tensorwire.chrome_trace import chrome_trace
from tensorwire.cli import render
from tensorwire.strategy import with_options

RAIL = "rail:node=dgx-h100"


def _tw(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True)


def test_a_microbenchmark_shows_what_nccl_chose() -> None:
    args = ("simulate", "--collective", "allreduce:64MiB", "-s", "nccl", "--topology", RAIL, "-n", "16")
    done = _tw(*args, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    (choice,) = out["nccl_choices"]
    assert choice["collective"] == "allreduce" and choice["count"] == 1 and choice["bytes"] == 64 * 2**20
    assert choice["channels"] >= 1 and choice["protocol"] in ("ll", "ll128", "simple")
    assert out["link_utilization"] == {}
    # Forced by the strategy's options, as NCCL_ALGO / NCCL_PROTO force it.
    forced = json.loads(_tw(*args[:3], "-s", "nccl:algo=ring,proto=ll128", *args[5:], "--json").stdout)
    assert [(c["algorithm"], c["protocol"]) for c in forced["nccl_choices"]] == [("ring", "ll128")]
    table = _tw(*args).stdout
    want = f"{choice['algorithm']} / {choice['protocol']}, {choice['channels']} channels"
    assert "NCCL's choice" in table and want in table, table
    assert render.NO_LINKS in table


def test_an_all_to_all_shows_the_channels_each_peer_is_striped_over() -> None:
    # NCCL stripes each peer's send over more channels as it grows (addP2pToPlan): on one
    # H100 node 4 per peer up to 64 MiB per peer, 8 at 128 MiB (nccl-tests' 1 GiB).
    for size, per_peer in (("512MiB", 4), ("1GiB", 8)):
        args = ("simulate", "--collective", f"alltoall:{size}", "-s", "nccl", "--topology", RAIL, "-n", "8")
        done = _tw(*args, "--json")
        assert done.returncode == 0, done.stderr
        (choice,) = json.loads(done.stdout)["nccl_choices"]
        assert (choice["algorithm"], choice["channels"], choice["peer_channels"]) == ("p2p", 32, per_peer)
        assert f"p2p / simple, 32 channels, {per_peer} per peer" in _tw(*args).stdout
    # A collective algorithm has none.
    r = tw.simulate(tw.load_model("resnet50"), tw.Cluster(16, "400Gbps", topology=RAIL), "ddp")
    assert {c["peer_channels"] for c in r.nccl_choices} == {None}


def test_a_training_run_counts_one_iterations_choices() -> None:
    w = tw.load_model("resnet50")
    r = tw.simulate(w, tw.Cluster(16, "400Gbps", topology=RAIL), "ddp")
    # DDP's buckets: every gradient byte in one all-reduce per iteration.
    assert {c["collective"] for c in r.nccl_choices} == {"allreduce"}
    assert sum(c["bytes"] for c in r.nccl_choices) == pytest.approx(w.total_bytes)
    assert r.to_dict()["nccl_choices"] == list(r.nccl_choices)
    assert tw.simulate(w, tw.Cluster(4, "25Gbps"), "ring").nccl_choices == ()


@pytest.mark.parametrize("strategy", ["nccl", "ddp", "fsdp:comm=nccl"])
def test_a_trace_shows_each_ranks_timed_collectives(strategy: str, tmp_path: Path) -> None:
    r = tw.simulate(
        tw.load_model("resnet50"), tw.Cluster(16, "400Gbps", topology=RAIL), strategy, timeline=True, fold=False
    )
    spans = [s for s in r.timeline if s["kind"] == "collective"]
    assert {s["worker"] for s in spans} == set(range(16)) and all(s["link"] is None for s in spans)
    slices = [e for e in chrome_trace(r)["traceEvents"] if e.get("cat") == "collective"]
    begins = [e for e in slices if e["ph"] == "b"]
    assert begins and len(begins) == len([e for e in slices if e["ph"] == "e"])
    assert all({"algorithm", "protocol", "channels", "bytes"} <= set(e["args"]) for e in begins)


def _printed(monkeypatch: pytest.MonkeyPatch, show: object) -> str:
    buffer = io.StringIO()
    monkeypatch.setattr(render, "console", Console(file=buffer, width=200))
    assert callable(show)
    show()
    return buffer.getvalue()


def test_the_link_section_follows_the_result_not_the_strategy_name(monkeypatch: pytest.MonkeyPatch) -> None:
    w = tw.load_model("resnet50")
    cluster = tw.Cluster(4, "25Gbps")
    ring = tw.simulate(w, cluster, "ring")
    assert ring.link_utilization
    # A run without measured links, whatever its name: "-" and the reason, no 0%.
    bare = replace(ring, link_utilization={})
    text = _printed(monkeypatch, lambda: render.result(bare, w))
    assert render.NO_LINKS in text and "link h0" not in text
    # A run with measured links under a name NCCL's strategies use: its links.
    named = replace(ring, strategy="ddp")
    text = _printed(monkeypatch, lambda: render.result(named, w))
    assert render.NO_LINKS not in text and "link h" in text
    table = _printed(
        monkeypatch, lambda: render.comparison("resnet50", [ring, replace(bare, strategy="x")], ring, "", cluster)
    )
    rows = {
        line.split("│")[2].strip(): line.split("│")[-3].strip() for line in table.splitlines() if line.count("│") > 8
    }
    assert rows["x"] == "-" and rows["ring"].endswith("%"), rows
    assert f"max link {render.NO_LINKS}" in table


def test_a_pair_faster_than_nccls_choice_is_named_with_how_to_force_it() -> None:
    # 64 GPUs on 8 `nodes` machines at 80 Gbit/s, 1 MiB: NCCL's model picks tree/LL128, whose
    # FIFO fills 8 of its 14.6 chunks a channel (736.5 us); ring/LL128 runs in 531.4 us.
    args = ("simulate", "--collective", "allreduce:1MiB", "--topology", "nodes", "-n", "64", "-b", "80Gbps")
    done = _tw(*args, "-s", "nccl", "--json")
    assert done.returncode == 0, done.stderr
    (choice,) = json.loads(done.stdout)["nccl_choices"]
    assert (choice["algorithm"], choice["faster_algorithm"], choice["faster_protocol"]) == ("tree", "ring", "ll128")
    assert choice["seconds"] == pytest.approx(736.516e-6) and choice["fastest_seconds"] == pytest.approx(531.38e-6)
    table = _tw(*args, "-s", "nccl").stdout
    assert "faster (tensorwire's timing)" in table and "NCCL_ALGO=Ring NCCL_PROTO=LL128" in table, table
    assert "-s nccl:algo=ring,proto=ll128" in table, table
    # Forced, the named pair runs in the time named, and nothing faster is left to name.
    forced = json.loads(_tw(*args, "-s", "nccl:algo=ring,proto=ll128", "--json").stdout)["nccl_choices"][0]
    assert forced["seconds"] == pytest.approx(choice["fastest_seconds"])
    assert forced["faster_algorithm"] is None and forced["fastest_seconds"] == forced["seconds"]
    assert "faster (tensorwire's timing)" not in _tw(*args, "-s", "nccl:algo=ring,proto=ll128").stdout
    # A sharded strategy takes no algo=: only NCCL's settings are named.
    rows = render.faster_rows({**choice}, "fsdp")
    assert rows and "NCCL_ALGO=Ring" in rows[0][1] and "-s " not in rows[0][1]


@pytest.mark.parametrize("strategy", ["ddp", "fsdp", "ddp:reduce_dtype=fp32"])
def test_compute_slowed_by_nccl_kernels_is_its_own_row_not_exposed_communication(
    strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "exposed" counted the slowed compute: 29.4 ms for Llama 3 8B ddp on 64 H100, where
    # the trace left 9.8 ms of the iteration without compute.
    w = tw.load_model("llama3_8b", gpu="h100")
    cluster = tw.Cluster(64, "400Gbps", topology=RAIL)
    r = tw.simulate(w, cluster, strategy)
    assert r.compute_interference_s > 0
    assert r.iteration_time_s == pytest.approx(r.compute_time_s + r.compute_interference_s + r.exposed_comm_s)
    assert r.scaling_factor == pytest.approx(r.compute_time_s / r.iteration_time_s)
    off = tw.simulate(w, cluster, with_options(strategy, "compute_slowdown=0"))
    assert off.compute_interference_s == 0
    # Gradients in the type they are reduced in (fp32: twice the listed bf16).
    factor = 2 if "fp32" in strategy else 1
    assert r.gradient_bytes_per_worker == factor * w.total_bytes
    out = io.StringIO()
    monkeypatch.setattr(render, "console", Console(file=out, width=200))
    render.result(r, w)
    table = out.getvalue()
    assert render.INTERFERENCE_ROW in table and "exposed (not covered by compute)" in table


def test_compare_shows_compute_slowed_by_collective_kernels_beside_exposed(monkeypatch: pytest.MonkeyPatch) -> None:
    # The compare table's columns add up as simulate's rows do: iteration = compute +
    # slowed + exposed; the column is there only when some strategy slows compute.
    w = tw.load_model("resnet50")
    cluster = tw.Cluster(16, "400Gbps", topology=RAIL)
    ddp, ring = tw.simulate(w, cluster, "ddp"), tw.simulate(w, cluster, "ring:compute_slowdown=0")
    assert ddp.compute_interference_s > 0 and ring.compute_interference_s == 0
    table = _printed(monkeypatch, lambda: render.comparison("resnet50", [ddp, ring], ddp, "", cluster))
    header = next(line for line in table.splitlines() if "strategy" in line)
    assert "slowed" in header and render.SLOWED_NOTE in table
    cells = {line.split("│")[2].strip()[:4]: line.split("│") for line in table.splitlines() if line.count("│") > 8}
    names = [c.strip() for c in header.split("┃")]
    slowed, exposed = names.index("slowed"), names.index("exposed")
    assert cells["ddp"][slowed].strip() == render.format_seconds(ddp.compute_interference_s)
    assert cells["ring"][slowed].strip() == "0 ns"
    assert cells["ddp"][exposed].strip() == render.format_seconds(ddp.exposed_comm_s)
    assert ddp.iteration_time_s == pytest.approx(
        ddp.compute_time_s + ddp.compute_interference_s + ddp.exposed_comm_s, rel=1e-9
    )
    alone = _printed(monkeypatch, lambda: render.comparison("resnet50", [ring], ring, "", cluster))
    assert "slowed" not in alone and render.SLOWED_NOTE not in alone
