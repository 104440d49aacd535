"""Seed 003 (topology-aware tree reduction in MXNet) on a simulated p3.16xlarge.

Figure 2's experiment: push-pull of K keys of S floats before a wait, for the ring
(NCCL's algorithm, here in rank order), a single topology-aware tree and several trees;
and Figure 7's message-size sweep (1M to 10M floats), which shows where the tree and ring
cross over. One machine, 8 GPUs, NVLink/PCIe rates from seed 003 (50/25/10 GB/s), 2 us
per hop. Prints markdown tables; no randomness.

    .venv/bin/python benchmarks/reproductions/seed003_trees.py
"""

from __future__ import annotations

import tensorwire as tw

MACHINE = tw.Cluster(8, "100Gbps", latency="2us", topology="nodes:machine=p3.16xlarge")
STRATEGIES = ("ring", "tree", "multitree", "halving-doubling")


def push_pull_ms(keys: int, floats: int, strategy: str) -> float:
    """Time for `keys` back-to-back all-reduces of `floats` fp32 values, ms."""
    w = tw.Workload.collective(f"allreduce:{4 * floats}Bx{keys}")
    return tw.simulate(w, MACHINE, strategy, iterations=2).iteration_time_s * 1e3


def main() -> None:
    print("### Push-pull of many small keys against few large keys (seed 003 Figure 2)\n")
    print("| keys x floats | " + " | ".join(STRATEGIES) + " | fastest |")
    print("|---|" + "---:|" * len(STRATEGIES) + "---|")
    for keys, floats in (
        (150, 64_000),
        (150, 500_000),
        (50, 500_000),
        (32, 4_000_000),
        (8, 10_000_000),
        (1, 10_000_000),
    ):
        times = {s: push_pull_ms(keys, floats, s) for s in STRATEGIES}
        best = min(times, key=times.__getitem__)
        print(f"| {keys} x {floats:,} | " + " | ".join(f"{times[s]:.2f}" for s in STRATEGIES) + f" | {best} |")
    print("\n### One all-reduce, 1M to 10M floats (seed 003 Figure 7): time in ms and tree speedup over ring\n")
    print("| floats | ring | tree | multitree | ring / tree | ring / multitree |")
    print("|---:|---:|---:|---:|---:|---:|")
    for millions in (1, 2, 4, 6, 8, 10):
        t = {s: push_pull_ms(1, millions * 1_000_000, s) for s in ("ring", "tree", "multitree")}
        print(
            f"| {millions}M | {t['ring']:.3f} | {t['tree']:.3f} | {t['multitree']:.3f} | "
            f"{t['ring'] / t['tree']:.2f}x | {t['ring'] / t['multitree']:.2f}x |"
        )


if __name__ == "__main__":
    main()
