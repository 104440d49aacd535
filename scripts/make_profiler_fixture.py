"""Makes the PyTorch profiler trace fixtures of tests/unit/workloads/data/.

Trains a tiny MLP (Linear 32->64, ReLU, Linear 64->64, ReLU, Linear 64->10; 6,922 float32
parameters = 27,688 B) with DistributedDataParallel on Gloo, 2 processes on 127.0.0.1, under
torch.profiler for a few steps, and writes each rank's trace gzip-compressed. DDP's bucket cap
is tiny, so each Linear's gradients form one bucket: 3 all-reduces per step.

Two variants: ``ddp_tiny_rank{R}.json.gz`` with ``with_stack=True`` (nn.Module ranges: layers
from modules) and ``ddp_tiny_nostack_rank0.json.gz`` without (layers cut at collectives).
Python-frame events other than ``nn.Module: ...`` are dropped to keep the files small.

    /work/main/.venv/bin/python scripts/make_profiler_fixture.py [--out DIR] [--steps N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import socket
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

WORLD = 2
BATCH = 16


def model() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)
    )


def trim(path: Path, out: Path) -> None:
    """Drops Python frames other than module ranges (and flow arrows), then gzips."""
    data = json.loads(path.read_text())
    data["traceEvents"] = [
        e
        for e in data["traceEvents"]
        if not (e.get("cat") == "python_function" and not str(e.get("name", "")).startswith("nn.Module: "))
        and e.get("ph") not in ("s", "f")
    ]
    data.pop("traceName", None)
    out.write_bytes(gzip.compress(json.dumps(data, separators=(",", ":")).encode(), mtime=0))
    path.unlink()


def worker(rank: int, port: int, out: str, steps: int, stack: bool, stem: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        torch.manual_seed(0)
        ddp = DistributedDataParallel(model(), bucket_cap_mb=0.001)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
        x, y = torch.randn(BATCH, 32), torch.randint(0, 10, (BATCH,))
        schedule = torch.profiler.schedule(wait=1, warmup=1, active=steps)
        activities = [torch.profiler.ProfilerActivity.CPU]
        with torch.profiler.profile(
            activities=activities, schedule=schedule, record_shapes=True, with_stack=stack
        ) as prof:
            for _ in range(2 + steps):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(ddp(x), y).backward()
                opt.step()
                prof.step()
        raw = Path(out) / f".{stem}_rank{rank}.json"
        prof.export_chrome_trace(str(raw))
        if stack or rank == 0:
            trim(raw, Path(out) / f"{stem}_rank{rank}.json.gz")
        else:
            raw.unlink()
    finally:
        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).parents[1] / "tests/unit/workloads/data"))
    parser.add_argument("--steps", type=int, default=2, help="profiled (active) steps")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for stack, stem in ((True, "ddp_tiny"), (False, "ddp_tiny_nostack")):
        mp.spawn(worker, args=(free_port(), args.out, args.steps, stack, stem), nprocs=WORLD)
    for p in sorted(Path(args.out).glob("ddp_tiny*.json.gz")):
        print(f"{p}: {p.stat().st_size} B")


if __name__ == "__main__":
    main()
