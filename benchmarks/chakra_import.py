"""Importing Chakra traces: time against the number of all-reduce nodes.

A chain of N all-reduce nodes, each after a compute node (the shape that made the importer
quadratic: every gradient all-reduce was matched to its layer by a scan of all tensors).
Prints the CPU time of ``from_chakra`` (best of ``--repeat``) per size; results go into
docs/benchmarks.md by hand.

Run: ``.venv/bin/python benchmarks/chakra_import.py [--sizes 5000,10000,20000]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "workloads"))
from chakra_writer import node, write  # noqa: E402  (the test suite's writer)
from tensorwire.workloads.chakra import from_chakra  # noqa: E402


def chain(n: int) -> list[bytes]:
    """A forward node, then n (backward compute, all-reduce) pairs in one dependency chain."""
    nodes = [node(0, "forward", 4, 100)]
    for i in range(n):
        back, coll = 2 * i + 1, 2 * i + 2
        nodes.append(node(back, f"layer{i}Backward", 4, 10, ctrl_deps=[back - 1]))
        nodes.append(node(coll, f"allreduce{i}", 7, 5, ctrl_deps=[back], attrs={"comm_type": 0, "comm_size": 4096}))
    return nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="5000,10000,20000")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"chain{n}.et"
            write(path, chain(n))
            best = float("inf")
            for _ in range(args.repeat):
                start = time.process_time()
                w = from_chakra(path)
                best = min(best, time.process_time() - start)
            print(
                f"{n:>7} all-reduces: {best:7.2f} s CPU ({len(w.tensors)} tensors, {len(w.layers)} layers)", flush=True
            )


if __name__ == "__main__":
    main()
