"""Jobs run by ``run_local`` in the tree all-reduce tests (importable by spawned processes).

Each job returns a list of failures (strings) instead of asserting in the child, so the
test shows every mismatch with its rank, group, size and dtype.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from tensorwire import InputError
from tensorwire.gputopo import Topology
from tensorwire.torch.tree_allreduce import TreeAllReduce, TreeAllReduceState, tree_allreduce, tree_allreduce_hook

SIZES = (0, 1, 7, 1000, 12345)
DTYPES = (torch.float32, torch.float64, torch.int64)
#: Lowered so that 1000 and 12345 elements take the multi-tree path.
BOUND = 1000


def _values(rank: int, n: int, dtype: torch.dtype, salt: int) -> torch.Tensor:
    """Integer values: sums are exact in every dtype, so results must be equal, not close."""
    g = torch.Generator().manual_seed(10_007 * rank + 31 * n + salt)
    return torch.randint(-1000, 1000, (n,), generator=g).to(dtype)


def _compare(label: str, got: torch.Tensor, want: torch.Tensor, out: list[str]) -> None:
    if not torch.equal(got, want):
        bad = (got != want).nonzero().flatten()[:3].tolist()
        out.append(f"{label}: differs at {bad}: {got.flatten()[bad].tolist()} != {want.flatten()[bad].tolist()}")


def _groups(world: int) -> list[tuple[str, list[int]]]:
    """Every size from 2 to world as ranks 0..k-1, plus one scattered group."""
    groups = [(f"ranks 0-{k - 1}", list(range(k))) for k in range(2, world + 1)]
    if world >= 7:
        groups.append(("ranks 1,3,6", [1, 3, 6]))
    return groups


def equals_all_reduce(rank: int, world: int) -> list[str]:
    """tree_allreduce == all_reduce for groups of 2..world processes, sizes, dtypes, tree counts."""
    failures: list[str] = []
    base = Topology.preset("p3.16xlarge")
    for name, ranks in _groups(world):
        group = dist.new_group(ranks)  # every rank takes part in creating every group
        if rank not in ranks:
            continue
        k = len(ranks)
        members = dist.get_process_group_ranks(group)
        topo = base.subset(members) if k > 2 else Topology.uniform(k)
        salt = 0
        for n in SIZES:
            for dtype in DTYPES:
                for trees in (0, 3) if n >= BOUND else (0,):
                    salt += 1
                    x = _values(rank, n, dtype, salt)
                    want = x.clone()
                    dist.all_reduce(want, group=group)
                    back = tree_allreduce(x, topo, group, array_bound=BOUND, trees=trees)
                    if back is not x:
                        failures.append(f"{name}: tree_allreduce did not return its argument")
                    _compare(f"rank {rank} {name} n={n} {dtype} trees={trees}", x, want, failures)
    return failures


def default_group_and_shapes(rank: int, world: int) -> list[str]:
    """The default group (None), the default threshold, a 2-D non-contiguous tensor, random
    floats (close to all_reduce; identical on every rank), and bad input."""
    failures: list[str] = []
    topo = Topology.preset("p3.16xlarge").subset(range(world))
    # Default array bound (10^7): one tree.
    x = _values(rank, 12345, torch.float32, 1)
    want = x.clone()
    dist.all_reduce(want)
    _compare(f"rank {rank} default group", tree_allreduce(x, topo), want, failures)
    # Non-contiguous (transposed) 2-D tensor, multi-tree.
    m = _values(rank, 37 * 11, torch.float64, 2).view(37, 11).t()
    want = m.clone()
    dist.all_reduce(want)
    tree_allreduce(m, topo, array_bound=10)
    _compare(f"rank {rank} transposed", m, want, failures)
    # Random floats: close to all_reduce (another order of additions), and the same bits everywhere.
    g = torch.Generator().manual_seed(rank)
    r = torch.randn(4099, generator=g, dtype=torch.float32)
    want = r.clone()
    dist.all_reduce(want)
    tree_allreduce(r, topo, array_bound=100)
    if not torch.allclose(r, want, rtol=1e-5, atol=1e-5):
        failures.append(f"rank {rank} random floats: max error {(r - want).abs().max().item()}")
    gathered = [torch.empty_like(r) for _ in range(world)]
    dist.all_gather(gathered, r)
    if not all(torch.equal(gathered[0], t) for t in gathered):
        failures.append(f"rank {rank}: ranks hold different bits")
    # A topology of the wrong size is refused before any message is sent.
    try:
        tree_allreduce(torch.zeros(3), Topology.uniform(world + 1))
        failures.append("a topology with one GPU more than processes was accepted")
    except InputError as e:
        if e.args[0] != "topology":
            failures.append(f"wrong field for a topology of the wrong size: {e.args}")
    return failures


def _train(rank: int, world: int, mode: str, steps: int = 3) -> list[torch.Tensor]:
    """A small model trained with DDP; ``mode``: ``default`` (DDP's all-reduce) or ``hook``."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(13, 290), torch.nn.ReLU(), torch.nn.Linear(290, 5))
    # Small buckets (after DDP rebuilds them at the end of step 1): several in flight per step.
    ddp = DDP(model, bucket_cap_mb=0.005)
    state = None
    if mode == "hook":
        state = TreeAllReduceState(Topology.preset("p3.16xlarge").subset(range(world)), array_bound=100)
        ddp.register_comm_hook(state, tree_allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        x, y = torch.randn(8, 13, generator=g), torch.randn(8, 5, generator=g)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    if state is not None:
        assert state.buckets > steps, f"{state.buckets} buckets in {steps} steps"
        state.close()
    return [p.detach().clone() for p in model.parameters()]


def ddp_hook_matches_default(rank: int, world: int) -> list[str]:
    failures: list[str] = []
    want = _train(rank, world, "default")
    got = _train(rank, world, "hook")
    for i, (a, b) in enumerate(zip(got, want)):
        if not torch.allclose(a, b, rtol=1e-5, atol=1e-6):
            failures.append(
                f"rank {rank} parameter {i}: hook differs from DDP's all-reduce by {(a - b).abs().max().item():.2e}"
            )
    return failures


def transport_averages(rank: int, world: int) -> list[str]:
    """The scheduler transport: several groups in flight, single and fused pieces."""
    failures: list[str] = []
    t = TreeAllReduce(Topology.uniform(world), array_bound=50)
    groups = []
    for i, sizes in enumerate([(5,), (3, 40, 1), (200,), (17, 17)]):
        pieces = [_values(rank, n, torch.float64, 100 * i + j) for j, n in enumerate(sizes)]
        want = [p.clone() for p in pieces]
        for w in want:
            dist.all_reduce(w)
            w.div_(world)
        groups.append((t.start(pieces), pieces, want))
    for i, (pending, pieces, want) in enumerate(groups):
        pending.wait()
        for j, (p, w) in enumerate(zip(pieces, want)):
            _compare(f"rank {rank} group {i} piece {j}", p, w, failures)
    t.close()
    return failures


def run_all(rank: int, world: int, names: list[str]) -> dict[str, Any]:
    jobs = {
        "equals_all_reduce": equals_all_reduce,
        "default_group_and_shapes": default_group_and_shapes,
        "ddp_hook_matches_default": ddp_hook_matches_default,
        "transport_averages": transport_averages,
    }
    return {name: jobs[name](rank, world) for name in names}
