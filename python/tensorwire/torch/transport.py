"""Transports: what ``start`` does with one group of gradient pieces (Guo 2019's ``start``).

A transport is the pluggable half of the task API, in the style of PyTorch's
``ddp_comm_hooks``: ``start(pieces)`` launches one communication operation over a group's
gradient pieces (flat, contiguous views into this rank's gradients) and returns at once;
after the returned handle's ``wait()`` every piece holds the *average* over the
data-parallel workers. The scheduler never looks inside. Every worker calls ``start`` for
the same groups in the same order (the leader decides it), so a transport may rely on that
order; it is the only thing that makes collectives and point-to-point streams match up.

Two transports come with tensorwire:

- :class:`AllReduce`: ``torch.distributed.all_reduce`` (sum, then divide by the number of
  workers), fused groups through one concatenated buffer; on Gloo, over a *stream*
  (:func:`stream_group`): a process group with one worker thread, so that collectives run
  one at a time in the order started, as on an NCCL stream, and the leader can commit
  groups ahead of time without them sharing the network.
- :class:`ParameterServer`: a server process; workers *push* each group to it and *pull*
  the average back, by point-to-point ``isend``/``irecv`` (the PS architecture of
  Chang et al. 2020 and Guo 2019, seeds 000 and 004).
"""

from __future__ import annotations

import datetime
import os
import time
from typing import Any, Optional, Protocol, Sequence

import torch
import torch.distributed as dist

from tensorwire._core import InputError
from tensorwire.limits import check_timeout

ProcessGroup = dist.ProcessGroup

#: Header a worker sends before each push: payload elements, or ``STOP`` when it leaves.
STOP = -1


class Pending(Protocol):
    """An operation in progress; ``wait()`` returns when it is done (raises if it failed)."""

    def wait(self) -> None: ...


class Transport(Protocol):
    """Moves one group's gradient pieces; see the module docstring for the contract."""

    #: The data-parallel workers' process group (None: the default group).
    group: Optional[ProcessGroup]
    #: Whether ``start`` is a collective (one at a time without a credit) or point-to-point.
    collective: bool
    #: The strategy specs' names whose communication it runs (``strategy=`` of
    #: ``ScheduledDataParallel`` is refused for any other); a transport without this
    #: attribute takes any.
    strategies: tuple[str, ...]

    def start(self, pieces: Sequence[torch.Tensor]) -> Pending:
        """Starts averaging ``pieces`` over the workers; returns at once."""
        ...

    def close(self) -> None:
        """This worker sends nothing more (called once, after the last operation finished)."""
        ...


def member_group(
    ranks: Sequence[int], timeout: Optional[datetime.timedelta], local: bool = False, backend: Optional[str] = None
) -> Optional[ProcessGroup]:
    """``dist.new_group(ranks)``; ``None`` on a rank outside ``ranks`` (which must not use it).

    ``local=True``: only the members call it (``use_local_synchronization``); otherwise
    every rank of the default group must, in the same order. ``backend``: default the
    default group's (``gloo`` for CPU-only traffic such as control messages).
    """
    g = dist.new_group(list(ranks), timeout=timeout, backend=backend, use_local_synchronization=local)
    return g if isinstance(g, ProcessGroup) else None


def release_groups(*groups: Optional[Any]) -> None:
    """Destroys process groups this library created, now rather than at interpreter exit.

    A Gloo group's worker threads drop their last reference to a finished operation after
    the waiter has returned, and that drop takes the GIL (the operation's tensors are
    Python objects). Left to garbage collection at exit, the drop can come while the
    interpreter finalizes, where CPython 3.11 ends the thread and the C++ runtime aborts
    the process ("terminate called without an active exception"). Destroying the group
    joins its threads while the interpreter is alive. Unregistered groups (a
    :func:`stream_group`) are released by dropping the last reference, which the caller
    does. Best effort: call it only after the last operation on the groups finished.
    """
    for g in groups:
        if g is None or not dist.is_initialized():
            continue
        try:
            dist.destroy_process_group(g)
        except (ValueError, RuntimeError):  # not registered (a stream) or already destroyed
            pass


#: Streams created so far per group of ranks (the same count on every member, as every
#: member creates them in the same order): part of each stream's store prefix.
_streams: dict[tuple[int, ...], int] = {}


