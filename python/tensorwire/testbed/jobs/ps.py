"""``ps``: a parameter server on hosts of its own, over torch.distributed point-to-point.

Mirrors the simulator's ``ps`` (crates/tensorwire-core/src/engine/ps.rs):

- ranks ``0..N-1`` are workers, ranks ``N..N+P-1`` the ``num_ps`` servers, each on its own
  host; tensor ``i`` lives on server ``i mod P`` (``placement=round-robin``) or on the
  least-loaded server so far (``balanced``);
- a worker sends (``isend``) each gradient piece to its server as soon as the backward pass
  produces it, with nothing held back (the core scheduler with no limits);
- a server sums a piece once every worker's copy has arrived. With the global barrier it
  sends nothing back until every piece of the iteration is summed; without it, each piece
  goes back as soon as it is summed;
- each server sends one message at a time (the next one queued behind it), in the distribution
  order: ``round-robin`` is piece-major (piece 0 to every worker, then piece 1, ...),
  ``block`` worker-major;
- a worker's forward pass of layer ``l`` waits only for layer ``l``'s parameters (the
  forward pass pipelines with the distribution phase).

Every receive is posted before its message can be sent (servers re-post as soon as a
buffer is summed, workers before their backward pass), so no send waits for a receiver.

User-space delay: a message counts as arrived ``2 x delay`` seconds after Gloo delivered it
(the server's barrier and each worker's per-layer gate wait that much longer).
"""

from __future__ import annotations

import queue
from collections import deque
import threading
import time
from typing import Any, Optional

from tensorwire import _core
from tensorwire.testbed.jobs.compute import ComputeClock, sleep_until
from tensorwire.testbed.jobs.context import Context


#: Messages a server has queued at once in its distribution phase (see ``send_loop``).
SEND_WINDOW = 2


def place(sizes: list[int], servers: int, placement: str) -> list[int]:
    """Server of each tensor (the simulator's ``place``).

    >>> place([100, 1, 1, 50], 2, "balanced"), place([5] * 5, 2, "round-robin")
    ([0, 1, 1, 1], [0, 1, 0, 1, 0])
    """
    if placement == "balanced":
        load = [0] * servers
        out = []
        for b in sizes:
            s = min(range(servers), key=lambda i: (load[i], i))
            load[s] += b
            out.append(s)
        return out
    return [i % servers for i in range(len(sizes))]


def _tags(ctx: Context) -> tuple[int, int]:
    """Tag bases: pushes use ``task``, pulls ``len(tasks) + task``."""
    return 0, len(ctx.tasks)


def run_ps(ctx: Context) -> None:
    """Runs this rank's part: a worker below ``workers``, a server from there on."""
    if ctx.rank < ctx.spec.workers:
        _worker(ctx)
    else:
        _server(ctx)


def _server_of_task(ctx: Context) -> list[int]:
    of_tensor = place(ctx.tensor_bytes, ctx.options.num_ps, ctx.options.placement)
    return [of_tensor[t.tensor] for t in ctx.tasks]


