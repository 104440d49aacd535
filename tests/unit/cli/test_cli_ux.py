"""What a user meets: budgets and progress shared by compare/sweep/report, --workload on
them, microbenchmark bandwidths, LLM rates, the strategy listing, natural link order."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorwire import _core
from tensorwire.strategy import host_options, strategies

DATA = Path(__file__).parents[1] / "workloads" / "data"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=120)


def test_compare_lists_a_strategy_over_the_flow_budget_as_refused_and_picks_another_baseline() -> None:
    # ring on 1,024 ranks needs about 250 million flows: refused up front by the default budget
    p = run(
        "compare",
        "--model",
        "llama3_8b",
        "-n",
        "1024",
        "--topology",
        "rail:node=dgx-h100",
        "--strategies",
        "ring,fsdp",  # ddp (the preferred baseline) not listed: the first listed, ring, is preferred
        "--json",
    )
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    ran = [r for r in rows if "refused" not in r]
    refused = [r for r in rows if "refused" in r]
    assert [r["strategy"] for r in ran] == ["fsdp"] and [r["strategy"] for r in refused] == ["ring"]
    assert "max_flows" in refused[0]["refused"] or "flows" in refused[0]["refused"]
    assert ran[0]["baseline"] == "fsdp" and "ring" in ran[0]["baseline_note"]
    # progress is visible off a terminal: a line per finished strategy on stderr
    assert "[1/2]" in p.stderr and "[2/2]" in p.stderr and "refused" in p.stderr
    table = run(
        "compare", "--model", "llama3_8b", "-n", "1024", "--topology", "rail:node=dgx-h100", "--strategies", "fsdp,ring"
    )
    assert (
        table.returncode == 0
        and "refused [1]" in table.stdout
        and "[1] ring: ring on 1024 workers" in table.stdout
        and "vs fsdp" in table.stdout
    )


def test_compare_runs_no_extra_baseline_and_lists_zero3_and_fsdp_apart() -> None:
    p = run("compare", "--model", "vgg16", "-n", "8", "-b", "10Gbps", "--strategies", "ring,fsdp", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert sorted(r["strategy"] for r in rows) == ["fsdp", "ring"]  # no ps inserted
    assert all(r["baseline"] == "ring" for r in rows)
    default = run("compare", "--model", "alexnet", "-n", "4", "-b", "10Gbps", "--json")
    names = [r["strategy"] for r in json.loads(default.stdout)]
    # zero3 is DeepSpeed stage 3 (prefetch by elements), fsdp is FSDP2: two rows.
    assert "fsdp" in names and "zero3" in names


def test_compare_s_baseline_is_plain_ps_not_the_first_ps_with_options() -> None:
    """``ps:num_ps=8`` listed before ``ps`` was the baseline ("vs ps:num_ps=8"); without a
    plain ``ps`` the first listed is, as the guide says, not a ``ps`` with options."""
    args = ("compare", "--model", "alexnet", "-n", "4", "-b", "10Gbps", "--iterations", "2", "--json")
    for listed, baseline in (("ps:num_ps=2,ps,ring", "ps"), ("ring,ps:num_ps=2", "ring")):
        p = run(*args, "--strategies", listed)
        assert p.returncode == 0, p.stderr
        rows = json.loads(p.stdout)
        assert {r["baseline"] for r in rows} == {baseline}, listed
        assert next(r for r in rows if r["strategy"] == baseline)["speedup_over_baseline"] == 1.0


def test_compare_sweep_and_report_take_a_workload_file(tmp_path: Path) -> None:
    job = tmp_path / "job.json"
    p = run(
        "import-trace", str(DATA / "ddp_tiny_rank0.json.gz"), str(DATA / "ddp_tiny_rank1.json.gz"), "--out", str(job)
    )
    assert p.returncode == 0, p.stderr
    p = run("compare", "--workload", str(job), "-n", "8", "-b", "25Gbps", "--strategies", "ring,zero2", "--json")
    assert p.returncode == 0, p.stderr
    assert {r["strategy"] for r in json.loads(p.stdout)} == {"ring", "zero2"}
    out = tmp_path / "s.csv"
    p = run(
        "sweep",
        "--workload",
        str(job),
        "-n",
        "2,8",
        "-b",
        "25Gbps",
        "-s",
        "ring",
        "--out",
        str(out),
        "-j",
        "1",
        "--max-flows",
        "100000000",
    )
    assert p.returncode == 0, p.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 3 and ",file," in lines[1]
    pytest.importorskip("plotly")
    html = tmp_path / "r.html"
    p = run(
        "report",
        "--workload",
        str(job),
        "-n",
        "2,4",
        "-b",
        "25Gbps",
        "-s",
        "ps,ring",
        "--out",
        str(html),
        "-j",
        "1",
        "--no-timeline",
    )
    assert p.returncode == 0, p.stderr
    assert html.stat().st_size > 0


def test_sweep_passes_the_flow_budget(tmp_path: Path) -> None:
    out = tmp_path / "never.csv"
    p = run(
        "sweep",
        "-m",
        "llama3_8b",
        "-n",
        "16",
        "--topology",
        "rail:node=dgx-h100",
        "-s",
        "ring",
        "--max-flows",
        "1000",
        "-j",
        "1",
        "--out",
        str(out),
    )
    assert p.returncode == 2 and "max_flows" in p.stderr and "Traceback" not in p.stderr
    assert not out.exists()


@pytest.mark.parametrize(("kind", "factor"), [("allreduce", 2 * 7 / 8), ("allgather", 7 / 8), ("reducescatter", 7 / 8)])
def test_collective_bandwidths_follow_nccl_tests(kind: str, factor: float) -> None:
    # A ring of 8 hosts, one hop per step: ring all-reduce takes 2(n-1)(L + S/(nB)), reduce-scatter
    # and all-gather (n-1)(L + S/(nB)); with L = 0 the bus bandwidth is the link rate B.
    n, size, rate = 8, 64 * 2**20, 10e9 / 8
    p = run(
        "simulate",
        "--collective",
        f"{kind}:64MiBx2",
        "-n",
        str(n),
        "-b",
        "10Gbps",
        "--topology",
        "ring",
        "--latency",
        "0s",
        "-s",
        "ring",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    steps = 2 * (n - 1) if kind == "allreduce" else n - 1
    per = steps * size / n / rate
    assert out["time_per_collective_s"] == pytest.approx(per, rel=1e-6)
    assert out["algbw_bytes_per_s"] == pytest.approx(size / per, rel=1e-6)
    assert out["busbw_factor"] == pytest.approx(factor)
    assert out["busbw_bytes_per_s"] == pytest.approx(rate, rel=1e-6)
    assert out["bandwidth_bytes_per_s"] == out["bandwidth"] == rate


def test_collective_with_latency_matches_the_closed_form_and_the_table_shows_bandwidths() -> None:
    n, size, rate, lat = 16, 2**20, 25e9 / 8, 5e-6
    args = (
        "simulate",
        "--collective",
        "allreduce:1MiBx50",
        "-n",
        str(n),
        "-b",
        "25Gbps",
        "--topology",
        "ring",
        "-s",
        "ring",
    )
    out = json.loads(run(*args, "--json").stdout)
    per = 2 * (n - 1) * (lat + size / (n * rate))
    assert out["time_per_collective_s"] == pytest.approx(per, rel=1e-4)
    assert out["busbw_bytes_per_s"] == pytest.approx(size / per * 2 * (n - 1) / n, rel=1e-4)
    table = run(*args).stdout
    assert "bus bandwidth" in table and "algorithm bandwidth" in table and "samples/s" not in table
    assert "scaling factor" not in table


def test_llm_results_have_tokens_and_achieved_tflops() -> None:
    p = run(
        "simulate",
        "--model",
        "llama3_8b",
        "--gpu",
        "h100",
        "--seq-len",
        "2048",
        "-n",
        "8",
        "-b",
        "400Gbps",
        "-s",
        "fsdp",
        "--json",
    )
    out = json.loads(p.stdout)
    assert out["tokens_per_s"] == pytest.approx(out["throughput_samples_per_s"] * 2048)
    from tensorwire.workloads import llm

    flops = 3 * llm.forward_flops("llama3_8b", 2048)
    assert out["model_tflops_per_gpu"] == pytest.approx(flops / out["iteration_time_s"] / 1e12)
    # the compute alone runs at MFU 0.40 of the H100's 989.4 TFLOP/s: achieved is at most that
    assert out["model_tflops_per_gpu"] <= 0.40 * 989.4 * 1.001
    table = run(
        "simulate",
        "--model",
        "llama3_8b",
        "--gpu",
        "h100",
        "--seq-len",
        "2048",
        "-n",
        "8",
        "-b",
        "400Gbps",
        "-s",
        "fsdp",
    ).stdout
    assert "tokens/s" in table and "TFLOP/s per GPU" in table


def test_a_worker_of_k_gpus_reports_tflops_per_gpu() -> None:
    # docs/llm.md: one replica per node, compute divided via --compute-speedup 8. A GPU's
    # share is an eighth of the worker's: it printed 2,791.9 TFLOP/s per H100 (peak 989.4).
    args = ("simulate", "-m", "llama3_70b", "--gpu", "h100", "-n", "128", "--topology", "rail:node=dgx-h100", "-s")
    out = json.loads(run(*args, "ddp", "--compute-speedup", "8", "--json").stdout)
    from tensorwire.workloads import llm

    flops = 3 * llm.forward_flops("llama3_70b", 8192)
    assert out["model_tflops_per_gpu"] == pytest.approx(flops / out["iteration_time_s"] / 1e12 / 8)
    assert out["model_tflops_per_gpu"] <= 0.40 * 989.4 * 1.001
    assert out["tokens_per_s"] == pytest.approx(out["throughput_samples_per_s"] * 8192)
    # the replica's states and activations are shared by its 8 GPUs alike
    assert out["activation_bytes_per_gpu"] == pytest.approx(llm.activation_bytes("llama3_70b") / 8)
    assert out["memory_bytes_per_gpu"] == pytest.approx(
        out["model_state_bytes_per_gpu"] + out["activation_bytes_per_gpu"]
    )


def test_compare_shows_model_states_per_gpu_by_zeros_count_and_the_gathered_parameters() -> None:
    # compare ranked ddp first for Llama 3 70B on 1,024 H100 with nothing to say that its
    # 16 bytes per parameter (1.1 TB) cannot fit in an 80 GiB GPU.
    p = run("compare", "-m", "llama3_70b", "-n", "1024", "--topology", "rail:node=dgx-h100", "--json")
    rows = {r["strategy"]: r for r in json.loads(p.stdout) if "iteration_time_s" in r}
    from tensorwire.workloads import llm, load_model

    w = load_model("llama3_70b")
    psi, n = w.total_bytes / w.dtype_bytes, 1024
    expected = {
        "ddp": 16 * psi,  # bf16 weights and gradients, fp32 master copy, momentum, variance
        "zero1": 4 * psi + 12 * psi / n,
        "zero2": 2 * psi + 14 * psi / n,
        "zero3": 16 * psi / n,
        "fsdp": 16 * psi / n,
        "hsdp": 16 * psi / 8,  # sharded within a node
    }
    # The parameters gathered whole on top: FSDP2's root (embeddings, final norm, head: the
    # layers outside the blocks, kept through backward), the block computing and the next.
    blocks = [sum(t.bytes for t in layer.tensors) for layer in w.layers if layer.name.startswith("model.layers.")]
    root = w.total_bytes - sum(blocks)
    block = blocks[0]
    for spec in ("fsdp", "hsdp"):
        assert rows[spec]["gathered_parameter_bytes_per_gpu"] == root + 2 * block, spec
    assert rows["zero3"]["gathered_parameter_bytes_per_gpu"] > 0
    for spec, need in expected.items():
        gathered = rows[spec]["gathered_parameter_bytes_per_gpu"]
        assert gathered == 0 if spec in ("ddp", "zero1", "zero2") else gathered > 0, spec
        assert rows[spec]["model_state_bytes_per_gpu"] == pytest.approx(need + gathered, rel=1e-12), spec
        assert rows[spec]["gpu_memory_bytes"] == 80 * 2**30
        # every data-parallel strategy holds its own micro-batch's activations whole
        assert rows[spec]["activation_bytes_per_gpu"] == llm.activation_bytes("llama3_70b", 8192, 1), spec
        memory = rows[spec]["model_state_bytes_per_gpu"] + rows[spec]["activation_bytes_per_gpu"]
        assert rows[spec]["memory_bytes_per_gpu"] == pytest.approx(memory, rel=1e-12), spec
    table = run("compare", "-m", "llama3_70b", "-n", "1024", "--topology", "rail:node=dgx-h100").stdout
    assert "> 80" in table and "memory/GPU" in table and "ZeRO's count" in table and "activations" in table


def test_states_that_fit_with_activations_that_do_not_say_does_not_fit() -> None:
    # FSDP Llama 3 8B on 8 H100, 2 sequences of 8,192 tokens (torchtitan's benchmark): 17.7
    # GiB of states was all it showed, "of 80 GiB"; its activations peak 106 GiB above it.
    args = ("simulate", "-m", "llama3_8b", "-n", "8", "--topology", "rail:node=dgx-h100", "-s", "fsdp", "--batch", "2")
    out = json.loads(run(*args, "--json").stdout)
    from tensorwire.workloads import llm

    assert out["model_state_bytes_per_gpu"] < out["gpu_memory_bytes"] < out["memory_bytes_per_gpu"]
    assert out["activation_bytes_per_gpu"] == llm.activation_bytes("llama3_8b", 8192, micro_batch=2)
    table = run(*args).stdout
    assert "activations per GPU" in table and "106 GiB" in table and "does not fit" in table, table
    # --recompute (and --seq-len) reach the estimate: each block keeps its input only
    recomputed = json.loads(run(*args, "--recompute", "--seq-len", "4096", "--json").stdout)
    expected = llm.activation_bytes("llama3_8b", 4096, micro_batch=2, recompute=True)
    assert recomputed["activation_bytes_per_gpu"] == expected
    assert "of 80 GiB" in run(*args, "--recompute").stdout


def test_parameters_kept_gathered_through_the_step_do_not_fit() -> None:
    # fsdp:reshard_after_forward=false (SHARD_GRAD_OP) holds every unit's bf16 weights from
    # its forward to its backward, 2 Psi = 131 GiB for Llama 3 70B; ZeRO's count alone,
    # 1.03 GiB on 1,024 GPUs, printed "of 80 GiB".
    # With full recomputation (20.6 GiB of activations; 211 GiB without) plain fsdp fits.
    args = ("simulate", "-m", "llama3_70b", "-n", "1024", "--topology", "rail:node=dgx-h100", "--recompute", "-s")
    out = run(*args, "fsdp:reshard_after_forward=false").stdout
    assert "does not fit" in out, out
    assert "of 80 GiB" in run(*args, "fsdp").stdout


def test_an_llm_on_a_rail_computes_on_its_nodes_gpu() -> None:
    # rail:node=dgx-a100 without --gpu computed on the default H100 over an A100 network.
    base = ("-m", "llama3_8b", "-n", "16", "--topology", "rail:node=dgx-a100", "-s", "ddp")
    a100 = run("simulate", *base).stdout
    assert "A100 SXM 80GB" in a100.splitlines()[0], a100
    given = run("simulate", *base, "--gpu", "h100").stdout
    assert "H100 SXM 80GB" in given.splitlines()[0], given
    on_a100 = json.loads(run("simulate", *base, "--json").stdout)["compute_time_s"]
    on_h100 = json.loads(run("simulate", *base, "--gpu", "h100", "--json").stdout)["compute_time_s"]
    # Same MFU of each GPU's bf16 peak: 989.4 / 312 TFLOP/s.
    assert on_a100 / on_h100 == pytest.approx(989.4 / 312.0, rel=1e-3)
    # jobs too: a job alone is the simulate run of the same 8 GPUs.
    rail8 = ("-n", "8", "--topology", "rail:node=dgx-a100", "--json")
    jobs = json.loads(run("jobs", "--job", "a:llama3_8b:8:ddp", *rail8).stdout)
    alone = json.loads(run("simulate", "-m", "llama3_8b", "-s", "ddp", *rail8).stdout)["iteration_time_s"]
    assert jobs[0]["alone_iteration_time_s"] == pytest.approx(alone, rel=1e-9)


def test_small_rates_keep_their_decimals() -> None:
    from tensorwire.units import format_count

    assert format_count(16.42) == "16.4" and format_count(1878.7) == "1,879"


def test_strategies_lists_only_options_each_strategy_takes_and_aliases_on_their_target() -> None:
    for s in strategies():
        for o in s.options:
            if o.default:
                _core.Strategy(f"{s.name}:{o.name}={o.default}")  # accepted, not refused
    by = {s.name: s for s in strategies()}
    assert "prefetch" not in [o.name for o in by["zero1"].options]
    assert "shard_group" not in [o.name for o in by["fsdp"].options] and "shard_group" in [
        o.name for o in by["hsdp"].options
    ]
    assert by["zero3"].alias_of is None and "fusion" not in by["ps"].host_options
    zero3 = [o.name for o in by["zero3"].options]
    assert {"prefetch_bucket", "param_persistence", "reduce_bucket"} <= set(zero3) and "prefetch" not in zero3
    p = run("strategies")
    assert p.returncode == 0
    # 20 strategies and their options, then the fabrics and theirs (the GPU fabrics' NCCL and
    # calibration options, a line each: 300 lines with intra_step/inter_step; 324 with the
    # all-reduce strategies' compute_slowdown; 331 with nodes' nodes_per_leaf and
    # oversubscription), piped
    assert len(p.stdout.splitlines()) < 335
    assert "(= zero3)" not in p.stdout and "prefetch_bucket" in p.stdout and "unfused" in p.stdout
    assert p.stdout.count("backward_prefetch") <= 3  # once per strategy row that takes it (fsdp, hsdp) + once described


def test_connections_is_listed_with_its_old_spelling_streams() -> None:
    """``connections`` (one letter from ``execution=stream`` no more) is listed under its
    new name, mentions the old one, and both spellings run the same strategy."""
    (o,) = [o for o in host_options() if o.name == "connections"]
    assert o.aliases == ("streams=fair|ordered",) and o.accepts == "one of shared, ordered-pairs"
    assert [o.name for o in host_options() if o.aliases] == ["connections"]
    p = run("strategies")
    assert "connections" in p.stdout and "streams=fair|ordered" in p.stdout
    listed = json.loads(run("strategies", "--json").stdout)
    ring = {o["name"]: o for o in next(s for s in listed if s["name"] == "ring")["options"]}
    assert ring["connections"]["aliases"] == ["streams=fair|ordered"] and "aliases" not in ring["segments"]
    args = ("simulate", "--model", "resnet50", "-n", "4", "-b", "1Gbps", "--json", "-s")
    old, new = run(*args, "ring:streams=ordered,credit=1MB"), run(*args, "ring:connections=ordered-pairs,credit=1MB")
    fair = run(*args, "ring:credit=1MB")
    assert old.returncode == new.returncode == 0
    assert json.loads(old.stdout)["iteration_time_s"] == json.loads(new.stdout)["iteration_time_s"]
    assert json.loads(new.stdout)["iteration_time_s"] != json.loads(fair.stdout)["iteration_time_s"]
    both = run(*args, "ring:connections=shared,streams=ordered")
    assert both.returncode == 2
    assert both.stderr.strip() == "tensorwire: error: strategy.connections: given twice (streams is its old name)"


def test_busiest_links_in_natural_order() -> None:
    p = run("simulate", "--model", "vgg16", "-n", "32", "-b", "25Gbps", "-s", "ring", "--json")
    import tensorwire as tw

    r = tw.simulate(tw.load_model("vgg16"), tw.Cluster(workers=32, bandwidth="25Gbps"), "ring")
    assert [n for n, _ in r.busiest_links(3)] == ["h0->sw", "h1->sw", "h2->sw"]
    assert p.returncode == 0


def test_report_without_plotly_suggests_what_works_from_a_checkout() -> None:
    from tensorwire.report.cli import PLOTLY_HINT

    assert "pip install -e '.[report]'" in PLOTLY_HINT and "make build" in PLOTLY_HINT
    assert "tensorwire[report]" not in PLOTLY_HINT
    assert "pip install" in (Path(__file__).parents[3] / "Makefile").read_text().split("build: ")[1].split("\n\n")[
        0
    ].replace("plotly", "pip install plotly")


def test_trace_says_where_and_how_big_and_is_bounded_by_trace_workers(tmp_path: Path) -> None:
    sizes = {}
    for n in ("1", "16"):
        path = tmp_path / f"t{n}.json"
        p = run(
            "simulate",
            "--model",
            "resnet50",
            "-n",
            "16",
            "-b",
            "25Gbps",
            "-s",
            "ring",
            "--trace",
            str(path),
            "--trace-workers",
            n,
        )
        assert p.returncode == 0, p.stderr
        line = p.stderr.strip()
        assert line.startswith(f"tensorwire: wrote {path}: ") and "MB" in line and "events" in line
        events = json.loads(path.read_text())["traceEvents"]
        assert f"{len(events):,} events" in line
        sizes[n] = len(events)
        workers = {e["tid"] // 2 for e in events if e.get("pid") == 1 and "tid" in e}
        assert workers <= set(range(int(n)))
        links = {e["args"]["name"] for e in events if e.get("pid") == 2 and e.get("name") == "thread_name"}
        assert links and all(int(x.split("->")[0 if x.startswith("h") else 1][1:]) < int(n) for x in links), links
    assert sizes["1"] < sizes["16"]


def test_import_trace_warns_when_the_traced_step_and_the_simulation_disagree(tmp_path: Path) -> None:
    p = run(
        "import-trace",
        str(DATA / "ddp_tiny_rank0.json.gz"),
        str(DATA / "ddp_tiny_rank1.json.gz"),
        "--out",
        str(tmp_path / "job.json"),
    )
    assert p.returncode == 0, p.stderr
    warning = p.stderr.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith("tensorwire: warning: ")
    assert "20.331 ms" in warning[0] and "0.840 ms" in warning[0] and "Gloo" in warning[0]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.builds(lambda a, i, b, j: f"{a}{i}->{b}{j}", st.sampled_from(["h", "leaf", "spine", "sw"]),
                  st.integers(0, 30), st.sampled_from(["h", "leaf", "spine", "sw"]), st.integers(0, 30)),
        st.sampled_from([0.0, 0.25, 0.5, 0.999, 1.0]),
        max_size=60,
    ),
    st.integers(0, 70),
)  # fmt: skip
def test_busiest_links_are_the_full_sorts_first_k(util: dict[str, float], k: int) -> None:
    # The selection by the k-th largest value (a fabric of millions of links took 6 s to sort
    # by name) gives exactly what sorting every link gives, ties in natural name order.
    import dataclasses

    from tensorwire.result import _natural

    r = dataclasses.replace(_small_result(), link_utilization=util)
    assert r.busiest_links(k) == sorted(util.items(), key=lambda kv: (-kv[1], _natural(kv[0])))[:k]


@functools.lru_cache(maxsize=None)
def _small_result() -> Any:
    import tensorwire as tw

    return tw.simulate(tw.Workload.collective("allreduce:1KiB"), tw.Cluster(2, "10Gbps"), "ring")


def test_a_gpu_other_than_the_rail_nodes_is_run_and_said_once() -> None:
    # A what-if or a slip: V100 compute on a DGX H100 rail runs, with one warning line after
    # the result; the node's own GPU (or no --gpu) says nothing.
    args = ("simulate", "-m", "llama3_8b", "-n", "16", "--topology", "rail:node=dgx-h100", "-s", "ddp", "--json")
    other = run(*args, "--gpu", "v100")
    assert other.returncode == 0, other.stderr
    warned = [line for line in other.stderr.splitlines() if "warning" in line]
    assert len(warned) == 1 and "whose GPUs are h100" in warned[0] and "--gpu v100" in warned[0], other.stderr
    same = run(*args, "--gpu", "h100")
    assert "warning" not in same.stderr and json.loads(same.stdout) == json.loads(run(*args).stdout)
    assert json.loads(other.stdout)["iteration_time_s"] > json.loads(same.stdout)["iteration_time_s"]


def test_a_nic_rate_past_the_pcie_path_warns_where_nccl_times_the_run() -> None:
    # NCCL's model runs a DGX H100's 400G NICs at the GPUs' PCIe Gen5 path (48 GB/s), so
    # 800 Gbit/s changes nothing under ddp: said once; a flow-level strategy sees the rate.
    args = ("simulate", "-m", "llama3_8b", "-n", "16", "--topology", "rail:node=dgx-h100", "--json")
    fast = run(*args, "-s", "ddp", "-b", "800Gbps")
    assert fast.returncode == 0, fast.stderr
    (line,) = [x for x in fast.stderr.splitlines() if "warning" in x]
    assert "--bandwidth 800 Gbps" in line and "48 GB/s" in line
    base = run(*args, "-s", "ddp", "-b", "400Gbps")
    assert "warning" not in base.stderr
    assert json.loads(fast.stdout)["iteration_time_s"] == json.loads(base.stdout)["iteration_time_s"]
    flows = run(*args, "-s", "hierarchical", "-b", "800Gbps")
    assert flows.returncode == 0 and "warning" not in flows.stderr, flows.stderr


def test_notes_follow_a_command_that_succeeds_and_a_refusal_is_one_line(tmp_path: Path) -> None:
    # compare's "not compared: multitree ..." note came before the error that then refused a
    # missing workload file: two lines. Notes now follow the output of a command that succeeds.
    missing = run("compare", "--workload", str(tmp_path / "job.json"), "-n", "8", "-b", "25Gbps")
    assert missing.returncode == 2 and len(missing.stderr.splitlines()) == 1, missing.stderr
    ok = run("compare", "-m", "resnet50", "-n", "8", "-b", "25Gbps", "-s", "ring,multitree,ps", "--latency", "5us")
    assert ok.returncode == 2  # multitree named on a star is refused, not noted
    shown = run("compare", "-m", "resnet50", "-n", "8", "-b", "25Gbps")
    assert shown.returncode == 0 and shown.stderr.splitlines()[-1].startswith(
        "tensorwire: note: not compared: multitree"
    )