def stream_group(ranks: Sequence[int], timeout: Optional[datetime.timedelta]) -> Optional[Any]:
    """A Gloo process group over ``ranks`` (every member calls it, in the same order) with
    **one** worker thread: collectives started on it run one at a time, in start order.

    ``torch.distributed.new_group`` gives Gloo groups two worker threads (and ignores
    ``pg_options`` for Gloo), so two collectives started back to back run at once and share
    the network; with one thread the second waits in Gloo's queue and starts the moment the
    first ends, with no Python on that path. Built from torch's own (underscored) Gloo
    constructor and the default group's store; ``None`` where the default group is not Gloo
    (NCCL runs a communicator's collectives on one stream already) or this torch lacks them.
    """
    if dist.get_backend() != "gloo":
        return None
    try:
        gloo: Any = dist.ProcessGroupGloo
        key = tuple(ranks)
        n = _streams[key] = _streams.get(key, 0) + 1
        prefix = f"tensorwire/stream/{'-'.join(map(str, key))}/{n}/"
        # getattr: torch's stubs do not export PrefixStore
        store = getattr(dist, "PrefixStore")(prefix, dist.distributed_c10d._get_default_store())  # noqa: B009
        opts = gloo._Options()
        opts._threads = 1
        opts._timeout = timeout if timeout is not None else datetime.timedelta(seconds=1800)
        names = [x for x in os.environ.get("GLOO_SOCKET_IFNAME", "").split(",") if x]
        opts._devices = [gloo.create_device(interface=x) for x in names] or [gloo.create_default_device()]
        return gloo(store, list(ranks).index(dist.get_rank()), len(ranks), opts)
    except (AttributeError, TypeError):  # a torch without these constructors
        return None


def _concat(pieces: Sequence[torch.Tensor]) -> torch.Tensor:
    return pieces[0] if len(pieces) == 1 else torch.cat(list(pieces))


def _scatter(flat: torch.Tensor, pieces: Sequence[torch.Tensor]) -> None:
    if len(pieces) == 1 and flat.data_ptr() == pieces[0].data_ptr():
        return
    for dst, src in zip(pieces, torch.split(flat, [p.numel() for p in pieces])):
        dst.copy_(src)


class _AllReducePending:
    def __init__(self, work: dist.Work, flat: torch.Tensor, pieces: Sequence[torch.Tensor], world: int) -> None:
        self.work, self.flat, self.pieces, self.world = work, flat, pieces, world

    def wait(self) -> None:
        if self.flat.is_cuda:
            # NCCL's wait() only orders the current stream after the collective; the
            # credit must return when the bytes have really moved, so poll its end event.
            while not self.work.is_completed():
                time.sleep(50e-6)
        self.work.wait()
        self.flat.div_(self.world)
        _scatter(self.flat, self.pieces)


class AllReduce:
    """All-reduce on ``group`` (None: the default group); one collective per group.

    A single piece is reduced in place; several are concatenated, reduced and copied back
    (one extra copy of the group's bytes each way). ``stream``: a group from
    :func:`stream_group` over the same ranks to run the collectives on instead (one at a
    time, in start order). ``owns_group``: :meth:`close` destroys ``group`` (pass it only
    for a group made for this transport).
    """

    collective = True
    strategies: tuple[str, ...] = ("ring",)

    def __init__(
        self, group: Optional[ProcessGroup] = None, stream: Optional[Any] = None, owns_group: bool = False
    ) -> None:
        if not dist.is_initialized():
            raise InputError(
                "group", "torch.distributed is not initialized; call tensorwire.torch.init_process_group() first"
            )
        self.group = group
        self._owns_group = owns_group and group is not None
        self._closed = False
        self.world = dist.get_world_size(group)
        self._stream = stream
        self._sum = dist.AllreduceOptions()
        self._sum.reduceOp = dist.ReduceOp.SUM
        #: Whether collectives run one at a time in start order (a Gloo stream, or NCCL's
        #: stream): the scheduler may then commit groups ahead (``SchedulerConfig.for_transport``).
        self.ordered = stream is not None or dist.get_backend(group) == "nccl"

    def start(self, pieces: Sequence[torch.Tensor]) -> Pending:
        if self._closed:
            raise RuntimeError("this AllReduce transport is closed")
        flat = _concat(pieces)
        if self._stream is not None:
            work = self._stream.allreduce([flat], self._sum)
        else:
            work = dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=self.group, async_op=True)
        assert work is not None
        return _AllReducePending(work, flat, pieces, self.world)

    def close(self) -> None:
        """Drops the stream and destroys an owned group (see :func:`release_groups`); the
        transport starts nothing after this."""
        self._closed = True
        self._stream = None
        if self._owns_group:
            release_groups(self.group)
            self.group, self._owns_group = None, False  # the last reference ends its threads


class _PushPullPending:
    def __init__(
        self, works: list[dist.Work], out: torch.Tensor, pieces: Sequence[torch.Tensor], keep: list[torch.Tensor]
    ) -> None:
        self.works, self.out, self.pieces, self.keep = works, out, pieces, keep

    def wait(self) -> None:
        for w in self.works:
            w.wait()
        _scatter(self.out, self.pieces)


