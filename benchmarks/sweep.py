"""Sweep benchmark: 1,000 configurations of 32-worker models; the numbers go into docs/benchmarks.md.

5 models (the study's Inception-v3, VGG-16, ResNet-101, ResNet-200, and ResNet-50) x 10
bandwidths (1 to 100 Gbps) x 20 strategies and option variants, 3 iterations each, on
every local core: the target is under a minute on a 2-core machine. Prints the wall time,
the CPU time of all threads and processes (so that a busy machine shows as wall >> CPU /
cores), and the configurations per second. The default runs the chunks in a process pool,
as ``tensorwire sweep`` does; ``--executor thread`` uses threads instead, ``--executor both``
measures the two one after the other.

Run: `.venv/bin/python benchmarks/sweep.py` (add `--out results.parquet` to keep the rows).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time

from tensorwire.sweep import expand, run_configs, write_rows

MODELS = "inception_v3,vgg16,resnet101,resnet200,resnet50"
BANDWIDTHS = "1Gbps,2Gbps,5Gbps,10Gbps,20Gbps,25Gbps,40Gbps,50Gbps,80Gbps,100Gbps"
STRATEGIES = ",".join(
    [
        "ps",
        "ps+multicast",
        "ps+ina",
        "ps+multicast+ina",
        "ring",
        "ring+multicast",
        "butterfly",
        "recursive-doubling",
        "halving-doubling",
        "tree",
        "double-tree",
        "ps:num_ps=4,placement=balanced",
        "ps:distribution=block",
        "ps:pipeline=4MiB",
        "ps+multicast:barrier=false",
        "ring:partition=4MiB",
        "ring:fusion=64MiB",
        "ring:schedule=priority,partition=4MiB,credit=8MiB",
        "ring:compression=4",
        "halving-doubling:transport=rdma",
    ]
)


def cpu_seconds() -> float:
    """User + system CPU of this process (all threads) and of its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=None, help="parallel simulations (default: every core)")
    ap.add_argument("--executor", choices=["thread", "process", "both"], default="process")
    ap.add_argument("--workers", type=int, default=32)
    ap.add_argument("--out", default=None, help="also write the rows (.csv, .json or .parquet)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    configs = expand(MODELS, args.workers, BANDWIDTHS, STRATEGIES)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
        f"Python {platform.python_version()}"
    )
    print(
        f"grid: {len(configs)} configurations (5 models x 10 bandwidths x 20 strategies, {args.workers} workers), "
        f"validated in {time.perf_counter() - t0:.2f} s"
    )
    for executor in ["thread", "process"] if args.executor == "both" else [args.executor]:
        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        rows = run_configs(configs, jobs=args.jobs, executor=executor)  # type: ignore[arg-type]
        wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
        print(
            f"{executor:>7}: {len(rows)} configurations in {wall:.1f} s wall, {cpu:.1f} s CPU "
            f"({len(rows) / wall:.1f} configurations/s; target < 60 s)"
        )
    if args.out:
        write_rows(args.out, rows)


if __name__ == "__main__":
    main()
