"""Ring all-reduce of ResNet-50 on a rail-optimised fat-tree of DGX H100s, folded and not.

Prints, per case: GPUs, strategy, folded?, ranks simulated, flows, events, CPU seconds of
the simulate() call (best of --repeat), and the predicted iteration time. Each case runs in
a fresh process. The unfolded runs are skipped above --max-unfolded GPUs (8,192 unfolded
takes long). The numbers go into docs/benchmarks.md.
Run: `.venv/bin/python benchmarks/fabrics.py [--gpus 1024 8192] [--strategy ring]`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CASE = r"""
import json, sys, time
import tensorwire as tw
from tensorwire import _core
spec = json.loads(sys.argv[1])
w = tw.load_model(spec["model"])
cluster = tw.Cluster(spec["gpus"], "400Gbps", latency="1us", topology=spec["topology"])
cpu = float("inf")
for _ in range(spec["repeat"]):
    c0 = time.process_time()
    # No flow budget: the unfolded cases measure what a full simulation costs.
    r = tw.simulate(w, cluster, spec["strategy"], iterations=spec["iterations"], fold=spec["fold"], max_flows=None)
    cpu = min(cpu, time.process_time() - c0)
# Ranks simulated: from the core's raw report (not on Result).
raw = _core.Scenario(w.core, spec["gpus"], tw.Strategy(spec["strategy"]).core, cluster.bandwidth,
                     cluster.latency, cluster.core, iterations=1, allow_folding=spec["fold"]).simulate()
print(json.dumps({"cpu_seconds": cpu, "flows": r.flows, "events": r.events, "folded": r.folded,
                  "simulated_ranks": raw.simulated_ranks, "iteration_time_s": r.iteration_time_s}))
"""


def measure(spec: dict[str, object]) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", CASE, json.dumps(spec)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"case failed: {spec}\n{out.stderr}")
    return {**spec, **json.loads(out.stdout)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, nargs="+", default=[1024, 8192])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--strategy", default="ring")
    ap.add_argument("--topology", default="rail:node=dgx-h100,nodes_per_group=32")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--max-unfolded", type=int, default=1024, help="largest GPU count also run unfolded")
    args = ap.parse_args()
    print("| GPUs | strategy | folded | ranks simulated | flows | events | CPU s | iteration |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for gpus in args.gpus:
        for fold in (True, False):
            if not fold and gpus > args.max_unfolded:
                continue
            spec = {
                "model": args.model,
                "gpus": gpus,
                "strategy": args.strategy,
                "topology": args.topology,
                "iterations": args.iterations,
                "repeat": args.repeat,
                "fold": fold,
            }
            r = measure(spec)
            print(
                f"| {gpus} | {args.strategy} | {'yes' if r['folded'] else 'no'} | {r['simulated_ranks']} | "
                f"{r['flows']:,} | {r['events']:,} | {r['cpu_seconds']:.3f} | {r['iteration_time_s'] * 1e3:.2f} ms |",
                flush=True,
            )


if __name__ == "__main__":
    main()
