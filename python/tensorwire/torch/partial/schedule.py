"""Schedules: DAGs of send, receive, compute and no-op operations (Li et al. 2019, seed 002, section 4.1).

A :class:`Schedule` is what one rank does to progress a collective: operations
(:class:`Op`) and happens-before dependencies between them. An operation fires once its
dependencies are satisfied, with ``and`` logic (all of them completed) or ``or`` logic
(any one of them completed; a dependency may carry a condition, evaluated when it
completes). Operations are *consumable*: in one execution each fires at most once, so two
initiators reaching the same rank at the same time start its collective only once.

An :class:`Executor` runs a schedule on a torch.distributed process group, one
:class:`Instance` per execution ("round"). Schedules are *persistent*: when the operation
named ``rearm_on`` completes in round ``r``, round ``r + 1`` is armed (its receives posted)
without the application doing anything. Messages carry the round in their tag,
``(round mod wrap) * slots + op.slot``, so messages of different rounds never match.

Execution is asynchronous: operations without dependencies fire when the round is armed,
``trigger`` operations when the application fires them, the rest when their dependencies
complete. Gloo cannot poll a request (there is no ``test()``), so every posted send or
receive gets a daemon progress thread that waits for it; a no-op or compute runs on the
thread that satisfied its last dependency. Cost: a Python thread hand-off and a lock per
message (tens of microseconds), which is noise next to the load imbalance partial
collectives are for.
"""

from __future__ import annotations

import collections
import functools
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Optional, Sequence

import torch
import torch.distributed as dist

from tensorwire._core import InputError

OpKind = Literal["send", "recv", "compute", "nop"]
Mode = Literal["and", "or"]

#: Gloo tags are signed 32-bit integers.
TAG_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class Dep:
    """A dependency on operation ``op``; with ``when``, an ``or`` dependency counts only
    if ``when(instance)`` is true at the moment ``op`` completes."""

    op: str
    when: Optional[Callable[["Instance"], bool]] = None


@dataclass(frozen=True)
class Op:
    """One vertex of a schedule.

    ``kind``: ``send`` (to ``peer``; the tensor is ``data(instance)``, read when the
    operation fires), ``recv`` (from ``peer``, into ``data(instance)``, allocated when it
    fires; kept in ``instance.received[name]``), ``compute`` (runs ``fn(instance)``) or
    ``nop`` (completes at once; only builds dependencies). ``slot`` tells apart the
    messages of one round (sender and receiver must agree on it). ``trigger``: the
    application may fire it (an *internal activation*); it still fires on its own
    dependencies too.
    """

    name: str
    kind: OpKind
    deps: tuple[Dep, ...] = ()
    mode: Mode = "and"
    peer: Optional[int] = None
    slot: int = 0
    data: Optional[Callable[["Instance"], torch.Tensor]] = None
    fn: Optional[Callable[["Instance"], None]] = None
    trigger: bool = False


def _deps(deps: Sequence[str | Dep]) -> tuple[Dep, ...]:
    return tuple(d if isinstance(d, Dep) else Dep(d) for d in deps)


def send(
    name: str,
    peer: int,
    slot: int,
    data: Callable[["Instance"], torch.Tensor],
    deps: Sequence[str | Dep] = (),
    mode: Mode = "and",
    trigger: bool = False,
) -> Op:
    """A send of ``data(instance)`` to ``peer``."""
    return Op(name, "send", _deps(deps), mode, peer, slot, data, None, trigger)


def recv(
    name: str,
    peer: int,
    slot: int,
    data: Callable[["Instance"], torch.Tensor],
    deps: Sequence[str | Dep] = (),
    mode: Mode = "and",
) -> Op:
    """A receive from ``peer`` into a tensor ``data(instance)`` allocates."""
    return Op(name, "recv", _deps(deps), mode, peer, slot, data)


def compute(name: str, fn: Callable[["Instance"], None], deps: Sequence[str | Dep] = (), mode: Mode = "and") -> Op:
    """A computation ``fn(instance)`` (on the thread that satisfied its dependencies)."""
    return Op(name, "compute", _deps(deps), mode, fn=fn)


def nop(name: str, deps: Sequence[str | Dep] = (), mode: Mode = "and", trigger: bool = False) -> Op:
    """A no-op: completes as soon as it fires."""
    return Op(name, "nop", _deps(deps), mode, trigger=trigger)


