"""Does a faster NIC ever make `nccl`'s all-reduce slower? A scan, not a test.

For each fabric, GPU count and buffer size it runs one all-reduce under ``nccl`` at NIC rates
from 1 to 800 Gbit/s and lists every step where the time rises, split by whether NCCL's
choice (algorithm and protocol) stayed the same. NCCL chooses by its own model and tensorwire
times the choice (`nccl/tuning.rs`, `nccl/pipeline.rs`): a rise with the same choice is a
defect of the time; a rise where the choice flips is NCCL's model and tensorwire's disagreeing
on which algorithm is faster. Results go into docs/collectives.md by hand.

Run: ``.venv/bin/python benchmarks/nccl_monotonicity.py [--fabrics nodes,rail:node=dgx-h100] [--top 10]``
(about a second).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import tensorwire as tw
from tensorwire.workload import Workload

FABRICS = ("nodes", "rail:node=dgx-h100", "rail:node=dgx-a100", "leaf-spine")
GPUS = (16, 32, 64)
SIZES = ("64KiB", "1MiB", "16MiB", "256MiB")
RATES_GBPS = (
    1,
    2,
    3,
    4,
    5,
    6,
    8,
    10,
    12,
    16,
    20,
    25,
    32,
    40,
    50,
    60,
    70,
    80,
    100,
    128,
    150,
    200,
    256,
    300,
    400,
    500,
    800,
)


@dataclass(frozen=True)
class Rise:
    """One step up the NIC rates where the all-reduce got slower."""

    fabric: str
    gpus: int
    size: str
    rates: tuple[int, int]  # Gbit/s before, after
    seconds: tuple[float, float]
    choices: tuple[str, str]  # "algorithm/protocol" before, after

    @property
    def ratio(self) -> float:
        return self.seconds[1] / self.seconds[0]

    def line(self) -> str:
        a, b = self.choices
        how = "same choice" if a == b else f"{a} -> {b}"
        return (
            f"+{(self.ratio - 1) * 100:5.1f}%  {self.fabric} n={self.gpus} {self.size}: "
            f"{self.rates[0]} -> {self.rates[1]} Gbit/s, {self.seconds[0] * 1e3:.4f} -> "
            f"{self.seconds[1] * 1e3:.4f} ms ({how})"
        )


def run(fabric: str, gpus: int, size: str, gbps: int) -> tuple[float, str]:
    """Seconds of one all-reduce and NCCL's choice for it."""
    res = tw.simulate(
        Workload.collective(f"allreduce:{size}"),
        tw.Cluster(gpus, bandwidth=f"{gbps}Gbps", topology=fabric),
        "nccl",
        iterations=1,
    )
    choice = res.nccl_choices[0]
    return res.iteration_time_s, f"{choice['algorithm']}/{choice['protocol']}"


def scan(fabrics: tuple[str, ...]) -> list[Rise]:
    """Every rise over the grid, largest first (a rise under 0.1% is rounding)."""
    rises = []
    for fabric in fabrics:
        for gpus in GPUS:
            for size in SIZES:
                prev = None
                for gbps in RATES_GBPS:
                    t, choice = run(fabric, gpus, size, gbps)
                    if prev is not None and t > prev[1] * 1.001:
                        rises.append(Rise(fabric, gpus, size, (prev[0], gbps), (prev[1], t), (prev[2], choice)))
                    prev = (gbps, t, choice)
    return sorted(rises, key=lambda r: -r.ratio)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fabrics", default=",".join(FABRICS))
    parser.add_argument("--top", type=int, default=10, help="rises listed of each kind")
    args = parser.parse_args()
    fabrics = tuple(args.fabrics.split(","))
    rises = scan(fabrics)
    steps = len(fabrics) * len(GPUS) * len(SIZES) * (len(RATES_GBPS) - 1)
    same = [r for r in rises if r.choices[0] == r.choices[1]]
    flips = [r for r in rises if r.choices[0] != r.choices[1]]
    print(
        f"{steps} steps up in NIC rate; {len(rises)} slower: {len(same)} with the same choice, {len(flips)} where it flips"
    )
    for title, group in (("same choice", same), ("choice flips", flips)):
        print(f"\n{title} (largest {min(args.top, len(group))}):")
        for r in group[: args.top]:
            print("  " + r.line())


if __name__ == "__main__":
    main()