def _worker(ctx: Context) -> None:
    import torch.distributed as dist

    spec = ctx.spec
    n_iter, workers = spec.iterations, spec.workers
    server_of = _server_of_task(ctx)
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

    def watch() -> None:
        """Waits for each iteration's pulls in arrival order and opens the layer gates."""
        try:
            while (item := pulls.get()) is not None:
                k, works = item
                left = list(pieces_per_layer)
                for tid, work in works:
                    work.wait()
                    arrived = time.perf_counter() + ctx.path_delay_s
                    sleep_until(arrived)
                    layer = tasks[tid].layer
                    left[layer] -= 1
                    if left[layer] == 0:
                        layer_ready[k][layer].set()
                synced_at[k] = time.perf_counter()
                for li, p in enumerate(pieces_per_layer):
                    if p == 0:
                        layer_ready[k][li].set()
        except BaseException as e:
            errors.append(e)
            for row in layer_ready:
                for ev in row:
                    ev.set()

    watcher = threading.Thread(target=watch, name="ps-pulls", daemon=True)
    watcher.start()
    clock = ComputeClock()
    backward_end = [0.0] * n_iter
    push_works: list[Any] = []
    dist.barrier()
    clock.resync()
    for k in range(n_iter):
        for li, layer in enumerate(layers):
            if k > 0 and not layer_ready[k - 1][li].is_set():
                layer_ready[k - 1][li].wait()
                clock.resync()
            if errors:
                raise errors[0]
            clock.run(layer.forward_s)
        # Post this iteration's pulls before any push, so the servers never wait for them.
        works = [(tid, dist.irecv(params[tid], src=workers + server_of[tid], tag=pull_tag + tid)) for tid in range(len(tasks))]
        pulls.put((k, works))
        for w in push_works:
            w.wait()
        push_works.clear()
        for li in range(len(layers) - 1, -1, -1):
            backward_end[k] = clock.run(layers[li].backward_s)
            for tid in ctx.release_order[li]:
                sched.notify_ready(k, tid, tasks[tid].layer, tasks[tid].bytes)
            for _, tid, nbytes in sched.poll():
                push_works.append(dist.isend(grads[tid], dst=workers + server_of[tid], tag=push_tag + tid))
                sched.notify_finish(nbytes)  # no limits: credit is irrelevant
    for row in layer_ready[n_iter - 1]:
        row.wait()
    if errors:
        raise errors[0]
    for w in push_works:
        w.wait()
    pulls.put(None)
    watcher.join()
    if errors:
        raise errors[0]
    ctx.completions = [max(b, s) for b, s in zip(backward_end, synced_at)]
    ctx.notes["compute_busy_s"] = clock.busy_s


def _server(ctx: Context) -> None:
    import torch.distributed as dist

    spec = ctx.spec
    n_iter, workers = spec.iterations, spec.workers
    me = ctx.rank - workers
    server_of = _server_of_task(ctx)
    push_tag, pull_tag = _tags(ctx)
    mine = [tid for tid in range(len(ctx.tasks)) if server_of[tid] == me]
    # Expected arrival order: production order, restricted to this server's pieces.
    arrival = [tid for tid in ctx.production_order if server_of[tid] == me]
    inbox = [ctx.views(ctx.tensor_buffers()) for _ in range(workers)]
    total = ctx.views(ctx.tensor_buffers())
    outbox: queue.Queue[Optional[list[tuple[int, int]]]] = queue.Queue()
    errors: list[BaseException] = []
    sends = [0]

    def post(tid: int) -> list[Any]:
        return [dist.irecv(inbox[w][tid], src=w, tag=push_tag + tid) for w in range(workers)]

    def distribution(tids: list[int]) -> list[tuple[int, int]]:
        if ctx.options.distribution == "block":
            return [(tid, w) for w in range(workers) for tid in tids]
        return [(tid, w) for tid in tids for w in range(workers)]

    def send_loop() -> None:
        # One message on the wire at a time, in order: the next is queued behind the one
        # being sent (a window of SEND_WINDOW) so that Gloo's per-message software cost is
        # not added between messages, as the simulator's server starts the next message
        # the moment the previous one has left.
        in_flight: deque[Any] = deque()
        try:
            while (batch := outbox.get()) is not None:
                for tid, w in batch:
                    if len(in_flight) >= SEND_WINDOW:
                        in_flight.popleft().wait()
                    in_flight.append(dist.isend(total[tid], dst=w, tag=pull_tag + tid))
                    sends[0] += 1
            while in_flight:
                in_flight.popleft().wait()
        except BaseException as e:
            errors.append(e)

    sender = threading.Thread(target=send_loop, name="ps-send", daemon=True)
    sender.start()
    works = {tid: post(tid) for tid in mine}
    dist.barrier()
    for k in range(n_iter):
        last_arrival = 0.0
        for tid in arrival:
            for work in works[tid]:
                work.wait()
            arrived = time.perf_counter() + ctx.path_delay_s
            last_arrival = max(last_arrival, arrived)
            total[tid].copy_(inbox[0][tid])
            for w in range(1, workers):
                total[tid].add_(inbox[w][tid])
            if k + 1 < n_iter:
                works[tid] = post(tid)
            if not ctx.options.barrier:
                sleep_until(arrived)
                outbox.put(distribution([tid]))
            if errors:
                raise errors[0]
        if ctx.options.barrier:
            sleep_until(last_arrival)
            # Pieces go back in task order: lower layers first, as the next forward pass needs them.
            outbox.put(distribution(sorted(mine)))
    outbox.put(None)
    sender.join()
    if errors:
        raise errors[0]
    ctx.notes["messages_sent"] = sends[0]
