"""Functions the multi-process tests run in each rank (importable by spawned processes)."""

from __future__ import annotations

import random
import time
from typing import Any, Optional, Sequence


def partial_rounds(
    rank: int, world: int, kinds: Sequence[str], rounds: int, seed: int, max_sleep_s: float, stop_spread: int
) -> dict[str, Any]:
    """Calls a partial all-reduce up to ``rounds`` times per kind with random sleeps; ranks
    stop at different rounds (up to ``stop_spread`` early), then flush and close."""
    import torch
    from tensorwire.torch.partial import PartialAllreduce

    out: dict[str, Any] = {}
    for kind in kinds:
        pa = PartialAllreduce(3, kind, seed=seed, dtype=torch.float64, timeout_s=120.0)
        rng = random.Random(seed * 7919 + rank * 31 + len(kind))
        calls = rounds - rng.randint(0, stop_spread)
        seen: dict[int, tuple[tuple[float, ...], tuple[int, ...]]] = {}
        total = [0, 0, 0]
        start = time.perf_counter()
        for k in range(calls):
            if rng.random() < 0.25:
                time.sleep(rng.random() * max_sleep_s)
            t = [rank + 1, (k * (rank + 3)) % 11, rng.randint(-9, 9)]
            res = pa(torch.tensor(t, dtype=torch.float64))
            assert res.round == k, (res.round, k)
            seen[k] = (tuple(res.tensor.tolist()), res.contributors)
            total = [a + b for a, b in zip(total, t)]
        run_s = time.perf_counter() - start
        flushed = pa.flush()
        t0 = time.perf_counter()
        pa.close()
        out[kind] = {
            "seen": seen,
            "flush": (tuple(flushed.tensor.tolist()), flushed.round, flushed.contributors),
            "total": total,
            "calls": calls,
            "run_s": run_s,
            "close_s": time.perf_counter() - t0,
            "threads": pa.progress_threads,
        }
    return out


def eager_sgd(
    rank: int, world: int, kind: str, steps: int, staleness: Optional[int], slow_rank: Optional[int], seed: int
) -> dict[str, Any]:
    """EagerSGD with plain SGD (lr 1) on a parameter whose gradients are set by hand to
    integers: the final parameter must be minus the sum of every gradient over ``world``."""
    import torch
    from tensorwire.torch.partial import EagerSGD

    rng = random.Random(seed + rank)
    w = torch.nn.Parameter(torch.zeros(5, dtype=torch.float64))
    opt = EagerSGD(torch.optim.SGD([w], lr=1.0), kind, seed=seed, staleness=staleness, sync_every=97)
    total = torch.zeros(5, dtype=torch.float64)
    worst_ahead = 0
    for k in range(steps):
        if rank == slow_rank:
            time.sleep(0.004)
        elif rng.random() < 0.2:
            time.sleep(rng.random() * 0.002)
        g = torch.tensor([rank + 1, k % 5, rng.randint(-7, 7), 1, (rank * k) % 3], dtype=torch.float64)
        total += g
        w.grad = g.clone()
        worst_ahead = max(worst_ahead, opt.partial.rounds_run - k)
        opt.step()
    opt.finish()
    return {"w": w.detach().tolist(), "total": total.tolist(), "late": opt.late_steps, "ahead": worst_ahead}


def subgroup_close(rank: int, world: int, seed: int) -> dict[str, Any]:
    """Ranks 1..world-1 run a majority all-reduce on a subgroup, stop at different rounds
    and close without flushing; rank 0 stays out of it."""
    import torch
    import torch.distributed as dist
    from tensorwire.torch.partial import PartialAllreduce

    members = list(range(1, world))
    g = dist.new_group(members, use_local_synchronization=True) if rank in members else None
    if g is None:
        # Rank 0 hosts the rendezvous store the others still use to make their groups:
        # it leaves only when they are done (it used to return at once, and a loaded
        # machine saw the others' group creation fail with a broken pipe).
        dist.barrier()
        return {}
    pa = PartialAllreduce(2, "majority", group=g, seed=seed, timeout_s=60.0)
    rng = random.Random(seed + rank)
    calls = 100 + rng.randint(0, 60)
    contributors: set[int] = set()
    for _ in range(calls):
        time.sleep(rng.random() * 0.001)
        contributors.update(pa(torch.ones(2)).contributors)
    t0 = time.perf_counter()
    pa.close()
    close_s = time.perf_counter() - t0
    dist.barrier()  # with rank 0, which keeps the store up until every rank is done
    return {
        "ranks": pa.ranks,
        "rank": pa.rank,
        "contributors": sorted(contributors),
        "close_s": close_s,
        "calls": calls,
    }


def eager_sgd_finish_with_nothing_held(rank: int, world: int) -> dict[str, Any]:
    """Synchronous rounds (staleness 0, every rank calls every step) under momentum: nothing
    is left for finish() to apply; the parameters before and after it."""
    import torch
    from tensorwire.torch.partial import EagerSGD

    w = torch.nn.Parameter(torch.zeros(4))
    opt = EagerSGD(torch.optim.SGD([w], lr=0.05, momentum=0.9), "solo", staleness=0)
    for k in range(4):
        w.grad = torch.full((4,), float(k + 1))
        opt.step()
    before = w.detach().clone()
    res = opt.finish()
    return {"moved": float((w.detach() - before).abs().max()), "flushed": float(res.tensor.abs().max())}


def eager_sgd_start(rank: int, world: int, broadcast: bool) -> list[float]:
    """Each rank initialises its parameter differently (to its rank); returns it after
    EagerSGD's construction."""
    import torch
    from tensorwire.torch.partial import EagerSGD

    w = torch.nn.Parameter(torch.full((3,), float(rank)))
    opt = EagerSGD(torch.optim.SGD([w], lr=1.0), "solo", broadcast=broadcast)
    opt.finish(apply=False)
    return w.detach().tolist()


def partial_unlike(rank: int, world: int, field: str) -> str:
    """Ranks construct a PartialAllreduce with ``field`` differing on the last rank; returns
    the refusal each rank raised."""
    import torch
    from tensorwire import InputError
    from tensorwire.torch.partial import PartialAllreduce

    other = rank == world - 1
    kwargs: dict[str, Any] = {"numel": 8 if other and field == "numel" else 4}
    kwargs["kind"] = "majority" if other and field == "kind" else "solo"
    kwargs["dtype"] = torch.float64 if other and field == "dtype" else torch.float32
    try:
        PartialAllreduce(kwargs.pop("numel"), kwargs.pop("kind"), dtype=kwargs["dtype"]).close()
    except InputError as e:
        return str(e)
    return "accepted"
