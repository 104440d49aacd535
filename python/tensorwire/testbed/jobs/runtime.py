"""Runtime jobs: the runtime's :class:`~tensorwire.torch.ScheduledDataParallel` on the testbed.

The same strategy spec the simulator predicts is run by the runtime (``tensorwire.torch``)
instead of the testbed's own ``ring`` job, so its scheduler modes are validated
end to end: leader decisions sent to the followers, the core's scheduler, Gloo
all-reduces on a group of their own, per-parameter optimiser steps, forward passes that
wait per layer. The spec selects the mode (docs/runtime.md, "Modes"):

===============================================  ==========================================
spec                                             runtime
===============================================  ==========================================
``ring[:partition=P][,credit=C]``                ``mode="fifo"`` (one all-reduce at a time
                                                 unless a credit is given)
``ring:fusion=F[,cycle=T]``                      ``mode="fusion"``, ``fusion_bytes=F``,
                                                 ``fusion_cycle_s=T`` (default 5 ms)
``ring:schedule=priority,partition=P,credit=C``  ``mode="priority"``
===============================================  ==========================================

The model is :func:`tensorwire.torch.emulate.emulated` of the job's workload (real float32
parameters of the workload's sizes; compute slept on one device stream per process).
With the job's probe, :func:`probe_dispatch` measures what the runtime adds to each
collective (the simulator's ``dispatch`` option) before and after training; the mean is
used. Completion of iteration ``k`` on a rank: when every parameter of ``k`` is updated (the
wrapper's ``on_synchronized``) or its backward pass ended, whichever is later, as in the
``ring`` job.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from tensorwire.testbed.jobs.context import Context
from tensorwire.torch.tasks import SchedulerConfig, runtime_strategy

#: Dispatch probe: tensors (one layer each, 2N x 16 floats, no compute), iterations.
DISPATCH_PROBE_TENSORS = 32
DISPATCH_PROBE_ITERATIONS = 12


def runtime_config(spec: str) -> SchedulerConfig:
    """The runtime's scheduler settings for a spec, from the core; refuses a spec the runtime
    would not run (it would be predicted but not run): :func:`tensorwire.torch.tasks.runtime_strategy`
    on the all-reduce transport.

    >>> c = runtime_config("ring:schedule=priority,partition=1MiB,credit=2MiB")
    >>> c.mode, c.partition_bytes, c.credit_bytes
    ('priority', 1048576, 2097152)
    >>> c = runtime_config("ring:fusion=4MiB")
    >>> c.mode, c.fusion_bytes, c.fusion_cycle_s
    ('fusion', 4194304, 0.005)
    >>> runtime_config("ring").mode
    'fifo'
    """
    return runtime_strategy(spec)


def probe_dispatch(ctx: Context, **kwargs: Any) -> dict[str, float]:
    """Measures the runtime's cost to start a collective (every rank must call it).

    A model of :data:`DISPATCH_PROBE_TENSORS` tiny tensors and no compute, trained in
    ``fifo`` mode, runs one all-reduce per tensor, one at a time on the runtime's stream;
    the same tensors are then all-reduced with plain blocking ``all_reduce`` calls. The
    difference per tensor is what the runtime adds to each collective (the leader's
    decision reaching every follower, thread hand-offs, the update): the simulator's
    ``dispatch`` (time per collective, overlapping the collective before it on the stream
    and pacing the stream: ``validate.runtime_prediction_spec``).
    Returns ``runtime_per_group_s``, ``allreduce_s`` and ``dispatch_s`` (their difference,
    at least 0), medians over iterations after one warm-up.
    """
    import statistics

    import torch
    import torch.distributed as dist

    from tensorwire.torch.data_parallel import ScheduledDataParallel
    from tensorwire.torch.emulate import emulated
    from tensorwire.workload import Layer, Tensor, Workload

    numel = 2 * ctx.spec.world_size * 16
    k = DISPATCH_PROBE_TENSORS
    tiny = Workload(
        "dispatch-probe", 1, tuple(Layer(f"l{i}", 0.0, 0.0, (Tensor(f"t{i}", 4 * numel),)) for i in range(k))
    )
    model = emulated(tiny)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    x = torch.zeros(1, 16)
    per_group = []
    with ScheduledDataParallel(model, opt, mode="fifo", timeout_s=ctx.spec.timeout_s, **kwargs) as sdp:
        dist.barrier()
        for it in range(DISPATCH_PROBE_ITERATIONS + 1):
            opt.zero_grad(set_to_none=True)
            loss = sdp(x).sum()
            t = time.perf_counter()  # from the first gradient to the last update
            loss.backward()
            opt.step()
            sdp.synchronize()
            if it:
                per_group.append((time.perf_counter() - t) / k)
    bufs = [torch.zeros(numel) for _ in range(k)]
    plain = []
    dist.barrier()
    for it in range(DISPATCH_PROBE_ITERATIONS + 1):
        t = time.perf_counter()
        for b in bufs:
            dist.all_reduce(b)
        if it:
            plain.append((time.perf_counter() - t) / k)
    runtime_s, allreduce_s = statistics.median(per_group), statistics.median(plain)
    return {
        "runtime_per_group_s": runtime_s,
        "allreduce_s": allreduce_s,
        "dispatch_s": max(0.0, runtime_s - allreduce_s),
    }


def run_runtime(ctx: Context) -> None:
    """Runs the job on this rank with the runtime; every rank is a worker."""
    import torch
    import torch.distributed as dist

    from tensorwire.torch.data_parallel import ScheduledDataParallel
    from tensorwire.torch.emulate import emulated

    spec = ctx.spec  # run_job refused user-space delay and options the runtime would not run
    config = runtime_config(spec.strategy)  # refused before launching; checked again here
    n = spec.iterations
    synced = [0.0] * n
    backward_end = [0.0] * n

    def on_synchronized(it: int) -> None:
        if it < n:
            synced[it] = time.perf_counter()

    before = probe_dispatch(ctx) if spec.probe else None
    model = emulated(ctx.workload)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.zeros(1, 16)
    with ScheduledDataParallel(
        model, opt, strategy=spec.strategy, timeout_s=spec.timeout_s, on_synchronized=on_synchronized
    ) as sdp:
        dist.barrier()
        model.stream.waited()
        for k in range(n):
            opt.zero_grad(set_to_none=True)
            sdp(x).sum().backward()
            opt.step()
            backward_end[k] = time.perf_counter()
        sdp.synchronize()
        ctx.notes["groups_started"] = sdp.groups_started
    if before is not None:
        # Before and after training, averaged (as the transport probe): the cost drifts.
        after = probe_dispatch(ctx)
        ctx.notes["dispatch_probe"] = {
            **{k: (before[k] + after[k]) / 2 for k in before},
            "before": before,
            "after": after,
        }
    ctx.completions = [max(b, s) for b, s in zip(backward_end, synced)]
    ctx.notes["compute_busy_s"] = model.stream.busy_s
    ctx.notes["backward_end"] = backward_end
    ctx.notes["runtime"] = {"strategy": spec.strategy, **dataclasses.asdict(config)}
