"""Simulator speed and memory benchmarks; the numbers go into docs/benchmarks.md.

Each case runs in a fresh Python process so that its peak memory (max RSS, from wait4)
is its own; times are the best of --repeat runs of the simulate() call alone (workload
loading excluded): wall-clock and CPU time of the process. The simulation is
single-threaded, so its CPU time is what it takes on an idle core; on a busy machine the
wall time is inflated by waiting for a core, the CPU time much less.
Run: `make bench` or `.venv/bin/python benchmarks/simulator.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

CASE = r"""
import json, sys, time
import tensorwire as tw
spec = json.loads(sys.argv[1])
w = tw.Workload.collective(spec["model"]) if spec["model"].startswith("allreduce:") else tw.load_model(spec["model"])
cluster = tw.Cluster(spec["workers"], spec["bandwidth"], topology=spec.get("topology", "star"))
best = cpu = float("inf")
for _ in range(spec["repeat"]):
    t0, c0 = time.perf_counter(), time.process_time()
    # No flow budget: the unfolded cases measure what a full simulation costs.
    r = tw.simulate(
        w, cluster, spec["strategy"], iterations=spec["iterations"], fold=spec.get("fold", True), max_flows=None
    )
    best = min(best, time.perf_counter() - t0)
    cpu = min(cpu, time.process_time() - c0)
print(json.dumps({"seconds": best, "cpu_seconds": cpu, "flows": r.flows, "events": r.events, "folded": r.folded,
                  "iteration_time_s": r.iteration_time_s}))
"""


def measure(spec: dict[str, object], case: str = CASE) -> dict[str, object]:
    """Runs ``case`` (a script reading the JSON spec from argv[1]) in its own process; adds
    its peak RSS (MB) to what it prints."""
    proc = subprocess.Popen([sys.executable, "-c", case, json.dumps(spec)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"case failed: {spec}")
    result = json.loads(out)
    result["max_rss_mb"] = usage.ru_maxrss / 1024
    return {**spec, **result}


def row(r: dict[str, object]) -> str:
    fold = "folded" if r["folded"] else "full"
    return (
        f"| {r['model']} | {r['strategy']} | {r.get('topology', 'star')} | {r['workers']} | {r['iterations']} | {fold} "
        f"| {float(r['seconds']) * 1e3:.1f} | {float(r['cpu_seconds']) * 1e3:.1f} | {float(r['max_rss_mb']):.0f} | {r['flows']:,} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the largest scaling points")
    args = ap.parse_args()
    base = {"bandwidth": "25Gbps", "repeat": args.repeat}
    targets = [
        ({"model": "resnet50", "strategy": "ring", "workers": 1024, "iterations": 1}, "< 1 s"),
        (
            {"model": "allreduce:1MiBx50", "strategy": "ring", "workers": 1024, "iterations": 1, "topology": "ring"},
            "< 2 s, < 500 MB",
        ),
        ({"model": "vgg16", "strategy": "ps", "workers": 32, "iterations": 3}, "< 50 ms"),
    ]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        "\n| model | strategy | topology | workers | iterations | mode | wall (ms) | CPU (ms) | max RSS (MB) | flows | target |"
    )
    print("|---|---|---|---:|---:|---|---:|---:|---:|---:|---|")
    for spec, target in targets:
        print(row(measure({**base, **spec})) + f" {target} |")
    print("\nScaling (ResNet-50, 25 Gbps, star, 1 iteration):\n")
    print("| model | strategy | topology | workers | iterations | mode | wall (ms) | CPU (ms) | max RSS (MB) | flows |")
    print("|---|---|---|---:|---:|---|---:|---:|---:|---:|")
    sizes = [8, 32, 128, 512, 2048, 8192]
    for n in sizes:
        print(row(measure({**base, "model": "resnet50", "strategy": "ring", "workers": n, "iterations": 1})))
    for n in [8, 32, 128]:
        print(
            row(
                measure(
                    {
                        **base,
                        "model": "resnet50",
                        "strategy": "ring",
                        "workers": n,
                        "iterations": 1,
                        "fold": False,
                        "repeat": 1,
                    }
                )
            )
        )
    for n in [8, 32, 128] if args.quick else [8, 32, 128, 256]:
        print(row(measure({**base, "model": "resnet50", "strategy": "ps", "workers": n, "iterations": 1, "repeat": 1})))


if __name__ == "__main__":
    main()
