"""``ps``: a parameter server on hosts of its own, over torch.distributed point-to-point.

Mirrors the simulator's ``ps`` (crates/tensorwire-core/src/engine/ps.rs):

- ranks ``0..N-1`` are workers, ranks ``N..N+P-1`` the ``num_ps`` servers, each on its own
  host; tensor ``i`` lives on server ``i mod P`` (``placement=round-robin``) or on the
  least-loaded server so far (``balanced``); with ``sharded`` every tensor is cut into
  ``P`` even pieces and piece ``i`` lives on server ``i`` (the core's rule,
  ``_core.Strategy.ps_tasks``, as :class:`~tensorwire.testbed.jobs.context.Context` takes it);
- a worker sends (``isend``) each gradient piece to its server as soon as the backward pass
  produces it, with nothing held back (the core scheduler with no limits);
- a server sums a piece once every worker's copy has arrived. With the global barrier it
  sends nothing back until every piece of the iteration is summed; without it, each piece
  goes back as soon as it is summed;
- each server sends one message at a time, in the distribution order: ``round-robin`` is piece-major (piece 0 to every worker, then piece 1, ...),
  ``block`` worker-major; server ``j`` visits the workers in the engine's round
  (``_core.Strategy.ps_worker_round``: from worker ``j N / P``), so that equal pieces from
  several servers (``sharded``) do not all go to one worker's downlink at once;
- a worker's forward pass of layer ``l`` waits only for layer ``l``'s parameters (the
  forward pass pipelines with the distribution phase).

A server hands its next message to Gloo when the previous one would have left its link at
the link's payload rate (Gloo reports a send complete once the kernel holds it, far too
early to pace anything by), so the messages cross the link one after another.

Every receive is posted before its message can be sent (servers re-post as soon as a
buffer is summed, workers before their backward pass), so no send waits for a receiver.

User-space delay: a message counts as arrived ``2 x delay`` seconds after Gloo delivered it
(the server's barrier and each worker's per-layer gate wait that much longer).
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from typing import Any, Optional

from tensorwire import _core
from tensorwire.testbed.jobs.compute import sleep_until
from tensorwire.testbed.jobs.context import Context
from tensorwire.testbed.shaping import PAYLOAD_EFFICIENCY
from tensorwire.torch.device_stream import DeviceStream

#: Messages a server has handed to Gloo and not yet seen complete (see ``send_loop``).
SEND_WINDOW = 4


def _tags(ctx: Context) -> tuple[int, int]:
    """Tag bases: pushes use ``task``, pulls ``len(tasks) + task``."""
    return 0, len(ctx.tasks)


def run_ps(ctx: Context) -> None:
    """Runs this rank's part: a worker below ``workers``, a server from there on."""
    if ctx.rank < ctx.spec.workers:
        _worker(ctx)
    else:
        _server(ctx)


def _worker(ctx: Context) -> None:
    import torch.distributed as dist

    spec = ctx.spec
    n_iter, workers = spec.iterations, spec.workers
    server_of = ctx.server_of_task
    push_tag, pull_tag = _tags(ctx)
    grads = ctx.views(ctx.tensor_buffers())
    params = ctx.views(ctx.tensor_buffers())
    tasks = ctx.tasks
    layers = ctx.workload.layers
    sched = _core.Scheduler("fifo", None, None)  # the simulator's ps: no limits
    # Per iteration and layer: set when the layer's parameters of that iteration are back.
    layer_ready = [[threading.Event() for _ in layers] for _ in range(n_iter)]
    synced_at = [0.0] * n_iter
    pulls: queue.Queue[Optional[tuple[int, list[tuple[int, Any]]]]] = queue.Queue()
    errors: list[BaseException] = []
    pieces_per_layer = [len(r) for r in ctx.release_order]

    delayed: queue.Queue[Optional[tuple[int, int, float]]] = queue.Queue()

    def fail(e: BaseException) -> None:
        errors.append(e)
        for row in layer_ready:
            for ev in row:
                ev.set()

    left = [list(pieces_per_layer) for _ in range(n_iter)]

    def arrive(k: int, tid: int) -> None:
        """A pull counts as arrived: open its layer's gate when the layer is complete."""
        layer = tasks[tid].layer
        left[k][layer] -= 1
        if left[k][layer] == 0:
            layer_ready[k][layer].set()
        if not any(left[k]):
            synced_at[k] = time.perf_counter()
            for li, p in enumerate(pieces_per_layer):
                if p == 0:
                    layer_ready[k][li].set()

    def watch() -> None:
        """Waits for each iteration's pulls in order and notes when each completed."""
        try:
            while (item := pulls.get()) is not None:
                k, works = item
                for tid, work in works:
                    work.wait()
                    if ctx.path_delay_s > 0:
                        delayed.put((k, tid, time.perf_counter() + ctx.path_delay_s))
                    else:
                        arrive(k, tid)
        except BaseException as e:
            fail(e)
        delayed.put(None)

    def deliver() -> None:
        """User-space delay: each pull counts as arrived 2 x delay after it completed."""
        try:
            while (item := delayed.get()) is not None:
                k, tid, at = item
                sleep_until(at)
                arrive(k, tid)
        except BaseException as e:
            fail(e)

    watcher = threading.Thread(target=watch, name="ps-pulls", daemon=True)
    watcher.start()
    deliverer = threading.Thread(target=deliver, name="ps-delay", daemon=True)
    if ctx.path_delay_s > 0:
        deliverer.start()
    clock = DeviceStream(wait_threshold_s=None)  # waits are announced: waited()
    origin = time.perf_counter()
    backward_end = [0.0] * n_iter
    push_works: list[Any] = []
    dist.barrier()
    clock.waited()
    for k in range(n_iter):
        for li, layer in enumerate(layers):
            if k > 0 and not layer_ready[k - 1][li].is_set():
                layer_ready[k - 1][li].wait()
                clock.waited()
            if errors:
                raise errors[0]
            clock.run(layer.forward_s)
        # Post this iteration's pulls before any push, so the servers never wait for them.
        works = [
            (tid, dist.irecv(params[tid], src=workers + server_of[tid], tag=pull_tag + tid))
            for tid in range(len(tasks))
        ]
        pulls.put((k, works))
        for w in push_works:
            w.wait()
        push_works.clear()
        for li in range(len(layers) - 1, -1, -1):
            backward_end[k] = clock.run(layers[li].backward_s)
            now = time.perf_counter() - origin
            for tid in ctx.release_order[li]:
                sched.notify_ready(k, tid, tasks[tid].layer, tasks[tid].bytes, now)
            for group in sched.poll(now):
                for _, tid, _ in group:  # each piece is its own message to its server
                    push_works.append(dist.isend(grads[tid], dst=workers + server_of[tid], tag=push_tag + tid))
                sched.notify_finish(sum(nbytes for _, _, nbytes in group))  # no limits: credit is irrelevant
    for row in layer_ready[n_iter - 1]:
        row.wait()
    if errors:
        raise errors[0]
    for w in push_works:
        w.wait()
    pulls.put(None)
    watcher.join()
    if deliverer.is_alive():
        deliverer.join()
    if errors:
        raise errors[0]
    ctx.completions = [max(b, s) for b, s in zip(backward_end, synced_at)]
    ctx.notes["compute_busy_s"] = clock.busy_s
    ctx.notes["backward_end"] = backward_end
    ctx.notes["synced_at"] = synced_at


