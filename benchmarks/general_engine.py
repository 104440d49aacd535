"""General (unfolded) engine benchmarks; the numbers go into docs/benchmarks.md.

Asymmetric scenarios (stragglers, oversubscribed fabrics, parameter servers) cannot be
folded, so the max-min flow model simulates every flow. These cases measure it: ResNet-50
`ring` with folding turned off, and VGG-16 with 16 parameter servers.

Each case runs in a fresh Python process; times are the best of --repeat runs of the
simulate() call alone: CPU time of the process (resource.getrusage, user + system) and
wall-clock time. The machine is shared, so CPU time is the number to compare.
With --baseline FILE (a JSON file written earlier by --save), ratios baseline/now are
printed beside each case.

Run: `PYTHONPATH=python .venv/bin/python benchmarks/general_engine.py [--save out.json] [--baseline before.json]`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

CASE = r"""
import json, resource, sys, time
import tensorwire as tw
spec = json.loads(sys.argv[1])
w = tw.load_model(spec["model"])
cluster = tw.Cluster(spec["workers"], spec["bandwidth"], topology=spec.get("topology", "star"))
def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
best = best_cpu = float("inf")
for _ in range(spec["repeat"]):
    t0, c0 = time.perf_counter(), cpu()
    # No flow budget: the unfolded cases measure what a full simulation costs.
    r = tw.simulate(
        w, cluster, spec["strategy"], iterations=spec["iterations"], fold=spec.get("fold", True), max_flows=None
    )
    best = min(best, time.perf_counter() - t0)
    best_cpu = min(best_cpu, cpu() - c0)
print(json.dumps({"seconds": best, "cpu_seconds": best_cpu, "flows": r.flows, "events": r.events,
                  "folded": r.folded, "iteration_time_s": r.iteration_time_s, "completions_s": list(r.completions_s)}))
"""

CASES = [
    {"model": "resnet50", "strategy": "ring", "workers": 32, "iterations": 1, "fold": False},
    {"model": "resnet50", "strategy": "ring", "workers": 128, "iterations": 1, "fold": False},
    {"model": "resnet50", "strategy": "ring", "workers": 256, "iterations": 1, "fold": False},
    {"model": "vgg16", "strategy": "ps:num_ps=16", "workers": 256, "iterations": 1},
    {"model": "vgg16", "strategy": "ps:num_ps=16", "workers": 1024, "iterations": 1},
    # Digit-folded over the 32 leaves only: 32 ranks simulated, 10.5 million flows.
    {
        "model": "resnet50",
        "strategy": "ring",
        "workers": 1024,
        "iterations": 1,
        "topology": "leaf-spine:hosts_per_leaf=32,spines=8,uplink=25Gbps",
    },
]


def key(spec: dict[str, object]) -> str:
    return (
        f"{spec['model']}/{spec['strategy']}/{spec['workers']}/{spec['iterations']}/{spec.get('fold', True)}"
        f"/{spec.get('topology', 'star')}"
    )


def measure(spec: dict[str, object]) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", CASE, json.dumps(spec)], stdout=subprocess.PIPE, text=True, check=True)
    return {**spec, **json.loads(out.stdout)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="skip the 256- and 1,024-worker cases")
    ap.add_argument("--save", help="write the results (JSON) here")
    ap.add_argument("--baseline", help="JSON written by an earlier --save: print ratios against it")
    args = ap.parse_args()
    before = {}
    if args.baseline:
        with open(args.baseline) as f:
            before = {key(r): r for r in json.load(f)}
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        "\n| model | strategy | workers | topology | mode | flows | wall (s) | CPU (s) | us/flow (CPU) | CPU before/now | same result |"
    )
    print("|---|---|---:|---|---|---:|---:|---:|---:|---:|---|")
    results = []
    for spec in CASES:
        if args.quick and spec["workers"] in (256, 1024):
            continue
        r = measure({"bandwidth": "25Gbps", "repeat": args.repeat, **spec})
        results.append(r)
        old = before.get(key(r))
        ratio = same = ""
        if old:
            ratio = f"{old['cpu_seconds'] / r['cpu_seconds']:.1f}x"
            same = (
                "yes"
                if all(
                    abs(a - b) <= 1e-9 * max(abs(a), abs(b)) for a, b in zip(old["completions_s"], r["completions_s"])
                )
                and len(old["completions_s"]) == len(r["completions_s"])
                else "NO"
            )
        mode = "folded" if r["folded"] else "full"
        print(
            f"| {r['model']} | {r['strategy']} | {r['workers']} | {r.get('topology', 'star')} | {mode} | {r['flows']:,} | {r['seconds']:.3f} "
            f"| {r['cpu_seconds']:.3f} | {r['cpu_seconds'] / r['flows'] * 1e6:.2f} | {ratio} | {same} |",
            flush=True,
        )
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    if args.save:
        with open(args.save, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
