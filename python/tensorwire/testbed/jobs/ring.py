"""``ring``: data-parallel training with one all-reduce per gradient piece (DDP without buckets).

Each worker runs its emulated forward and backward passes on the main thread; as the
backward pass produces each layer's gradients, it hands their pieces to a communication
thread. That thread asks the core's :class:`tensorwire._core.Scheduler` (FIFO, one task in
flight: the simulator's ``ring`` settings) which group of pieces to start (one piece, or
several fused into one buffer when the scheduler fuses) and runs
``torch.distributed.all_reduce`` on it, one at a time and in production order on every
rank, as an NCCL stream would. Every rank makes the same decisions because every rank
sees its pieces become ready in the same order (the compute is emulated identically) and
FIFO releases them in that order whenever it polls. Policies whose decisions depend on
when a rank polls (``schedule=priority``, fusion cycles) would make ranks issue different
all-reduces, which Gloo aborts on; a credit releases several all-reduces at once, which
the simulator runs concurrently and this job one after another.
:func:`~tensorwire.testbed.jobs.launcher.run_job` refuses these options
(:meth:`~tensorwire.testbed.jobs.registry.JobStrategy.check`; the runtime runs them, its
leader deciding for every rank) and :func:`run_ring` refuses them again. The next forward
pass waits for the whole model (a global gate), as in DDP and the simulator.

Gloo's all-reduce on CPU tensors is a ring (reduce-scatter then all-gather, 2(N-1) steps
of S/N bytes), the algorithm the simulator models.

User-space delay: before each all-reduce the communication thread waits
``2(N-1) x 2 x delay`` seconds, the latency of the ring's 2(N-1) sequential steps over
two hops each.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Optional

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.testbed.jobs.context import Context
from tensorwire.torch.device_stream import DeviceStream


def scheduler_policy(spec: str) -> tuple[str, Optional[int], Optional[int]]:
    """The core's scheduler settings ``(policy, credit_bytes, max_tasks)`` for a spec: the
    simulator's own (for ``ring``: FIFO, one collective in flight).

    >>> scheduler_policy("ring")
    ('fifo', None, 1)
    """
    s = _core.Strategy(spec)
    return s.policy, s.credit_bytes, s.max_in_flight


def run_ring(ctx: Context, policy: Optional[tuple[str, Optional[int], Optional[int]]] = None) -> None:
    """Runs the job on this rank; every rank is a worker. ``policy`` is the scheduler's
    ``(policy, credit_bytes, max_tasks)`` (default: the core's for the job's spec,
    :func:`scheduler_policy`); :class:`InputError` on every rank, before any collective,
    unless it is FIFO without a credit (see the module documentation)."""
    import torch
    import torch.distributed as dist

    spec = ctx.spec
    n_iter = spec.iterations
    policy = policy or scheduler_policy(spec.strategy)
    if policy[0] != "fifo" or policy[1] is not None:
        # Every rank raises here, before any collective: no rank waits for a mismatched one.
        raise InputError(
            "strategy",
            f"the ring job runs FIFO without a credit (see the ring job's documentation), not {policy}",
        )
    grads = ctx.tensor_buffers()
    views = ctx.views(grads)
    tasks = ctx.tasks
    sched = _core.Scheduler(*policy)
    ready: queue.Queue[Optional[tuple[int, int]]] = queue.Queue()
    synced = [threading.Event() for _ in range(n_iter)]
    synced_at = [0.0] * n_iter
    step_latency = 2 * (spec.world_size - 1) * ctx.path_delay_s
    errors: list[BaseException] = []
    trace: list[tuple[int, list[int], float, float]] = []

    origin = time.perf_counter()

    def now_s() -> float:
        return time.perf_counter() - origin

    def notify(item: tuple[int, int]) -> None:
        k, tid = item
        sched.notify_ready(k, tid, tasks[tid].layer, tasks[tid].bytes, now_s())

    def all_reduce(group: list[tuple[int, int, int]]) -> None:
        """One all-reduce over the group's pieces (several: a fused buffer, copied back)."""
        if len(group) == 1:
            dist.all_reduce(views[group[0][1]])
            return
        parts = [views[tid] for _, tid, _ in group]
        fused = torch.cat(parts)
        dist.all_reduce(fused)
        offset = 0
        for part in parts:
            part.copy_(fused[offset : offset + part.numel()])
            offset += part.numel()

    def communicate() -> None:
        done = [0] * n_iter
        open_ = True
        try:
            while open_ or sched.waiting():
                groups = sched.poll(now_s())
                if not groups:
                    deadline = sched.next_deadline()  # a fusion buffer waiting for its cycle
                    try:
                        item = ready.get(timeout=None if deadline is None else max(0.0, deadline - now_s()))
                    except queue.Empty:
                        continue
                    if item is None:
                        open_ = False
                        continue
                    notify(item)
                for group in groups:
                    if step_latency > 0:
                        time.sleep(step_latency)
                    t0 = time.perf_counter()
                    all_reduce(group)
                    trace.append((group[0][0], [tid for _, tid, _ in group], t0, time.perf_counter()))
                    sched.notify_finish(sum(nbytes for _, _, nbytes in group))
                    for k, _, _ in group:
                        done[k] += 1
                        if done[k] == len(tasks):
                            synced_at[k] = time.perf_counter()
                            synced[k].set()
                while True:  # take in what became ready meanwhile
                    try:
                        item = ready.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        open_ = False
                        break
                    notify(item)
        except BaseException as e:  # surfaced by the main thread
            errors.append(e)
            for ev in synced:
                ev.set()

    comm = threading.Thread(target=communicate, name="ring-comm", daemon=True)
    comm.start()
    layers = ctx.workload.layers
    clock = DeviceStream(wait_threshold_s=None)  # waits are announced: waited()
    backward_end = [0.0] * n_iter
    dist.barrier()
    clock.waited()
    for k in range(n_iter):
        if k > 0 and not synced[k - 1].is_set():
            synced[k - 1].wait()
            clock.waited()
        if errors:
            raise errors[0]
        for layer in layers:
            clock.run(layer.forward_s)
        for li in range(len(layers) - 1, -1, -1):
            backward_end[k] = clock.run(layers[li].backward_s)
            for tid in ctx.release_order[li]:
                ready.put((k, tid))
    synced[n_iter - 1].wait()
    ready.put(None)
    comm.join()
    if errors:
        raise errors[0]
    ctx.completions = [max(b, s) for b, s in zip(backward_end, synced_at)]
    ctx.notes["compute_busy_s"] = clock.busy_s
    ctx.notes["backward_end"] = backward_end
    ctx.notes["trace"] = trace