class Schedule:
    """A validated DAG of operations, run by an :class:`Executor`.

    ``final``: the operations that must complete before a round is over (default: all of
    them); a round is over once those completed and no send or receive is still in
    flight. ``rearm_on``: the operation whose completion arms the next round (None: a
    one-shot schedule). ``slots``: tags one round takes (default: the largest slot + 1);
    every rank must use the same value, so give it when ranks' schedules differ.
    """

    def __init__(
        self,
        ops: Sequence[Op],
        *,
        final: Optional[Sequence[str]] = None,
        rearm_on: Optional[str] = None,
        slots: Optional[int] = None,
    ) -> None:
        self.ops: dict[str, Op] = {}
        for op in ops:
            if op.name in self.ops:
                raise InputError("ops", f"two operations are named {op.name!r}")
            if op.kind in ("send", "recv") and (op.peer is None or op.data is None):
                raise InputError("ops", f"{op.kind} {op.name!r} needs a peer and a data function")
            if op.kind == "compute" and op.fn is None:
                raise InputError("ops", f"compute {op.name!r} needs a function")
            if op.slot < 0:
                raise InputError("ops", f"{op.name!r}: slot must be >= 0")
            if op.mode == "and" and any(d.when is not None for d in op.deps):
                raise InputError("ops", f"{op.name!r}: conditions are only allowed on 'or' dependencies")
            self.ops[op.name] = op
        self.dependents: dict[str, list[str]] = {name: [] for name in self.ops}
        for op in ops:
            for d in op.deps:
                if d.op not in self.ops:
                    raise InputError("ops", f"{op.name!r} depends on unknown operation {d.op!r}")
                self.dependents[d.op].append(op.name)
        self._check_acyclic()
        self.final = tuple(final) if final is not None else tuple(self.ops)
        for name in self.final + ((rearm_on,) if rearm_on else ()):
            if name not in self.ops:
                raise InputError("final", f"unknown operation {name!r}")
        self.rearm_on = rearm_on
        largest = max((op.slot for op in ops if op.kind in ("send", "recv")), default=0)
        #: Tags one round takes (the same on every rank).
        self.slots = largest + 1 if slots is None else slots
        if self.slots <= largest:
            raise InputError("slots", f"{slots} slots cannot hold slot {largest}")
        if self.slots > TAG_LIMIT:
            raise InputError("ops", f"{self.slots} slots do not fit in a 31-bit tag")
        self.roots = tuple(op.name for op in ops if not op.deps and not op.trigger)

    def _check_acyclic(self) -> None:
        indegree = {name: len(op.deps) for name, op in self.ops.items()}
        queue = collections.deque(name for name, k in indegree.items() if k == 0)
        seen = 0
        while queue:
            name = queue.popleft()
            seen += 1
            for child in self.dependents[name]:
                indegree[child] -= 1
                if indegree[child] == 0:
                    queue.append(child)
        if seen != len(self.ops):
            cyclic = sorted(name for name, k in indegree.items() if k > 0)
            raise InputError("ops", f"dependencies form a cycle through {cyclic[:5]}")

    def __len__(self) -> int:
        return len(self.ops)


@dataclass
class Instance:
    """One execution (round) of a schedule. ``data``: scratch space for the compute
    operations (e.g. the round's working buffer); ``received``: completed receives."""

    round: int
    schedule: Schedule
    data: dict[str, Any] = field(default_factory=dict)
    received: dict[str, torch.Tensor] = field(default_factory=dict)
    _left: dict[str, int] = field(default_factory=dict)
    _fired: set[str] = field(default_factory=set)
    _done: set[str] = field(default_factory=set)
    _in_flight: int = 0
    _over: bool = False

    def fired(self, name: str) -> bool:
        """Whether operation ``name`` has fired in this round (it never fires again)."""
        return name in self._fired

    def completed(self, name: str) -> bool:
        """Whether operation ``name`` has completed in this round."""
        return name in self._done

    @property
    def over(self) -> bool:
        """Whether the round is over (its final operations completed, nothing in flight)."""
        return self._over


