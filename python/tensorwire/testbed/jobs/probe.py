"""A transport probe that a job's own processes run just before training.

Gloo's per-message cost on the testbed depends on how busy the machine is, and that
changes from minute to minute when other work shares the cores. Measured by the job's own
processes, seconds before the training starts, it describes the conditions the job runs
under far better than a calibration taken earlier (:func:`tensorwire.testbed.calibrate`
takes the rates and the latency; :meth:`Calibration.with_probe` the overheads from here).

The job runs it before and after training and uses the mean of the two (see
:func:`combine`). Two measurements, medians of ``PROBE_REPS`` repetitions, in
about a second:

- ``allreduce_s``: all-reduces over the workers of 2N x 16 floats (every ring segment
  non-empty) and 4, 16 and 64 times that, by size in bytes (``PROBE_REPS / 2`` each);
- ``p2p_rtt_s``: a 4-byte send/recv ping-pong between rank 0 and the last rank (a server
  under ``ps``).
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Optional

from tensorwire.testbed.jobs.context import Context

PROBE_REPS = 30
#: All-reduce sizes: 2N x 16 floats times 1, 4, 16 and 64.
PROBE_SIZES = 4


def run_probe(ctx: Context) -> dict[str, Any]:
    """Runs the probe on every rank of the job (all must call it); rank 0 returns the results."""
    import torch
    import torch.distributed as dist

    workers, world, rank = ctx.spec.workers, ctx.spec.world_size, ctx.rank
    made = dist.new_group(list(range(workers))) if workers < world else None  # every rank must call it
    group = made if isinstance(made, dist.ProcessGroup) else None
    out: dict[str, Any] = {}
    if rank < workers and workers > 1:
        times: dict[str, float] = {}
        for k in range(PROBE_SIZES):
            buf = torch.zeros(2 * workers * 16 * 4**k)
            for _ in range(2):
                dist.all_reduce(buf, group=group)
            samples = []
            for _ in range(PROBE_REPS // 2):
                t = time.perf_counter()
                dist.all_reduce(buf, group=group)
                samples.append(time.perf_counter() - t)
            times[str(buf.numel() * 4)] = statistics.median(samples)
        out["allreduce_s"] = times
        out["allreduce_workers"] = workers
    dist.barrier()
    rtt = ping_pong_rtt_s(rank, world - 1, PROBE_REPS, warmup=3)
    if rtt is not None:
        out["p2p_rtt_s"] = rtt
    dist.barrier()
    return out


def ping_pong_rtt_s(rank: int, peer: int, reps: int, *, warmup: int, barrier_every: int = 0) -> Optional[float]:
    """Median round trip of a 4-byte send/recv ping-pong between rank 0 and ``peer`` over
    ``reps`` repetitions after ``warmup`` untimed ones (every rank calls it; ranks other than
    0 and ``peer`` only join the barriers). ``barrier_every``: a barrier of all ranks before
    every that many repetitions (0: none), so that a long run does not drift apart.
    Returns the median on rank 0, None elsewhere. Seconds."""
    import torch
    import torch.distributed as dist

    tiny = torch.zeros(1)
    rtts = []
    for i in range(reps + warmup):
        if barrier_every and i % barrier_every == 0:
            dist.barrier()
        t = time.perf_counter()
        if rank == 0:
            dist.send(tiny, peer)
            dist.recv(tiny, peer)
        elif rank == peer:
            dist.recv(tiny, 0)
            dist.send(tiny, 0)
        if i >= warmup:
            rtts.append(time.perf_counter() - t)
    return statistics.median(rtts) if rank == 0 else None


def combine(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The mean of two probes' timings for each measurement (other fields from ``before``),
    with both probes kept.

    Conditions drift during a job as well as before it (an 8-host all-reduce went from 5.5 ms
    before a job to 8.3 ms after it); the mean stands for the whole run. Keeping the
    smaller of the two instead under-predicted such runs by up to 20%.
    """
    out = dict(before)
    if "p2p_rtt_s" in before and "p2p_rtt_s" in after:
        out["p2p_rtt_s"] = (before["p2p_rtt_s"] + after["p2p_rtt_s"]) / 2
    if "allreduce_s" in before and "allreduce_s" in after:
        out["allreduce_s"] = {k: (v + after["allreduce_s"][k]) / 2 for k, v in before["allreduce_s"].items()}
    out["before"], out["after"] = before, after
    return out