def _server(ctx: Context) -> None:
    import torch.distributed as dist

    spec = ctx.spec
    n_iter, workers = spec.iterations, spec.workers
    me = ctx.rank - workers
    server_of = ctx.server_of_task
    push_tag, pull_tag = _tags(ctx)
    mine = [tid for tid in range(len(ctx.tasks)) if server_of[tid] == me]
    # Expected arrival order: production order, restricted to this server's pieces.
    arrival = [tid for tid in ctx.production_order if server_of[tid] == me]
    inbox = [ctx.views(ctx.tensor_buffers()) for _ in range(workers)]
    total = ctx.views(ctx.tensor_buffers())
    # (not before, messages): the sender starts no message of a batch before that time.
    outbox: queue.Queue[Optional[tuple[float, list[tuple[int, int]]]]] = queue.Queue()
    errors: list[BaseException] = []
    sends = [0]

    def post(tid: int) -> list[Any]:
        return [dist.irecv(inbox[w][tid], src=w, tag=push_tag + tid) for w in range(workers)]

    order = _core.Strategy(ctx.spec.strategy).ps_worker_round(me, workers)

    def distribution(tids: list[int]) -> list[tuple[int, int]]:
        if ctx.options.distribution == "block":
            return [(tid, w) for w in order for tid in tids]
        return [(tid, w) for tid in tids for w in order]

    pace = spec.link_rate_bytes_per_s * PAYLOAD_EFFICIENCY

    def send_loop() -> None:
        # One message on the wire at a time, in order, back to back (the simulator's server
        # starts the next message once the previous one has crossed its own link at the
        # link's rate: `SimState::leave_time`). Gloo's send
        # completes once the kernel holds the data, so completions cannot pace the server;
        # instead it hands message i+1 to Gloo when message i would have finished leaving
        # at the link's payload rate, like a NIC with one transmit queue.
        in_flight: deque[Any] = deque()
        next_start = time.perf_counter()
        try:
            while (item := outbox.get()) is not None:
                not_before, batch = item
                next_start = max(next_start, time.perf_counter(), not_before)
                for tid, w in batch:
                    sleep_until(next_start)
                    if len(in_flight) >= SEND_WINDOW:
                        in_flight.popleft().wait()
                    in_flight.append(dist.isend(total[tid], dst=w, tag=pull_tag + tid))
                    next_start += ctx.tasks[tid].bytes / pace
                    sends[0] += 1
            while in_flight:
                in_flight.popleft().wait()
        except BaseException as e:
            errors.append(e)

    sender = threading.Thread(target=send_loop, name="ps-send", daemon=True)
    sender.start()
    works = {tid: post(tid) for tid in mine}
    dist.barrier()
    phases: list[tuple[float, float]] = []  # per iteration: first and last arrival
    for k in range(n_iter):
        last_arrival = 0.0
        first_arrival = 0.0
        for tid in arrival:
            for work in works[tid]:
                work.wait()
            arrived = time.perf_counter() + ctx.path_delay_s
            first_arrival = first_arrival or arrived
            last_arrival = max(last_arrival, arrived)
            total[tid].copy_(inbox[0][tid])
            for w in range(1, workers):
                total[tid].add_(inbox[w][tid])
            if k + 1 < n_iter:
                works[tid] = post(tid)
            if not ctx.options.barrier:
                outbox.put((arrived, distribution([tid])))
            if errors:
                raise errors[0]
        phases.append((first_arrival, last_arrival))
        if ctx.options.barrier:
            # Pieces go back in task order: lower layers first, as the next forward pass needs them.
            outbox.put((last_arrival, distribution(sorted(mine))))
    outbox.put(None)
    sender.join()
    if errors:
        raise errors[0]
    ctx.notes["messages_sent"] = sends[0]
    ctx.notes["arrivals"] = phases
