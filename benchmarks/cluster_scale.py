"""Cluster-scale benchmarks: asymmetric scenarios beside their symmetric twins.

Each case runs in a fresh Python process (peak memory from wait4 is its own) and reports
the CPU time of the ``simulate()`` call alone, best of ``--repeat``; the machine is shared
and noisy, so every asymmetric case is timed next to its folded, symmetric twin in the same
run and the ratio is printed as well. Results go into docs/benchmarks.md by hand.

Run: ``.venv/bin/python benchmarks/cluster_scale.py`` (``--growth`` adds the 64-16,384
worker straggler table and writes docs/img/straggler_growth.png; ``--quick`` skips the
largest cases).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import simulator  # noqa: E402  (the sibling script's process runner)

CASE = r"""
import json, sys, time
import tensorwire as tw
spec = json.loads(sys.argv[1])
if spec.get("lanes") is False:
    # Message by message: the core's switch for lanes (folding stays on).
    from tensorwire import _core, api
    plain = _core.Scenario
    api._core.Scenario = lambda *a, **k: plain(*a, **{**k, "allow_lanes": False})
w = tw.load_model(spec["model"], **spec.get("model_args", {}))
cluster = tw.Cluster(spec["workers"], spec["bandwidth"], latency=spec.get("latency", "5us"), topology=spec.get("topology", "star"))
kwargs = {}
if spec.get("straggler"):
    slow = [1.0] * spec["workers"]
    slow[spec["workers"] // 2] = spec["straggler"]
    kwargs = {"stragglers": "fixed", "slowdowns": slow}
if spec.get("slow_link"):
    # One host link at a fraction of its rate from the start.
    target, rate = spec["slow_link"]
    kwargs["failures"] = [tw.Failure(target, at_s=0.0, rate=rate)]
cpu = wall = float("inf")
for _ in range(spec["repeat"]):
    t0, c0 = time.perf_counter(), time.process_time()
    # No flow budget: the unfolded cases measure what a full simulation costs.
    r = tw.simulate(
        w,
        cluster,
        spec["strategy"],
        iterations=spec.get("iterations", 1),
        fold=spec.get("fold", True),
        max_flows=None,
        **kwargs,
    )
    wall = min(wall, time.perf_counter() - t0)
    cpu = min(cpu, time.process_time() - c0)
print(json.dumps({"cpu_s": cpu, "wall_s": wall, "flows": r.flows, "events": r.events, "folded": r.folded,
                  "iteration_time_s": r.iteration_time_s}))
"""

# Two jobs sharing a fabric: `workers` each, spread over the leaves so that both cross the spine.
JOBS_CASE = r"""
import json, sys, time
import tensorwire as tw
spec = json.loads(sys.argv[1])
w = tw.load_model(spec["model"])
n = spec["workers"]
cluster = tw.Cluster(2 * n, spec["bandwidth"], latency="5us", topology=spec["topology"], rank_placement="spread")
jobs = [tw.Job("a", w, n, spec["strategy"]), tw.Job("b", w, n, spec["strategy"])]
cpu = wall = float("inf")
for _ in range(spec["repeat"]):
    t0, c0 = time.perf_counter(), time.process_time()
    a, b = tw.simulate_jobs(jobs, cluster, iterations=1, max_flows=None)
    wall = min(wall, time.perf_counter() - t0)
    cpu = min(cpu, time.process_time() - c0)
print(json.dumps({"cpu_s": cpu, "wall_s": wall, "flows": a.flows + b.flows, "events": a.events + b.events,
                  "folded": False, "iteration_time_s": a.iteration_time_s}))
"""


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs one case in its own process (benchmarks/simulator.py's runner); adds its peak RSS (MB)."""
    return simulator.measure(spec, CASE)


def label(r: dict[str, Any]) -> str:
    extra = f", {r['straggler']}x straggler" if r.get("straggler") else ""
    if r.get("slow_link"):
        extra += f", {r['slow_link'][0]} at {r['slow_link'][1]:g} of its rate"
    if r.get("lanes") is False:
        extra += ", message by message"
    return f"{r['model']} `{r['strategy']}` on {r['workers']:,} ({r.get('topology', 'star')}{extra})"


def row(r: dict[str, Any], twin: dict[str, Any] | None) -> str:
    ratio = f"{r['cpu_s'] / twin['cpu_s']:.2f}x" if twin else ""
    mode = ("folded" if r["folded"] else "full") + (", lanes" if r["events"] < r["flows"] else "")
    return (
        f"| {label(r)} | {mode} | {r['cpu_s'] * 1e3:,.0f} | {r['wall_s'] * 1e3:,.0f} "
        f"| {r['max_rss_mb']:.0f} | {r['flows']:,} | {r['iteration_time_s'] * 1e3:.2f} | {ratio} |"
    )


HEADER = (
    "| case | mode | CPU (ms) | wall (ms) | max RSS (MB) | flows | iteration (ms) | vs symmetric twin |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|"
)


def pairs(quick: bool) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """(case, its symmetric twin) for every cluster-scale target."""
    ring = {"model": "resnet50", "strategy": "ring", "bandwidth": "25Gbps"}
    vgg = {"model": "vgg16", "bandwidth": "25Gbps", "workers": 1024}
    leaf_spine = {**ring, "workers": 1024, "topology": "leaf-spine:hosts_per_leaf=32,spines=8,uplink=25Gbps"}
    cases: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
        ({**ring, "workers": 1024, "straggler": 2.0}, {**ring, "workers": 1024}),
        ({**vgg, "strategy": "ps:num_ps=16,placement=balanced"}, {**vgg, "strategy": "ring"}),
        ({**vgg, "strategy": "ps:num_ps=16,placement=sharded"}, {**vgg, "strategy": "ring"}),
        (leaf_spine, {**ring, "workers": 1024}),
        ({**leaf_spine, "lanes": False}, {**ring, "workers": 1024}),
        ({**ring, "workers": 1024, "slow_link": ["h500->sw", 0.5]}, {**ring, "workers": 1024}),
    ]
    if quick:
        cases = [c for c in cases if c[0].get("lanes") is not False]
    return cases


