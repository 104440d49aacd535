"""Sharded data parallelism through the Python API and the CLI: the ZeRO paper's byte
volumes, mixed precision from the LLM zoo, labelled collectives in timelines, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import tensorwire as tw
from tensorwire.chrome_trace import chrome_trace


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def llama() -> tw.Workload:
    return tw.load_model("llama3_8b", gpu="a100-80gb", seq_len=2048)


def test_fsdp_sends_one_and_a_half_times_ddp_but_the_roots_backward_gather_on_an_llm(llama: tw.Workload) -> None:
    cluster = tw.Cluster(16, "100Gbps")
    ddp = tw.simulate(llama, cluster, "ring", iterations=2)
    fsdp = tw.simulate(llama, cluster, "fsdp:algorithm=ring", iterations=2)
    zero2 = tw.simulate(llama, cluster, "zero2", iterations=2)
    psi = llama.total_bytes
    assert llama.dtype_bytes == 2 and psi == 2 * 8_030_261_248
    assert ddp.sent_bytes_per_worker == pytest.approx(2 * 15 / 16 * psi, rel=1e-9)
    assert zero2.sent_bytes_per_worker == pytest.approx(ddp.sent_bytes_per_worker, rel=1e-9)
    # 3 Psi (1.5 x DDP) but for the root unit's backward all-gather: FSDP2 keeps the root
    # (embeddings, final norm and head, 1.05e9 parameters) through backward.
    root = 2 * (2 * 128_256 * 4096 + 4096)
    assert (
        sum(t.bytes for layer in llama.layers if not layer.name.startswith("model.layers.") for t in layer.tensors)
        == root
    )
    assert fsdp.sent_bytes_per_worker == pytest.approx(15 / 16 * (3 * psi - root), rel=1e-9)
    # fp32 reduction of bf16-listed gradients doubles the reduce-scatter's bytes.
    fp32 = tw.simulate(llama, cluster, "fsdp:algorithm=ring,reduce_dtype=fp32", iterations=2)
    assert fp32.sent_bytes_per_worker - fsdp.sent_bytes_per_worker == pytest.approx(15 / 16 * psi, rel=1e-9)


def test_timelines_and_chrome_traces_name_the_collectives() -> None:
    w = tw.Workload.collective("allreduce:1MiBx3")
    r = tw.simulate(w, tw.Cluster(4, "10Gbps"), "fsdp", iterations=2, timeline=True, fold=False)
    names = {str(s["name"]).split(":")[0] for s in r.timeline if s["kind"] == "flow"}
    assert {"allgather", "reducescatter"} <= names
    events = chrome_trace(r)["traceEvents"]
    assert any(str(e.get("name", "")).startswith("allgather:") for e in events)


def test_folding_changes_nothing_for_sharded_strategies_on_a_rail_fabric(llama: tw.Workload) -> None:
    cluster = tw.Cluster(32, "200Gbps", topology="rail:node=dgx-a100,nodes_per_group=2")
    for spec in ("fsdp", "hsdp", "zero2"):
        folded = tw.simulate(llama, cluster, spec, iterations=2)
        full = tw.simulate(llama, cluster, spec, iterations=2, fold=False)
        assert folded.folded and not full.folded and folded.simulated_ranks < full.simulated_ranks
        assert folded.iteration_time_s == pytest.approx(full.iteration_time_s, rel=1e-9), spec


def test_hsdp_groups_spanning_some_nodes_run_a_ring_per_level() -> None:
    # Shard groups of 16 on 8-GPU nodes span 2 of 4 nodes: a ring inside each node, then
    # one per rail across the 2 nodes (not one flat ring through a single NIC, which took
    # 3.5x as long). Their time lies between those of groups of 8 and of 32.
    llama = tw.load_model("llama3_8b", gpu="h100", seq_len=2048)
    cluster = tw.Cluster(32, "400Gbps", topology="rail:node=dgx-h100")
    t = {g: tw.simulate(llama, cluster, f"hsdp:shard_group={g}", iterations=2) for g in (8, 16, 32)}
    times = [t[g].iteration_time_s for g in (8, 32)]
    assert min(times) * 0.99 <= t[16].iteration_time_s <= max(times) * 1.01
    # Timed by NCCL's model (comm=nccl on rail): no flow on any link, so no link figure.
    assert t[16].link_utilization == {}
    # Bytes per GPU: two all-gathers (one for the root unit, kept through backward) and a
    # reduce-scatter of the bf16 model inside the group, then an all-reduce of the 1/16
    # shard across the 2 groups.
    p, root = 2 * 8_030_261_248, 2 * (2 * 128_256 * 4096 + 4096)
    assert t[16].sent_bytes_per_worker == pytest.approx(15 / 16 * (3 * p - root) + 2 * 1 / 2 * p / 16, rel=1e-6)


@pytest.mark.parametrize(
    "args, field",
    [
        (["-s", "fsdp:param_dtype=fp8"], "strategy.param_dtype"),
        (["-s", "hsdp:shard_group=3"], "strategy.shard_group"),
        (["-s", "zero1:prefetch=2"], "strategy.prefetch"),
        (["-s", "fsdp", "--topology", "rail:node=dgx-z9"], "topology"),
    ],
)
def test_bad_sharded_input_is_one_line_and_exit_2(args: list[str], field: str) -> None:
    p = run("simulate", "--model", "llama3_8b", "--seq-len", "1024", "-n", "16", "-b", "100Gbps", *args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in p.stderr, p.stderr


def test_compare_ranks_ddp_against_sharded_strategies_for_an_llm() -> None:
    p = run("compare", "--model", "llama3_8b", "--seq-len", "1024", "-n", "16", "-b", "100Gbps", "--json")
    assert p.returncode == 0, p.stderr
    rows = [r for r in json.loads(p.stdout) if "refused" not in r]  # over the flow budget: a row saying so
    names = {r["strategy"] for r in rows}
    assert {"ddp", "nccl", "zero1", "zero2", "fsdp", "hsdp"} <= names
    assert all(r["baseline"] == "ddp" for r in rows)
    times = [r["iteration_time_s"] for r in rows]
    assert times == sorted(times)


def test_the_html_report_shows_the_sharded_collectives(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "r.html"
    p = run("report", "-m", "llama3_8b", "-n", "8", "-b", "100Gbps", "-s", "ps,fsdp", "--out", str(out))
    assert p.returncode == 0, p.stderr
    page = out.read_text()
    assert "fsdp" in page and "reducescatter:" in page and "allgather" in page


@pytest.mark.parametrize("strategy", ["zero1", "zero2", "fsdp", "zero3", "hsdp"])
def test_one_worker_runs_its_compute_alone(strategy: str) -> None:
    # With one worker every collective has one rank and no message: the iteration is the
    # compute (it stalled: the one-rank collective's completion was never drained).
    w = tw.load_model("resnet50")
    r = tw.simulate(w, tw.Cluster(1, "25Gbps"), strategy)
    # each layer's forward and backward time is rounded to whole nanoseconds in the engine
    assert r.iteration_time_s == pytest.approx(w.compute_time_s, abs=2e-9 * len(w.layers))
    assert r.scaling_factor == pytest.approx(1.0, rel=1e-6)
