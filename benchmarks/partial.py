"""Seed 002's partial all-reduce microbenchmark (section 6.1, Fig. 8 and 9) on this machine.

P local processes (Gloo on 127.0.0.1) are linearly skewed: in every iteration rank r
calls the collective r*d after a common start (by wall clock). Printed per P: the mean
latency over all ranks and iterations of solo, majority and blocking all-reduce
(torch.distributed.all_reduce), the speedup over blocking, and the number of active
processes (NAP). The numbers go into docs/partial-collectives.md.

Run: `.venv/bin/python benchmarks/partial.py` (the same as
`tensorwire bench partial -p 4,8,16 -d 10ms -i 100`). Seed 002 (32 processes, d = 1 ms on a
Cray Aries network) reports 53.32x for solo and 2.46x for majority, NAP about 1 and P/2.
"""

from __future__ import annotations

import argparse
import json
import os
import platform

from tensorwire.torch.partial.bench import microbenchmark
from tensorwire.units import to_seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", default="4,8,16", help="comma-separated process counts")
    ap.add_argument("--delay", default="10ms", help="skew step d")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--numel", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    delay = to_seconds(args.delay, "delay")
    results = []
    if not args.json:
        print(
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; d = {args.delay}, {args.iterations} iterations, {args.numel} float32"
        )
        print()
        print(
            "| P | solo latency | majority latency | blocking latency | solo speedup | majority speedup | NAP solo | NAP majority (draws) | late starts |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
    for p in (int(x) for x in args.processes.split(",")):
        r = microbenchmark(p, delay, iterations=args.iterations, numel=args.numel, seed=args.seed)
        results.append(r)
        if not args.json:
            ms = {k: f"{v * 1e3:.2f} ms" for k, v in r.latency_s.items()}
            late = ", ".join(f"{k} {v}" for k, v in r.overruns.items() if v) or "0"
            print(
                f"| {p} | {ms['solo']} | {ms['majority']} | {ms['blocking']} | {r.speedup('solo'):.1f}x | "
                f"{r.speedup('majority'):.2f}x | {r.nap['solo']:.2f} | {r.nap['majority']:.2f} ({r.expected_majority_nap:.2f}) | {late} |",
                flush=True,
            )
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=1))


if __name__ == "__main__":
    main()