def llm_cases(quick: bool) -> list[dict[str, Any]]:
    """The LLM targets: one iteration of Llama-3 70B under fsdp on DGX H100 rail fabrics, its
    collectives as flows (`comm=flows`: the event engine at scale, hierarchical levels), and
    at 100,000 GPUs also as NCCL runs them (the default on a rail: timed by NCCL's model, a
    flat ring over every rank, which is latency-bound there: a different answer, not a
    faster engine)."""
    base = {
        "model": "llama3_70b",
        "model_args": {"gpu": "h100", "seq_len": 8192},
        "strategy": "fsdp:comm=flows",
        "bandwidth": "400Gbps",
        "latency": "1us",
        "topology": "rail:node=dgx-h100,nodes_per_group=32",
    }
    cases = [{**base, "workers": n} for n in (1024, 8192)]
    # 100,000 GPUs = 12,500 DGX H100 nodes: rail groups of 25 nodes (500 groups).
    big = {**base, "workers": 100_000, "topology": "rail:node=dgx-h100,nodes_per_group=25"}
    nccl = {**big, "strategy": "fsdp"}
    zero2 = {**big, "model": "resnet50", "model_args": {}, "strategy": "zero2:comm=flows"}
    return cases + ([big, nccl, zero2] if not quick else [])


def growth(quick: bool, repeat: int) -> list[dict[str, Any]]:
    """The straggler case from 64 to 16,384 workers."""
    sizes = [64, 256, 1024, 4096] + ([] if quick else [16384])
    ring = {"model": "resnet50", "strategy": "ring", "bandwidth": "25Gbps", "repeat": repeat}
    return [measure({**ring, "workers": n, "straggler": 2.0}) for n in sizes]


def plot(rows: list[dict[str, Any]], path: str) -> None:
    """CPU time and peak memory against workers (log-log) as a PNG, with matplotlib when it
    is installed (as the reproduction scripts do); otherwise only the table is printed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot: matplotlib is not installed; table only")
        return
    n = [r["workers"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    left.loglog(n, [r["cpu_s"] * 1e3 for r in rows], "o-")
    left.set(xlabel="workers", ylabel="CPU time (ms)", title="time")
    right.semilogx(n, [r["max_rss_mb"] for r in rows], "o-", color="tab:orange")
    right.set(xlabel="workers", ylabel="peak RSS (MB)", title="memory", ylim=(0, None))
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("ResNet-50 ring, one 2x straggler, one iteration (folded network, compute per worker)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--growth", action="store_true", help="also the 64-16,384 growth table and its plot")
    ap.add_argument("--plot", default="docs/img/straggler_growth.png")
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    print(HEADER)
    for case, twin in pairs(args.quick):
        t = measure({**twin, "repeat": args.repeat}) if twin else None
        r = measure({**case, "repeat": args.repeat})
        if t:
            print(row(t, None))
        print(row(r, t))
    print("\nLLM (Llama-3 70B, fsdp, DGX H100 rail fabrics):\n\n" + HEADER)
    for case in llm_cases(args.quick):
        print(row(measure({**case, "repeat": args.repeat}), None))
    print("\nTwo jobs sharing a 4:1 leaf-spine (spread placement; never folded, no lanes):\n\n" + HEADER)
    for n in (64, 128):
        spec = {
            "model": "resnet50",
            "strategy": "ring",
            "bandwidth": "25Gbps",
            "workers": n,
            "repeat": args.repeat,
            "topology": "leaf-spine:hosts_per_leaf=32,spines=8,uplink=25Gbps",
        }
        print(row(simulator.measure(spec, JOBS_CASE), None).replace(f"on {n:,} (", f"on 2 x {n:,} (", 1))
    if args.growth:
        rows = growth(args.quick, args.repeat)
        print("\n" + HEADER)
        for r in rows:
            print(row(r, None))
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
