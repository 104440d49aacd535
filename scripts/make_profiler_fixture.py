"""Makes the PyTorch profiler trace fixtures of tests/unit/workloads/data/.

Trains a tiny MLP (Linear 32->64, ReLU, Linear 64->64, ReLU, Linear 64->10; 6,922 float32
parameters = 27,688 B) with DistributedDataParallel on Gloo, 2 processes on 127.0.0.1, under
torch.profiler for a few steps, and writes each rank's trace gzip-compressed. DDP's bucket cap
is tiny, so each Linear's gradients form one bucket: 3 all-reduces per step.

Variants (``--variants``; all by default):

- ``ddp_tiny_rank{R}.json.gz``: ``with_stack=True`` (nn.Module ranges: layers from modules);
- ``ddp_tiny_nostack_rank0.json.gz``: without (layers cut at collectives);
- ``lm_tiny_rank0.json.gz``: an Embedding(50, 8) then Linear(8, 10) on a batch of 4 sequences
  of 6 token ids (the batch is the indices' leading dimension, not the vocabulary);
- ``fsdp2_tiny_rank0.json.gz``: the MLP under FSDP2 (``fully_shard`` on each Linear and the
  root): all-gathers (Gloo records each rank's half), reduce-scatters (run as
  ``gloo:all_reduce`` of the whole buffer);
- ``bf16_tiny_rank0.json.gz``: the MLP in bfloat16 under DDP (2-byte gradients);
- ``accum_tiny_rank0.json.gz``: DDP with gradient accumulation, 3 micro-batches a step, the
  first two under ``no_sync()``.

The variants after the first two keep rank 0's trace only. Python-frame events other than
``nn.Module: ...`` are dropped to keep the files small. Made with torch 2.15 (CPU).

    /work/main/.venv/bin/python scripts/make_profiler_fixture.py [--out DIR] [--steps N] [--variants ...]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import socket
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

WORLD = 2
BATCH = 16
#: Micro-batches a step of the ``accum_tiny`` variant (the first ones under no_sync()).
MICRO_BATCHES = 3


def model() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)
    )


class TinyLM(torch.nn.Module):
    """An Embedding first, as every language model starts."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(50, 8)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.emb(ids)).flatten(0, 1)


def ddp(module: torch.nn.Module) -> torch.nn.Module:
    return DistributedDataParallel(module, bucket_cap_mb=0.001)


def fsdp2(module: torch.nn.Module) -> torch.nn.Module:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (WORLD,))
    for layer in module:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(module, mesh=mesh)
    return module


Step = Callable[[], None]


def training(stem: str) -> tuple[torch.nn.Module, Callable[[torch.nn.Module], Step]]:
    """The model of a variant and how one training step runs it (forward, loss, backward;
    the optimizer is made by the worker)."""
    x, y = torch.randn(BATCH, 32), torch.randint(0, 10, (BATCH,))
    loss = torch.nn.functional.cross_entropy
    if stem == "lm_tiny":
        ids, targets = torch.randint(0, 50, (4, 6)), torch.randint(0, 10, (4 * 6,))
        return ddp(TinyLM()), lambda m: lambda: loss(m(ids), targets).backward()
    if stem == "fsdp2_tiny":
        return fsdp2(model()), lambda m: lambda: loss(m(x), y).backward()
    if stem == "bf16_tiny":
        xb = x.to(torch.bfloat16)
        return ddp(model().to(torch.bfloat16)), lambda m: lambda: loss(m(xb).float(), y).backward()
    if stem == "accum_tiny":

        def accumulate(m: torch.nn.Module) -> Step:
            def step() -> None:
                for micro in range(MICRO_BATCHES):
                    if micro < MICRO_BATCHES - 1:
                        with m.no_sync():  # type: ignore[operator]
                            loss(m(x), y).backward()
                    else:
                        loss(m(x), y).backward()

            return step

        return ddp(model()), accumulate
    return ddp(model()), lambda m: lambda: loss(m(x), y).backward()


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
        module, step_of = training(stem)
        train = step_of(module)
        opt = torch.optim.SGD(module.parameters(), lr=0.01)
        schedule = torch.profiler.schedule(wait=1, warmup=1, active=steps)
        activities = [torch.profiler.ProfilerActivity.CPU]
        with torch.profiler.profile(
            activities=activities, schedule=schedule, record_shapes=True, with_stack=stack
        ) as prof:
            for _ in range(2 + steps):
                opt.zero_grad()
                train()
                opt.step()
                prof.step()
        raw = Path(out) / f".{stem}_rank{rank}.json"
        prof.export_chrome_trace(str(raw))
        if stem == "ddp_tiny" or rank == 0:
            trim(raw, Path(out) / f"{stem}_rank{rank}.json.gz")
        else:
            raw.unlink()
    finally:
        dist.destroy_process_group()


#: The variants by file stem, and whether each records module ranges (``with_stack``).
VARIANTS = {
    "ddp_tiny": True,
    "ddp_tiny_nostack": False,
    "lm_tiny": True,
    "fsdp2_tiny": True,
    "bf16_tiny": True,
    "accum_tiny": True,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).parents[1] / "tests/unit/workloads/data"))
    parser.add_argument("--steps", type=int, default=2, help="profiled (active) steps")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for stem in args.variants:
        mp.spawn(worker, args=(free_port(), args.out, args.steps, VARIANTS[stem], stem), nprocs=WORLD)
    for p in sorted(Path(args.out).glob("*.json.gz")):
        print(f"{p}: {p.stat().st_size} B")


if __name__ == "__main__":
    main()