class _Waiters:
    """Daemon threads that wait on posted Gloo requests; one more is started whenever all
    are busy, so a wait never queues behind another (which could deadlock)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: collections.deque[Callable[[], None]] = collections.deque()
        self._cond = threading.Condition()
        self._idle = 0
        self._threads: list[threading.Thread] = []
        self._stop = False

    def submit(self, job: Callable[[], None]) -> None:
        with self._cond:
            if self._stop:
                raise RuntimeError("progress threads were stopped")
            self._jobs.append(job)
            if self._idle > len(self._jobs) - 1:
                self._cond.notify()
                return
            t = threading.Thread(target=self._loop, name=f"{self._name}-{len(self._threads)}", daemon=True)
            self._threads.append(t)
        t.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stop:
                    self._idle += 1
                    self._cond.wait()
                    self._idle -= 1
                if not self._jobs:
                    return
                job = self._jobs.popleft()
            job()

    def stop(self, timeout_s: float) -> bool:
        """Stops idle threads; True if all ended within ``timeout_s`` seconds."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        deadline = time.monotonic() + timeout_s
        for t in list(self._threads):
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads)

    @property
    def threads(self) -> int:
        """Progress threads started so far."""
        return len(self._threads)


class Executor:
    """Runs a :class:`Schedule` on ``group`` (a torch.distributed ProcessGroup; peers are
    ranks in it), round after round.

    ``on_error(exc)`` is called once, on a progress thread, when an operation fails
    (a peer died, a wait timed out, a compute raised); nothing fires after that.
    ``on_arm(round)`` is called after a round is armed (e.g. to fire its triggers).
    """

    def __init__(
        self,
        schedule: Schedule,
        group: dist.ProcessGroup,
        *,
        name: str = "tensorwire-schedule",
        on_error: Optional[Callable[[BaseException], None]] = None,
        on_arm: Optional[Callable[[int], None]] = None,
    ) -> None:
        self.schedule = schedule
        self.group = group
        self.wrap = max(1, TAG_LIMIT // schedule.slots)
        self._lock = threading.Condition(threading.RLock())
        self._instances: dict[int, Instance] = {}
        self._waiters = _Waiters(name)
        self._on_error = on_error
        self._on_arm = on_arm
        self.error: Optional[BaseException] = None
        self.error_where = ""
        self._closed = False

    # --- public -------------------------------------------------------------------

    def tag(self, round: int, slot: int) -> int:
        """The message tag of ``slot`` in ``round``."""
        return (round % self.wrap) * self.schedule.slots + slot

    def arm(self, round: int) -> Instance:
        """Arms round ``round`` (idempotent): fires its operations without dependencies."""
        with self._lock:
            inst = self._instances.get(round)
            if inst is not None:
                return inst
            inst = Instance(round, self.schedule)
            inst._left = {n: len(op.deps) for n, op in self.schedule.ops.items() if op.mode == "and"}
            self._instances[round] = inst
            ready = [n for n in self.schedule.roots if self._take(inst, n)]
        self._run(inst, ready)
        if self._on_arm is not None:
            self._on_arm(round)
        return inst

    def instance(self, round: int) -> Optional[Instance]:
        """Round ``round`` if it is armed and not over."""
        with self._lock:
            return self._instances.get(round)

    def fire(self, round: int, name: str, inline: bool = True) -> bool:
        """Fires trigger operation ``name`` in round ``round`` (an internal activation).

        Returns False if it had already fired (operations are consumable) or the round is
        not armed. The operations this enables run on the calling thread until they block
        on the network (``inline=False``: on a progress thread).
        """
        if not self.schedule.ops[name].trigger:
            raise InputError("name", f"{name!r} is not a trigger operation")
        with self._lock:
            inst = self._instances.get(round)
            if inst is None or self.error is not None or not self._take(inst, name):
                return False
        if inline:
            self._run(inst, [name])
        else:
            self._waiters.submit(lambda: self._run(inst, [name]))
        return True

    def rounds(self) -> list[int]:
        """Rounds armed and not over, in order."""
        with self._lock:
            return sorted(self._instances)

    def describe(self) -> str:
        """One line per armed round: operations fired and not completed, and messages in
        flight (for error messages)."""
        with self._lock:
            lines = []
            for r, inst in sorted(self._instances.items()):
                pending = sorted(inst._fired - inst._done)
                unfired = [n for n in self.schedule.final if n not in inst._fired]
                lines.append(
                    f"round {r}: in flight {inst._in_flight}, fired not completed {pending}, final not fired {unfired}"
                )
            return "; ".join(lines) or "no round armed"

    def wait_quiet(self, timeout_s: float) -> bool:
        """Waits until no round is armed (all over); True if that happened in time."""
        with self._lock:
            return (
                self._lock.wait_for(lambda: not self._instances or self.error is not None, timeout=timeout_s)
                and not self._instances
            )

    def close(self, timeout_s: float = 5.0) -> bool:
        """Stops the progress threads; True if they all ended (none was still waiting)."""
        with self._lock:
            self._closed = True
        return self._waiters.stop(timeout_s)

    @property
    def threads(self) -> int:
        """Progress threads started so far (a measure of the operations in flight at once)."""
        return self._waiters.threads

    # --- internals ------------------------------------------------------------------

    def _take(self, inst: Instance, name: str) -> bool:
        """Marks ``name`` fired unless it already was (consumable); lock held."""
        if name in inst._fired:
            return False
        inst._fired.add(name)
        if self.schedule.ops[name].kind in ("send", "recv"):
            inst._in_flight += 1
        return True

    def _run(self, inst: Instance, ready: list[str]) -> None:
        """Executes fired operations; no-ops and computes inline, messages posted."""
        work = collections.deque(ready)
        while work:
            name = work.popleft()
            op = self.schedule.ops[name]
            try:
                if op.kind in ("send", "recv"):
                    assert op.data is not None and op.peer is not None
                    tensor = op.data(inst)
                    post = self.group.send if op.kind == "send" else self.group.recv
                    req = post([tensor], op.peer, self.tag(inst.round, op.slot))
                    self._waiters.submit(functools.partial(self._wait, inst, name, req, tensor))
                    continue
                if op.kind == "compute":
                    assert op.fn is not None
                    op.fn(inst)
            except BaseException as e:  # noqa: BLE001 - reported through on_error
                self._fail(e, f"round {inst.round}, {op.kind} {name}")
                return
            work.extend(self._complete(inst, name))

    def _wait(self, inst: Instance, name: str, req: Any, tensor: torch.Tensor) -> None:
        try:
            req.wait()
        except BaseException as e:  # noqa: BLE001
            self._fail(e, f"round {inst.round}, {self.schedule.ops[name].kind} {name}")
            return
        if self.schedule.ops[name].kind == "recv":
            inst.received[name] = tensor
        with self._lock:
            inst._in_flight -= 1
        self._run(inst, self._complete(inst, name))

    def _complete(self, inst: Instance, name: str) -> list[str]:
        """Marks ``name`` completed; returns the operations that fire because of it."""
        ready: list[str] = []
        rearm = False
        with self._lock:
            if self.error is not None:
                return []
            inst._done.add(name)
            for child in self.schedule.dependents[name]:
                op = self.schedule.ops[child]
                if op.mode == "and":
                    inst._left[child] -= 1
                    if inst._left[child] == 0 and self._take(inst, child):
                        ready.append(child)
                elif child not in inst._fired:
                    dep = next(d for d in op.deps if d.op == name)
                    if (dep.when is None or dep.when(inst)) and self._take(inst, child):
                        ready.append(child)
            if name == self.schedule.rearm_on and not self._closed:
                rearm = True
            self._check_over(inst)
        if rearm:
            self.arm(inst.round + 1)
        return ready

    def _check_over(self, inst: Instance) -> None:
        if inst._over or inst._in_flight:
            return
        if all(n in inst._done for n in self.schedule.final):
            inst._over = True
            self._instances.pop(inst.round, None)
            self._lock.notify_all()

    def _fail(self, e: BaseException, where: str) -> None:
        with self._lock:
            if self.error is not None:
                return
            self.error = e
            #: Where the first failure happened (round and operation), and the rounds then.
            self.error_where = f"{where}; {self.describe()}"
            self._lock.notify_all()
        if self._on_error is not None:
            self._on_error(e)


__all__ = ["Dep", "Executor", "Instance", "Op", "Schedule", "TAG_LIMIT", "compute", "nop", "recv", "send"]
