"""Speed of the NCCL strategies at GPU-cluster scale (the project's speed targets).

Three cases, each timed end to end in a fresh process (wall time of the command, Python
start-up included), best of ``--repeat``:

- ``nccl`` all-reduce of 1 GiB on 8,192 H100 (``rail:node=dgx-h100``): target <= 1 s;
- Llama-3 70B under ``ddp`` on 1,024 H100: target <= 1 s;
- ``compare --model llama3_70b`` on 1,024 H100 (its default strategies): target <= 3 s.

NCCL's collectives are timed in closed form (``crate::nccl::choose``, once per size) and
folded to one rank, so none of these starts a flow. Results go into docs/benchmarks.md by
hand. Run: ``.venv/bin/python benchmarks/nccl_speed.py``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

TW = [sys.executable, "-m", "tensorwire"]
RAIL = "rail:node=dgx-h100"
CASES: list[tuple[str, list[str], float]] = [
    (
        "nccl all-reduce 1 GiB, 8,192 H100",
        ["simulate", "--collective", "allreduce:1GiB", "-n", "8192", "--topology", RAIL, "-s", "nccl"],
        1.0,
    ),
    (
        "ddp Llama-3 70B, 1,024 H100",
        ["simulate", "-m", "llama3_70b", "-n", "1024", "--topology", RAIL, "-s", "ddp"],
        1.0,
    ),
    ("compare Llama-3 70B, 1,024 H100", ["compare", "-m", "llama3_70b", "-n", "1024", "--topology", RAIL], 3.0),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"| case | wall s (best of {args.repeat}) | target s |")
    print("|---|---:|---:|")
    for name, argv, target in CASES:
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            done = subprocess.run([*TW, *argv], capture_output=True, text=True)
            best = min(best, time.perf_counter() - t0)
            if done.returncode != 0:
                sys.exit(f"{name}: exit {done.returncode}: {done.stderr.strip()}")
        print(f"| {name} | {best:.2f} | {target:g} |")


if __name__ == "__main__":
    main()
