"""Li et al. 2019's experiments on this machine: the partial all-reduce microbenchmark (section
6.1, Fig. 8 and 9) and hyperplane regression with injected delays (section 6.2.1).

Both start local processes joined by Gloo on 127.0.0.1 (:func:`run_local`). Skew is
injected by wall clock, which every process on one machine shares: iteration ``i`` starts
at ``t0 + i * period`` for everyone and rank ``r`` calls at ``r * delay_s`` after that, so
the skew does not depend on how promptly a barrier releases each process.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Optional, Sequence

from tensorwire._core import InputError

BENCH_KINDS = ("solo", "majority", "blocking")
TRAIN_MODES = ("sync", "solo", "majority")


@dataclass
class BenchResult:
    """Mean latency (seconds, over every rank and timed iteration) and mean number of
    active processes per kind, for ``processes`` ranks skewed by ``delay_s`` each."""

    processes: int
    delay_s: float
    iterations: int
    numel: int
    latency_s: dict[str, float]
    nap: dict[str, float]
    #: Per kind: iterations (summed over ranks) in which a rank was still busy when its
    #: next call was due (the skew of that iteration was not exact).
    overruns: dict[str, int] = field(default_factory=dict)
    #: Per-rank mean latency (seconds) per kind.
    latency_by_rank_s: dict[str, list[float]] = field(default_factory=dict)
    warmup: int = 0
    seed: int = 0

    @property
    def expected_majority_nap(self) -> float:
        """Mean NAP of majority rounds if exactly the ranks up to each round's designated
        initiator arrived in time (the timed rounds' draws; about (P + 1) / 2)."""
        from tensorwire.torch.partial.collective import majority_initiator

        first = self.warmup
        return statistics.fmean(
            majority_initiator(self.seed, k, self.processes) + 1 for k in range(first, first + self.iterations)
        )

    def speedup(self, kind: str) -> float:
        """Mean latency of the blocking all-reduce over that of ``kind``."""
        return self.latency_s["blocking"] / self.latency_s[kind] if self.latency_s.get(kind) else math.nan

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (with the speedups)."""
        d = asdict(self)
        if "blocking" in self.latency_s:
            d["speedup"] = {k: self.speedup(k) for k in self.latency_s if k != "blocking"}
        d["expected_majority_nap"] = self.expected_majority_nap
        return d


def _now() -> float:
    return time.time()


def _sleep_until(t: float) -> bool:
    """Sleeps until wall-clock time ``t``; False if ``t`` had passed already."""
    left = t - _now()
    if left <= 0:
        return False
    time.sleep(left)
    return True


def _start_time(margin_s: float) -> float:
    """A wall-clock time ``margin_s`` from now, agreed by every rank (rank 0's)."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([_now() + margin_s], dtype=torch.float64)
    dist.broadcast(t, 0)
    return float(t.item())


def _bench_worker(
    rank: int,
    world: int,
    delay_s: float,
    iterations: int,
    warmup: int,
    numel: int,
    kinds: Sequence[str],
    seed: int,
    period_s: float,
    wait_s: float,
) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    from tensorwire.torch.partial.collective import PartialAllreduce

    x = torch.ones(numel)
    out: dict[str, Any] = {"overruns": {}}
    for kind in kinds:
        pa = PartialAllreduce(numel, kind, seed=seed, timeout_s=wait_s) if kind != "blocking" else None
        t0 = _start_time(0.5)
        lat: list[float] = []
        nap: list[int] = []
        out["overruns"][kind] = 0
        for it in range(warmup + iterations):
            if not _sleep_until(t0 + it * period_s + rank * delay_s):
                out["overruns"][kind] += 1
            start = time.perf_counter()
            if pa is not None:
                n = pa(x).nap
            else:
                dist.all_reduce(x.clone())
                n = world
            took = time.perf_counter() - start
            if it >= warmup:
                lat.append(took)
                nap.append(n)
        if pa is not None:
            pa.flush()
            pa.close()
        dist.barrier()
        out[kind] = (lat, nap)
    return out


def microbenchmark(
    processes: int,
    delay_s: float,
    *,
    iterations: int = 50,
    warmup: int = 3,
    numel: int = 1024,
    kinds: Sequence[str] = BENCH_KINDS,
    seed: int = 0,
    period_s: Optional[float] = None,
    timeout_s: float = 600.0,
) -> BenchResult:
    """Li et al. 2019's microbenchmark (Fig. 8): ``processes`` ranks, rank ``r`` calls the
    collective ``r * delay_s`` seconds after a common start, ``iterations`` times (after
    ``warmup`` untimed ones), for each kind (``solo``, ``majority``: partial all-reduce of
    ``numel`` float32; ``blocking``: ``torch.distributed.all_reduce``). ``period_s``:
    time between iteration starts (default ``1.25 (processes - 1) delay_s + 0.1`` s, which
    must exceed the slowest iteration)."""
    from tensorwire.torch.launch import run_local

    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 2:
        raise InputError("processes", f"{processes!r} must be an integer >= 2")
    if not delay_s >= 0:
        raise InputError("delay", f"{delay_s!r} must be >= 0 seconds")
    if iterations < 1:
        raise InputError("iterations", f"{iterations!r} must be >= 1")
    bad = [k for k in kinds if k not in BENCH_KINDS]
    if bad or not kinds:
        raise InputError("kinds", f"{bad or kinds!r}: choose among {', '.join(BENCH_KINDS)}")
    period = period_s if period_s is not None else 1.25 * (processes - 1) * delay_s + 0.1
    wait_s = max(10.0, min(120.0, timeout_s / 4))
    per_rank = run_local(
        _bench_worker,
        processes,
        delay_s,
        iterations,
        warmup,
        numel,
        list(kinds),
        seed,
        period,
        wait_s,
        timeout_s=timeout_s,
    )
    latency: dict[str, float] = {}
    by_rank: dict[str, list[float]] = {}
    naps: dict[str, float] = {}
    for kind in kinds:
        lat = [t for r in per_rank for t in r[kind][0]]
        latency[kind] = statistics.fmean(lat)
        by_rank[kind] = [statistics.fmean(r[kind][0]) for r in per_rank]
        naps[kind] = statistics.fmean(per_rank[0][kind][1])  # the same on every rank
    overruns = {k: sum(r["overruns"][k] for r in per_rank) for k in kinds}
    return BenchResult(processes, delay_s, iterations, numel, latency, naps, overruns, by_rank, warmup, seed)


# --- hyperplane regression (seed 002, section 6.2.1) ------------------------------------


@dataclass
class HyperplaneConfig:
    """The scaled-down hyperplane regression: ``dim``-dimensional ``y = a.x + b + noise``,
    ``samples`` training points split over the ranks, ``batch`` points per rank and step,
    ``epochs`` passes, SGD with learning rate ``lr``. Each step computes for real and then
    sleeps ``compute_s`` seconds (the device time of a bigger model: this one takes a
    millisecond on a CPU); at every step one rank drawn at random (the same draw on every
    rank) sleeps ``delay_s`` seconds more (the injected load imbalance)."""

    dim: int = 1024
    samples: int = 16384
    validation: int = 2048
    batch: int = 64
    epochs: int = 4
    lr: float = 0.05
    noise: float = 1.0
    compute_s: float = 0.05
    delay_s: float = 0.05
    seed: int = 0
    staleness: Optional[int] = None
    eval_every: int = 8


@dataclass
class HyperplaneResult:
    """One training run: ``trace`` is (seconds since start, step, validation MSE) as rank 0
    saw it (its model after that many steps; evaluation time excluded)."""

    mode: str
    processes: int
    steps: int
    wall_s: float
    final_loss: float
    trace: list[tuple[float, int, float]]
    late_fraction: float = 0.0

    @property
    def steps_per_s(self) -> float:
        """Training steps per second on rank 0."""
        return self.steps / self.wall_s

    def time_to(self, loss: float) -> float:
        """Seconds until the validation loss first reached ``loss`` (inf if never)."""
        return next((t for t, _, v in self.trace if v <= loss), math.inf)


def _hyperplane_worker(rank: int, world: int, mode: str, cfg: HyperplaneConfig) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    from tensorwire.torch.partial.eager import EagerSGD

    gen = torch.Generator().manual_seed(cfg.seed)
    a = torch.randn(cfg.dim, generator=gen)
    b = torch.randn(1, generator=gen)
    x = torch.randn(cfg.samples, cfg.dim, generator=gen)
    y = x @ a + b + cfg.noise * torch.randn(cfg.samples, generator=gen)
    xv = torch.randn(cfg.validation, cfg.dim, generator=gen)
    yv = xv @ a + b + cfg.noise * torch.randn(cfg.validation, generator=gen)
    shard = cfg.samples // world
    xs, ys = x[rank * shard : (rank + 1) * shard], y[rank * shard : (rank + 1) * shard]
    model = torch.nn.Linear(cfg.dim, 1)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    inner = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    opt: Any = inner if mode == "sync" else EagerSGD(inner, mode, seed=cfg.seed, staleness=cfg.staleness)
    victims = random.Random(cfg.seed)
    steps_per_epoch = shard // cfg.batch
    steps = steps_per_epoch * cfg.epochs
    loss_fn = torch.nn.MSELoss()

    def val_loss() -> float:
        with torch.no_grad():
            return float(loss_fn(model(xv).squeeze(1), yv))

    trace: list[tuple[float, int, float]] = []
    t0 = _start_time(0.5)
    _sleep_until(t0)
    start = time.perf_counter()
    eval_s = 0.0
    for step in range(steps):
        i = step % steps_per_epoch
        time.sleep(cfg.compute_s + (cfg.delay_s if victims.randrange(world) == rank else 0.0))
        opt.zero_grad()
        loss = loss_fn(
            model(xs[i * cfg.batch : (i + 1) * cfg.batch]).squeeze(1), ys[i * cfg.batch : (i + 1) * cfg.batch]
        )
        loss.backward()
        if mode == "sync":
            for p in model.parameters():
                assert p.grad is not None
                dist.all_reduce(p.grad)
                p.grad.div_(world)
        opt.step()
        if rank == 0 and (step % cfg.eval_every == 0 or step == steps - 1):
            e = time.perf_counter()
            trace.append((e - start - eval_s, step + 1, val_loss()))
            eval_s += time.perf_counter() - e
    wall = time.perf_counter() - start - eval_s
    late = 0.0
    if mode != "sync":
        late = opt.late_steps / steps
        opt.finish()
    dist.barrier()
    return {"trace": trace, "wall": wall, "final": val_loss(), "steps": steps, "late": late}


def hyperplane(
    processes: int, mode: str, config: Optional[HyperplaneConfig] = None, *, timeout_s: float = 900.0
) -> HyperplaneResult:
    """Trains the hyperplane regression on ``processes`` local ranks with ``mode``
    (``sync``: all-reduce every step; ``solo`` or ``majority``: :class:`EagerSGD`)."""
    from tensorwire.torch.launch import run_local

    if mode not in TRAIN_MODES:
        raise InputError("mode", f"{mode!r}: choose among {', '.join(TRAIN_MODES)}")
    cfg = config or HyperplaneConfig()
    out = run_local(_hyperplane_worker, processes, mode, cfg, timeout_s=timeout_s)
    r0 = out[0]
    late = statistics.fmean(o["late"] for o in out)
    return HyperplaneResult(
        mode, processes, r0["steps"], r0["wall"], r0["final"], [tuple(t) for t in r0["trace"]], late
    )


__all__ = [
    "BENCH_KINDS",
    "BenchResult",
    "HyperplaneConfig",
    "HyperplaneResult",
    "TRAIN_MODES",
    "hyperplane",
    "microbenchmark",
]
