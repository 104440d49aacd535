"""Small-message latency of tree_allreduce against Gloo's all_reduce, on loopback (127.0.0.1).

    .venv/bin/python benchmarks/tree_allreduce.py                       # 2, 4, 8 processes
    .venv/bin/python benchmarks/tree_allreduce.py --procs 2,4 --sizes 1,256 --iters 100 --json out.json

For each process count n, n processes (one intra-op thread each) join a Gloo group on
127.0.0.1; the topology is the first n GPUs of p3.16xlarge (weights do not change loopback
speed; they pick the tree). For each size, each method runs ``--iters`` times back to back
after a barrier, ``--repeats`` times; the time per call is the median over the repeats of
the slowest rank's mean. Methods:

- ``gloo``: ``dist.all_reduce`` (sum);
- ``tree``: ``tree_allreduce`` with one tree (the default below 10^7 elements);
- ``multitree``: ``tree_allreduce`` with one tree per GPU (``array_bound=0``), to show what
  slicing costs at these sizes.

The numbers recorded in docs/tree-allreduce.md come from this script; it prints the
command line, the machine's CPU count and torch's version with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

METHODS = ("gloo", "tree", "multitree")


def _bench(rank: int, world: int, sizes: list[int], iters: int, repeats: int, warmup: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    from tensorwire.gputopo import Topology
    from tensorwire.torch.tree_allreduce import tree_allreduce

    topo = Topology.preset("p3.16xlarge").subset(range(world)) if world <= 8 else Topology.uniform(world)
    ops = {
        "gloo": lambda x: dist.all_reduce(x),
        "tree": lambda x: tree_allreduce(x, topo),
        "multitree": lambda x: tree_allreduce(x, topo, array_bound=0),
    }
    out: dict[str, Any] = {}
    for n in sizes:
        x = torch.ones(n, dtype=torch.float32)
        for name, op in ops.items():
            for _ in range(warmup):
                op(x)
            means = []
            for _ in range(repeats):
                dist.barrier()
                t0 = time.perf_counter()
                for _ in range(iters):
                    op(x)
                mean = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
                dist.all_reduce(mean, op=dist.ReduceOp.MAX)  # the slowest rank's mean
                means.append(float(mean.item()))
            out[f"{n}/{name}"] = statistics.median(means)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", default="2,4,8", help="process counts, comma-separated (default 2,4,8)")
    ap.add_argument(
        "--sizes", default="1,256,16384", help="float32 elements per call (default 1,256,16384: 4 B, 1 KiB, 64 KiB)"
    )
    ap.add_argument("--iters", type=int, default=200, help="calls per timed run (default 200)")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per point; the median is kept (default 5)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed calls first (default 20)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here (JSON)")
    args = ap.parse_args(argv)
    procs = [int(p) for p in args.procs.split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]

    import torch
    from tensorwire.torch.launch import run_local

    print(f"$ {Path(sys.executable).name} {' '.join(sys.argv)}")
    print(
        f"# {platform.node() or 'host'}: {os.cpu_count()} CPUs, torch {torch.__version__}, Gloo on 127.0.0.1, 1 thread per process"
    )
    header = (
        f"{'procs':>5} {'elements':>9} {'bytes':>8} "
        + " ".join(f"{m + ' us':>12}" for m in METHODS)
        + f" {'tree/gloo':>10}"
    )
    print(header)
    rows = []
    for n in procs:
        results = run_local(
            _bench, n, sizes, args.iters, args.repeats, args.warmup, timeout_s=1800, env={"GLOO_SOCKET_IFNAME": "lo"}
        )
        r = results[0]
        for size in sizes:
            us = {m: r[f"{size}/{m}"] * 1e6 for m in METHODS}
            rows.append({"procs": n, "elements": size, "bytes": 4 * size, **{f"{m}_us": us[m] for m in METHODS}})
            print(
                f"{n:>5} {size:>9} {4 * size:>8} "
                + " ".join(f"{us[m]:>12.1f}" for m in METHODS)
                + f" {us['tree'] / us['gloo']:>10.2f}",
                flush=True,
            )
    if args.json is not None:
        from tensorwire.io import write_atomic

        meta = {"cpus": os.cpu_count(), "torch": torch.__version__, "iters": args.iters, "repeats": args.repeats}
        write_atomic(args.json, json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