class ParameterServer:
    """A parameter server on rank ``server`` (default: the last rank) of the default group.

    Construct it on **every** rank, server included (it creates process groups, which is
    collective). Workers pass it to :class:`~tensorwire.torch.ScheduledDataParallel` as
    ``transport=``; the server calls :meth:`serve`, which returns once every worker closed.
    For each group the workers push a header (element count) and the payload; the server
    receives from every worker in rank order, sums in rank order, divides by the number of
    workers and sends the average back to each (the pull). The server holds no parameters:
    each worker applies its optimizer to the averaged gradient, which keeps workers exactly
    in step with all-reduce training.

    ``timeout_s`` bounds each point-to-point operation on the workers; the server waits for
    the next push up to ``server_timeout_s`` (it idles while workers compute or evaluate).
    A worker that dies closes its connections, and the others fail at once.
    """

    collective = False
    strategies: tuple[str, ...] = ("ps",)

    def __init__(
        self,
        server: Optional[int] = None,
        *,
        timeout_s: Optional[float] = None,
        server_timeout_s: float = 24 * 3600.0,
    ) -> None:
        if not dist.is_initialized():
            raise InputError(
                "transport", "torch.distributed is not initialized; call tensorwire.torch.init_process_group() first"
            )
        world = dist.get_world_size()
        if world < 2:
            raise InputError("transport", "a parameter server needs at least 2 processes (workers plus the server)")
        server = world - 1 if server is None else server
        if isinstance(server, bool) or not isinstance(server, int) or not 0 <= server < world:
            raise InputError("server", f"{server!r} is not a rank; choose 0 to {world - 1}")
        if timeout_s is not None:
            timeout_s = check_timeout(timeout_s)
        if dist.get_backend() != "gloo":
            raise InputError("transport", "the parameter server needs the gloo backend (CPU tensors)")
        self.server = server
        self.rank = dist.get_rank()
        self.workers = [r for r in range(world) if r != server]
        self.is_server = self.rank == server
        seconds = server_timeout_s if self.is_server else timeout_s
        timeout = datetime.timedelta(seconds=seconds) if seconds is not None else None
        #: The workers' group (data-parallel group; the server is not in it).
        self.group: Optional[ProcessGroup] = member_group(self.workers, timeout)
        # Point-to-point traffic has a group of its own so it never mixes with the user's.
        self._p2p = member_group(list(range(world)), timeout)
        self._closed = False

    # -- worker side --------------------------------------------------------------------
    def start(self, pieces: Sequence[torch.Tensor]) -> Pending:
        if self._p2p is None:
            raise RuntimeError("this ParameterServer transport is closed")
        flat = _concat(pieces)
        header = torch.tensor([flat.numel()], dtype=torch.int64)
        out = flat if len(pieces) == 1 else torch.empty_like(flat)
        works = [
            dist.isend(header, self.server, group=self._p2p),
            dist.isend(flat, self.server, group=self._p2p),
            dist.irecv(out, self.server, group=self._p2p),
        ]
        return _PushPullPending([w for w in works if w is not None], out, pieces, [header, flat])

    def close(self) -> None:
        """Tells the server this worker is done (after its last push was answered)."""
        if self._closed or self.is_server:
            return
        self._closed = True
        dist.send(torch.tensor([STOP], dtype=torch.int64), self.server, group=self._p2p)
        self._release()

    def _release(self) -> None:
        """Destroys the private point-to-point group (nothing more is sent on it)."""
        release_groups(self._p2p)
        self._p2p = None

    # -- server side --------------------------------------------------------------------
    def serve(self, dtype: torch.dtype = torch.float32) -> int:
        """Runs the server until every worker has closed; returns the number of groups served.

        ``dtype`` is the gradients' element type. Raises ``RuntimeError`` if a worker dies
        or the workers disagree on a group's size.
        """
        if not self.is_server:
            raise InputError("serve", f"rank {self.rank} is a worker; only rank {self.server} serves")
        if self._p2p is None:
            raise RuntimeError("this parameter server has already served its workers")
        active = list(self.workers)
        served = 0
        header = torch.zeros(1, dtype=torch.int64)
        while active:
            sizes: dict[int, int] = {}
            for w in active:
                dist.recv(header, w, group=self._p2p)
                sizes[w] = int(header.item())
            stopping = [w for w, n in sizes.items() if n == STOP]
            if stopping:
                if len(stopping) != len(active):
                    raise RuntimeError(
                        f"parameter server: workers {stopping} closed while {sorted(set(active) - set(stopping))} still pushed"
                    )
                self._release()
                return served
            if len(set(sizes.values())) != 1:
                raise RuntimeError(f"parameter server: workers pushed groups of different sizes {sizes}")
            n = next(iter(sizes.values()))
            bufs = [torch.empty(n, dtype=dtype) for _ in active]
            works = [dist.irecv(b, w, group=self._p2p) for b, w in zip(bufs, active)]
            for wk in works:
                assert wk is not None
                wk.wait()
            total = bufs[0]
            for b in bufs[1:]:
                total.add_(b)
            total.div_(len(active))
            sends = [dist.isend(total, w, group=self._p2p) for w in active]
            for wk in sends:
                assert wk is not None
                wk.wait()
            served += 1
        return served


__all__ = ["AllReduce", "ParameterServer", "Pending", "Transport", "member_group", "release_groups"]
