"""The runtime's coordinator: one leader decides, every worker issues the same operations.

Why a leader. Gradients become ready in a slightly different order and at different times
on each worker, so schedulers running independently on each worker would start
collectives in different orders and deadlock. Here only the leader (the first rank of the
data-parallel group) runs the core scheduler (:class:`~tensorwire.torch.tasks.TaskScheduler`)
on its own readiness. For every group it releases, it first sends a control message to each
follower over a process group of its own (header ``[kind, n, a, b, c]`` then ``n`` rows of
``(iteration, tensor, offset, numel)``, int64, point-to-point), then starts the operation.
A follower receives the messages in order, waits until its own gradients of that group
exist, and starts the same operation. So every worker issues the same operations in the
same order, whatever the timing: no deadlock is possible between them. The cost is one
small message per group and follower, and a follower starts a group after the leader
decided it (a few tens of microseconds on a LAN).

Threads (Gloo cannot poll a request, so each blocking wait has a thread):

- the *dispatcher*: the leader's scheduler loop (ready events, finishes, fusion deadlines),
  or the follower's receive loop;
- the *waiter*: waits for started operations in start order, returns credit to the
  scheduler, and calls ``on_reduced(iteration, tensor, grad)`` once every piece of a
  tensor is averaged (in iteration order per tensor).

Failures. An error in either thread (a peer died: Gloo reports a closed connection at once;
a peer hangs: Gloo's timeout) is kept and raised as :class:`CommunicationError` from the
next call on the training thread (a gradient hook, a forward pre-hook, ``step``,
``synchronize``). The training thread never waits without a bound: a watchdog raises if
nothing progresses for the timeout plus a margin. A follower only listens for control
messages while one of its own iterations is incomplete, so idle time (evaluation,
checkpointing) never runs into the timeout.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import torch
import torch.distributed as dist

from tensorwire._core import InputError
from tensorwire.torch import exit_guard
from tensorwire.torch.tasks import Group, SchedulerConfig, TaskScheduler
from tensorwire.torch.transport import Pending, Transport, release_groups

#: Control message kinds.
GROUP, CONFIG = 1, 2
#: A control message: header [kind, n, a, b, c], then up to INLINE_ROWS rows of
#: (iteration, tensor, offset, numel); a group with more rows sends the rest in a second message.
HEADER = 5
INLINE_ROWS = 16
MESSAGE = HEADER + 4 * INLINE_ROWS
_NONE = -1
#: Added to the timeout before the training thread's watchdog gives up, seconds.
WATCHDOG_MARGIN_S = 30.0
#: How long the leader waits before retrying a due fusion flush that the in-flight limit
#: held back (a finishing collective also retries it at once), seconds.
FLUSH_RETRY_S = 0.002
#: Gloo's default timeout (torch.distributed's default_pg_timeout), seconds.
DEFAULT_TIMEOUT_S = 1800.0


class CommunicationError(RuntimeError):
    """Gradient communication failed (a peer died or timed out); training cannot go on."""


@dataclass
class ConfigChange:
    """A configuration that took effect at ``iteration`` (recorded on every rank)."""

    iteration: int
    partition_bytes: Optional[int]
    credit_bytes: Optional[int]


@dataclass
class _Issued:
    pending: Pending
    rows: list[tuple[int, int, int, int]]
    group: Optional[Group] = None
    control: list[Any] = field(default_factory=list)
    keep: list[torch.Tensor] = field(default_factory=list)


def _encode(
    kind: int, rows: Sequence[tuple[int, int, int, int]], a: int = 0, b: int = 0, c: int = 0
) -> list[torch.Tensor]:
    """The control message(s) for one group or configuration (see ``MESSAGE``)."""
    first = torch.zeros(MESSAGE, dtype=torch.int64)
    first[:HEADER] = torch.tensor([kind, len(rows), a, b, c], dtype=torch.int64)
    flat = [v for row in rows for v in row]
    inline = flat[: 4 * INLINE_ROWS]
    if inline:
        first[HEADER : HEADER + len(inline)] = torch.tensor(inline, dtype=torch.int64)
    out = [first]
    if len(flat) > len(inline):
        out.append(torch.tensor(flat[len(inline) :], dtype=torch.int64))
    return out


def _opt(v: int) -> Optional[int]:
    return None if v == _NONE else v


class Coordinator:
    """Tasks of one model: readiness in, averaged gradients out (see module docstring).

    ``numels``: elements of each managed tensor; ``element_bytes``: bytes per element;
    ``layers``: called once, when the leader first schedules, for each tensor's forward
    position; ``ranks``: global ranks of the data-parallel group, the first is the leader;
    ``control_group``: a process group over ``ranks`` for control messages only (the
    coordinator's: :meth:`close` destroys it).
    """

    def __init__(
        self,
        *,
        numels: Sequence[int],
        element_bytes: int,
        layers: Callable[[], list[int]],
        config: SchedulerConfig,
        transport: Transport,
        ranks: Sequence[int],
        control_group: Optional[dist.ProcessGroup],
        timeout_s: Optional[float],
        on_reduced: Callable[[int, int, torch.Tensor], None],
        owns_transport: bool = True,
    ) -> None:
        self.numels = list(numels)
        self.total = sum(self.numels)
        self.element_bytes = element_bytes
        self._layers = layers
        self.config = config
        self.transport = transport
        self._owns_transport = owns_transport
        self.rank = dist.get_rank()
        self.leader = ranks[0]
        self.followers = list(ranks[1:])
        self.is_leader = self.rank == self.leader
        self._ctrl = control_group
        self._on_reduced = on_reduced
        self._watchdog_s = (timeout_s if timeout_s is not None else DEFAULT_TIMEOUT_S) + WATCHDOG_MARGIN_S
        self._cv = threading.Condition()
        self._grads: dict[tuple[int, int], torch.Tensor] = {}
        self._remaining: dict[tuple[int, int], int] = {}
        self._done: dict[int, dict[int, torch.Tensor]] = collections.defaultdict(dict)
        #: Last iteration whose update of each tensor is applied.
        self.updated = [-1] * len(self.numels)
        self._outstanding = 0
        self._error: Optional[CommunicationError] = None
        self._closing = False
        self._progress = time.monotonic()
        self._t0 = time.monotonic()
        # follower bookkeeping
        self._started = 0
        self._covered: dict[int, int] = collections.defaultdict(int)
        self._covered_upto = 0
        # leader bookkeeping
        self._requested: Optional[SchedulerConfig] = None
        self._sched: Optional[TaskScheduler] = None
        self._last_iteration = -1
        #: Configurations in effect and the iteration each began (same on every rank).
        self.history: list[ConfigChange] = []
        #: Groups started so far on this rank.
        self.groups_started = 0
        self._waitq: queue.Queue[Optional[_Issued]] = queue.Queue()
        target, what = (
            (self._lead, "flushing the fusion buffer")
            if self.is_leader
            else (self._follow, "receiving the leader's decisions")
        )
        self._dispatcher = threading.Thread(
            target=self._guard, args=(target, what), daemon=True, name="tensorwire-dispatch"
        )
        self._waiter = threading.Thread(
            target=self._guard, args=(self._wait_loop, "waiting for communication"), daemon=True, name="tensorwire-wait"
        )
        self._dispatcher.start()
        self._waiter.start()
        exit_guard.track(self)

    # -- training-thread API -------------------------------------------------------------
    def notify_ready(self, iteration: int, tensor: int, grad: torch.Tensor) -> None:
        """``grad`` (flat, contiguous) of ``tensor`` in ``iteration`` is ready to be averaged."""
        with self._cv:
            self._raise_if_failed()
            key = (iteration, tensor)
            self._grads[key] = grad
            self._remaining[key] = self.numels[tensor]
            self._outstanding += 1
            self._started = max(self._started, iteration + 1)
            self._progress = time.monotonic()
            if self.is_leader:
                try:
                    self._lead_ready(iteration, tensor)
                except Exception as e:
                    self._fail(e, "starting communication")
                    raise self._error from e  # type: ignore[misc]
            self._cv.notify_all()

    def request_config(self, config: SchedulerConfig) -> None:
        """Leader: use ``config`` from the next iteration that starts with nothing in flight."""
        with self._cv:
            self._requested = config
            self._cv.notify_all()

    @property
    def active_config(self) -> tuple[SchedulerConfig, int]:
        """The configuration in effect and the iteration it began (-1: not yet scheduling)."""
        with self._cv:
            return self.config, (self.history[-1].iteration if self.history else -1)

    def wait_for(self, tensors: Sequence[int], iteration: int, what: str) -> None:
        """Blocks until the update of ``iteration`` is applied to every tensor in ``tensors``."""
        self._wait(lambda: all(self.updated[t] >= iteration for t in tensors), what)

    def synchronize(self) -> None:
        """Blocks until every gradient handed in so far is averaged and applied."""
        self._wait(lambda: self._outstanding == 0, "synchronize")

    def close(self, wait_s: Optional[float] = None) -> None:
        """Waits for outstanding work, stops the threads, closes the transport if it owns it
        and destroys the control group (after a failure the threads may be stuck in a
        transfer, so nothing is closed then).

        ``wait_s``: wait at most this long for outstanding work (None: until it is done or
        the watchdog fires); where it is not done by then, nothing is closed either.
        """
        exit_guard.untrack(self)
        drained = False
        try:
            if self._error is None:
                drained = self._wait(lambda: self._outstanding == 0, "close", wait_s)
        finally:
            with self._cv:
                self._closing = True
                self._cv.notify_all()
            self._waitq.put(None)
            self._dispatcher.join(timeout=5.0)
            self._waiter.join(timeout=5.0)
            ended = not (self._dispatcher.is_alive() or self._waiter.is_alive())
            if self._error is None and drained and ended:
                if self._owns_transport:
                    self.transport.close()
                release_groups(self._ctrl)
                self._ctrl = None

    def stop_at_exit(self, wait_s: float) -> bool:
        """:func:`close` for :mod:`~tensorwire.torch.exit_guard`: True if both threads ended."""
        try:
            self.close(wait_s=wait_s)
        except CommunicationError:
            pass
        return not (self._dispatcher.is_alive() or self._waiter.is_alive())

    @property
    def failed(self) -> Optional[CommunicationError]:
        """The error that stopped communication, if any."""
        return self._error

    # -- internals -------------------------------------------------------------------------
    def _now(self) -> float:
        return time.monotonic() - self._t0

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    def _wait(self, done: Callable[[], bool], what: str, wait_s: Optional[float] = None) -> bool:
        """Blocks until ``done()``; raises the communication error if one comes first.

        ``wait_s``: give up after that many seconds and return False (True: done).
        """
        with self._cv:
            began = time.monotonic()
            while not done():
                self._raise_if_failed()
                if wait_s is not None and time.monotonic() - began >= wait_s:
                    return False
                self._cv.wait(0.25)
                idle = time.monotonic() - max(self._progress, began)
                if not done() and self._error is None and idle > self._watchdog_s:
                    self._error = CommunicationError(
                        f"rank {self.rank}: no gradient communication progressed for {idle:.0f} s while "
                        f"waiting in {what}; a peer process is probably stuck"
                    )
                    self._closing = True
                    self._cv.notify_all()
            self._raise_if_failed()
            return True

    def _fail(self, e: BaseException, what: str) -> None:
        """Keeps the first error (call with the lock held) and stops everything."""
        if self._error is None:
            text = str(e).strip()
            hint = (
                ""
                if isinstance(e, (InputError, AssertionError))
                else (" (a peer process probably died or did not respond within the timeout)")
            )
            self._error = CommunicationError(
                f"rank {self.rank}: gradient communication failed while {what}: "
                f"{text.splitlines()[0] if text else type(e).__name__}{hint}"
            )
            self._error.__cause__ = e
        self._closing = True
        self._cv.notify_all()
        self._waitq.put(None)

    def _guard(self, target: Callable[[], None], what: str) -> None:
        try:
            target()
        except BaseException as e:  # noqa: BLE001 - every failure is reported to the training thread
            with self._cv:
                self._fail(e, what)

    def _issue(
        self,
        rows: list[tuple[int, int, int, int]],
        group: Optional[Group],
        control: list[Any],
        keep: list[torch.Tensor],
    ) -> None:
        """Starts one group (called with the lock held, so issue order is one total order)."""
        pieces = [self._grads[(it, t)][off : off + n] for it, t, off, n in rows]
        pending = self.transport.start(pieces)
        self.groups_started += 1
        self._waitq.put(_Issued(pending, rows, group, control, keep))

    # leader ---------------------------------------------------------------------------
    # The leader schedules on whichever thread has news, under the lock: the training
    # thread (a gradient is ready), the waiter (a group finished) or the dispatcher (a
    # fusion deadline passed). One lock means one total order of issued groups.
    def _lead_ready(self, it: int, t: int) -> None:
        if self._sched is None or (it > self._last_iteration and self._requested is not None and self._sched.idle):
            self._sched = self._new_scheduler(it)
        self._last_iteration = max(self._last_iteration, it)
        self._sched.notify_ready(it, t, self._now())
        self._pump()

    def _pump(self) -> None:
        sched = self._sched
        if sched is None:
            return
        for g in sched.poll(self._now()):
            rows = [
                (it, t.tensor, t.offset_bytes // self.element_bytes, t.nbytes // self.element_bytes)
                for it, t in g.tasks
            ]
            message = _encode(GROUP, rows)
            control = [dist.isend(m, f, group=self._ctrl) for f in self.followers for m in message]
            self._issue(rows, g, control, message)
        deadline = sched.next_deadline()
        if deadline is not None:
            self._cv.notify_all()  # the dispatcher sleeps until then

    def _new_scheduler(self, iteration: int) -> TaskScheduler:
        cfg = self._requested or self.config
        self._requested = None
        self.config = cfg
        sizes = [n * self.element_bytes for n in self.numels]
        sched = TaskScheduler(cfg, sizes, self._layers(), self.element_bytes)
        change = ConfigChange(iteration, sched.piece_bytes, cfg.credit_bytes)
        self.history.append(change)
        message = _encode(CONFIG, [], _NONE if change.partition_bytes is None else change.partition_bytes,
                          _NONE if change.credit_bytes is None else change.credit_bytes, iteration)  # fmt: skip
        control = [dist.isend(m, f, group=self._ctrl) for f in self.followers for m in message]
        self._waitq.put(_Issued(_Done(), [], None, control, message))
        return sched

    def _lead(self) -> None:
        """Flushes the fusion buffer when its cycle ends (nothing else to do on this thread)."""
        with self._cv:
            while not self._closing:
                deadline = self._sched.next_deadline() if self._sched is not None else None
                if deadline is None:
                    self._cv.wait()
                    continue
                left = deadline - self._now()
                if left > 0:
                    self._cv.wait(left)
                    continue
                started = self.groups_started
                self._pump()
                if self.groups_started == started:
                    # Due, but the in-flight limit holds the buffer back: a finish pumps
                    # again. Without this wait the thread spun on the lock (a core's worth
                    # of CPU taken from the collectives it waits for).
                    self._cv.wait(FLUSH_RETRY_S)

    # follower -------------------------------------------------------------------------
    def _follow(self) -> None:
        buf = torch.zeros(MESSAGE, dtype=torch.int64)
        while True:
            with self._cv:
                while not self._closing and self._covered_upto >= self._started:
                    self._cv.wait()
                if self._closing:
                    return
            dist.recv(buf, self.leader, group=self._ctrl)
            kind, n, a, b, c = (int(x) for x in buf[:HEADER].tolist())
            if kind == CONFIG:
                with self._cv:
                    self.history.append(ConfigChange(c, _opt(a), _opt(b)))
                    self._progress = time.monotonic()
                continue
            if kind != GROUP:
                raise RuntimeError(f"unknown control message kind {kind} from rank {self.leader}")
            values = buf[HEADER : HEADER + 4 * min(n, INLINE_ROWS)].tolist()
            if n > INLINE_ROWS:
                extra = torch.empty(4 * (n - INLINE_ROWS), dtype=torch.int64)
                dist.recv(extra, self.leader, group=self._ctrl)
                values += extra.tolist()
            rows = [(values[4 * i], values[4 * i + 1], values[4 * i + 2], values[4 * i + 3]) for i in range(n)]
            with self._cv:
                self._progress = time.monotonic()
                for it, _, _, numel in rows:
                    self._covered[it] += numel
                while self._covered.get(self._covered_upto, 0) >= self.total:
                    self._covered.pop(self._covered_upto, None)
                    self._covered_upto += 1
                while not all((it, t) in self._grads for it, t, _, _ in rows):
                    if self._closing:
                        return
                    self._cv.wait()
                self._issue(rows, None, [], [])

    # both ---------------------------------------------------------------------------------
    def _wait_loop(self) -> None:
        while True:
            item = self._waitq.get()
            if item is None:
                return
            item.pending.wait()
            for w in item.control:
                w.wait()
            finished: list[tuple[int, int, torch.Tensor]] = []
            with self._cv:
                self._progress = time.monotonic()
                if self.is_leader and item.group is not None and self._sched is not None:
                    self._sched.notify_finish(item.group)
                    self._pump()
                for it, t, _, n in item.rows:
                    key = (it, t)
                    self._remaining[key] -= n
                    if self._remaining[key] == 0:
                        del self._remaining[key]
                        self._done[t][it] = self._grads.pop(key)
                        # Apply updates of one tensor in iteration order.
                        nxt = self.updated[t] + 1 + sum(1 for _, u, _ in finished if u == t)
                        while nxt in self._done[t]:
                            finished.append((nxt, t, self._done[t].pop(nxt)))
                            nxt += 1
            for it, t, g in finished:
                self._on_reduced(it, t, g)
                with self._cv:
                    self.updated[t] = it
                    self._outstanding -= 1
                    self._progress = time.monotonic()
                    self._cv.notify_all()


class _Done:
    """A pending operation that is already complete (for control-only items)."""

    def wait(self) -> None:
        return None


#: The old name of :class:`Coordinator`, kept for code that imports it.
Engine = Coordinator

__all__ = ["CommunicationError", "ConfigChange", "Coordinator", "Engine"]
