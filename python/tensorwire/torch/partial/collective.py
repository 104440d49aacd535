"""Solo and majority all-reduce (Li et al. 2019, seed 002, section 4) on torch.distributed point-to-point.

One rank's schedule (:func:`partial_allreduce_schedule`) has two parts, both shaped by
the core crate so the simulator uses the same schedules:

- **activation**: a trigger ``N0`` (internal activation: this rank's call starts the
  round), a receive ``R<p>`` from every rank that can be this rank's parent in some
  activation tree, and a send ``S<c>`` to every rank that can be its child
  (``_core.activation_tree``: binomial trees rooted at any initiator, any number of
  ranks). ``S<c>`` fires on ``N0`` or on any ``R<p>`` through which ``c`` is this rank's
  child in some tree (or logic; consumable, so each fires once per round). ``N1`` (the
  collective's activation) fires on ``N0`` or on the first activation received.
- **all-reduce**: ``SNAP`` (takes this rank's send buffer) after ``N1``, then the steps of
  ``_core.collective_schedule(algorithm, n, rank)``: per step, sends and receives of
  chunk ranges, each receive reduced into (or copied over) the working buffer after the
  step's sends completed; ``PUB`` publishes the result.

A round is *retired* after ``PUB`` (``RETIRE``): every send not fired yet fires then,
carrying a "retired" mark instead of an activation. Each edge of the activation graph
therefore carries exactly one message per round, every receive posted is matched, and a
round can be closed without cancelling anything (Gloo cannot cancel a receive). The
schedule is persistent: ``N1`` of round ``r`` arms round ``r + 1``.

Semantics (what the simulator mirrors) are in :class:`PartialAllreduce`'s docstring and in
``docs/partial-collectives.md``.
"""

from __future__ import annotations

import datetime
import functools
import threading
import zlib
from dataclasses import dataclass
from typing import Callable, Literal, Optional, Sequence

import torch
import torch.distributed as dist

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.limits import check_timeout
from tensorwire.torch import exit_guard
from tensorwire.torch.coordinator import CommunicationError
from tensorwire.torch.partial.schedule import Dep, Executor, Instance, Op, Schedule, compute, nop, recv, send
from tensorwire.torch.transport import release_groups

Kind = Literal["solo", "majority"]
KINDS: tuple[str, ...] = ("solo", "majority")

#: Activation message payloads.
ACTIVATE, RETIRED = 1, 0
_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_MASK = (1 << 64) - 1


class PartialCollectiveError(CommunicationError):
    """A partial collective failed (a peer died, a timeout) or was used after close()."""


@dataclass(frozen=True)
class PartialResult:
    """The outcome of one round, the same on every rank that sees it.

    ``tensor``: the sum over all ranks of what each contributed in the round (its send
    buffer: its tensors not yet contributed, zero if none), shaped like the caller's
    tensor. ``round``: the round's number (a rank's ``k``-th call, counting from 0, gets
    round ``k``). ``contributors``: the sorted ranks whose call for this round had
    arrived when their part of the round ran (the *active* processes of Li et al. 2019, seed 002;
    ``len(contributors)`` is the round's NAP).
    """

    tensor: torch.Tensor
    round: int
    contributors: tuple[int, ...]

    @property
    def nap(self) -> int:
        """Number of active processes: ranks whose call had arrived in time."""
        return len(self.contributors)


def splitmix64(x: int) -> int:
    """SplitMix64 of a 64-bit integer (the shared random source of majority rounds)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def majority_initiator(seed: int, round: int, n: int) -> int:
    """The rank designated to initiate majority round ``round``:
    ``splitmix64(splitmix64(seed) ^ round) mod n`` (the same on every rank)."""
    return splitmix64(splitmix64(seed & _MASK) ^ round) % n


def chunk_bounds(length: int, chunks: int) -> list[int]:
    """Element offsets of ``chunks`` nearly equal chunks of ``length`` elements, torch's
    ``tensor_split`` convention: the first ``length % chunks`` chunks are one longer."""
    q, r = divmod(length, chunks)
    return [c * q + min(c, r) for c in range(chunks + 1)]


def activation_edges(rank: int, n: int) -> tuple[list[int], list[int], dict[int, set[int]]]:
    """This rank's activation graph from the core's trees: (possible parents, possible
    children, forward rule ``parent -> children to send to when activated by it``)."""
    parents: set[int] = set()
    children: set[int] = set()
    forward: dict[int, set[int]] = {}
    for initiator in range(n):
        parent, kids = _core.activation_tree(rank, n, initiator)
        children.update(kids)
        if parent is not None:
            parents.add(parent)
            forward.setdefault(parent, set()).update(kids)
    return sorted(parents), sorted(children), forward


def _work_range(inst: Instance, a: int, b: int) -> torch.Tensor:
    return inst.data["work"][a:b]  # type: ignore[no-any-return]


def _empty(inst: Instance, m: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.empty(m, dtype=dtype)


def partial_allreduce_schedule(
    rank: int,
    n: int,
    length: int,
    dtype: torch.dtype,
    snapshot: Callable[[Instance], None],
    publish: Callable[[Instance], None],
    algorithm: str = "recursive-doubling",
    gated: bool = False,
) -> Schedule:
    """The persistent schedule of one rank of a partial all-reduce of ``length`` elements.

    ``snapshot(instance)`` must put the round's working buffer (``length`` elements of
    ``dtype``) in ``instance.data["work"]``; ``publish(instance)`` reads the reduced
    buffer from there. ``gated``: ``SNAP`` also waits for the trigger ``GATE`` (the
    staleness bound); otherwise ``GATE`` fires when the round is armed. Message slots: 0
    for activations, ``1 + step * chunks + first chunk`` for the all-reduce's messages.
    """
    parents, children, forward = activation_edges(rank, n)
    _, own = _core.activation_tree(rank, n, rank)

    def is_activation(name: str) -> Callable[[Instance], bool]:
        return lambda inst: int(inst.received[name][0]) == ACTIVATE

    def act_payload(inst: Instance) -> torch.Tensor:
        mark = RETIRED if inst.completed("RETIRE") else ACTIVATE
        return torch.tensor([mark], dtype=torch.int64)

    ops: list[Op] = [nop("N0", trigger=True)]
    for p in parents:
        ops.append(recv(f"R{p}", p, 0, lambda inst: torch.zeros(1, dtype=torch.int64)))
    for c in children:
        deps: list[str | Dep] = ["N0"] if c in own else []
        deps += [Dep(f"R{p}", is_activation(f"R{p}")) for p in parents if c in forward.get(p, ())]
        deps.append("RETIRE")
        ops.append(send(f"S{c}", c, 0, act_payload, deps, mode="or"))
    ops.append(nop("N1", ["N0"] + [Dep(f"R{p}", is_activation(f"R{p}")) for p in parents], mode="or"))
    ops.append(nop("GATE", trigger=True) if gated else nop("GATE"))
    ops.append(compute("SNAP", snapshot, ["N1", "GATE"]))

    chunks, steps = _core.collective_schedule(algorithm, n, rank)
    bounds = chunk_bounds(length, chunks)
    prev = "SNAP"
    for s, (sends, recvs) in enumerate(steps):
        send_names: list[str] = []
        for j, (to, c0, c1) in enumerate(sends):
            a, b = bounds[c0], bounds[c1]
            if a == b:
                continue  # an empty chunk range: the peer skips its receive too
            for d in to:
                name = f"s{s}.send{j}.{d}"
                ops.append(send(name, d, 1 + s * chunks + c0, functools.partial(_work_range, a=a, b=b), [prev]))
                send_names.append(name)
        applies: list[str] = []
        for j, (src, c0, c1, reduce) in enumerate(recvs):
            a, b = bounds[c0], bounds[c1]
            if a == b:
                continue
            rname, aname = f"s{s}.recv{j}", f"s{s}.apply{j}"
            # Posted when the round starts here, so a peer's data never waits for the
            # receive to be posted (Gloo's rendezvous would add a one-way delay per step).
            ops.append(recv(rname, src, 1 + s * chunks + c0, functools.partial(_empty, m=b - a, dtype=dtype), ["SNAP"]))

            def apply(inst: Instance, a: int = a, b: int = b, rname: str = rname, reduce: bool = reduce) -> None:
                if reduce:
                    inst.data["work"][a:b].add_(inst.received.pop(rname))
                else:
                    inst.data["work"][a:b].copy_(inst.received.pop(rname))

            # After the step's sends (they read the buffer) and the previous apply (one
            # writer at a time, in the schedule's order: results equal on every rank).
            ops.append(compute(aname, apply, list(dict.fromkeys([rname, prev, *send_names, *applies[-1:]]))))
            applies.append(aname)
        end = f"s{s}.end"
        ops.append(nop(end, [*send_names, *applies] or [prev]))
        prev = end
    ops.append(compute("PUB", publish, [prev]))
    ops.append(nop("RETIRE", ["PUB"], trigger=True))
    final = [f"R{p}" for p in parents] + [f"S{c}" for c in children] + ["RETIRE"]
    return Schedule(ops, final=final, rearm_on="N1", slots=1 + len(steps) * chunks)


class PartialAllreduce:
    """Solo or majority all-reduce of ``numel`` elements among the ranks of ``group``.

    ``result = pa(tensor)`` contributes ``tensor`` (``numel`` elements, any shape and
    device; summed in ``dtype`` on the CPU) and returns a :class:`PartialResult`.

    Semantics, per rank: calls are numbered 0, 1, 2, ...; call ``k`` returns round ``k``'s
    result. Every call adds its tensor to this rank's *send buffer*. When round ``k`` runs
    on this rank (its ``SNAP``), it takes the whole send buffer (then empty) as this
    rank's contribution; the rank is a contributor if its call ``k`` had arrived by then.
    A call that arrives after its round ran on this rank gets that round's result at once
    and its tensor goes into a later round: nothing is lost, nothing counted twice.

    Who starts round ``k`` (the *initiator*; the activation then spreads along the core's
    binomial tree rooted at it, and every other rank joins with its send buffer):

    - ``solo``: any rank whose call ``k`` arrives before the round reached it
      (wait-free; simultaneous initiators start it once).
    - ``majority``: only rank ``majority_initiator(seed, k, n)``, when its call ``k``
      arrives; the others' calls ``k`` wait for it (about half of the ranks contribute).
    ``max_lag=S`` (either kind) bounds staleness: a rank takes part in round ``k`` (takes
    its send buffer) only once it has called for round ``k - S``, so no round completes
    more than ``S`` rounds ahead of any rank's calls and every tensor is contributed at
    most ``S`` rounds after its own (``S = 0``: synchronous rounds).

    A rank in :meth:`flush` or :meth:`close` never holds others up: it counts as arrived
    (majority) and as having called (``max_lag``). Result storage: a rank keeps the results of
    rounds that ran but it has not called for yet (``numel`` elements each) until it
    calls for them or flushes.

    ``group``: the ranks taking part (None: all); the collective runs on dedicated Gloo
    groups made from it, so it never mixes with other traffic. ``seed``: the shared
    random source of majority rounds. ``algorithm``: the core's all-reduce step schedule
    (``recursive-doubling`` as in Li et al. 2019, seed 002, ``ring``, ``halving-doubling``, ``tree``,
    ``double-tree``). ``timeout_s``: how long any wait may take, including the wait for
    the next round's activation (seconds). Every rank of ``group`` must construct it,
    in the same order as other collectives.
    """

    def __init__(
        self,
        numel: int,
        kind: str = "solo",
        group: Optional[dist.ProcessGroup] = None,
        seed: int = 0,
        *,
        dtype: torch.dtype = torch.float32,
        algorithm: str = "recursive-doubling",
        max_lag: Optional[int] = None,
        timeout_s: float = 1800.0,
    ) -> None:
        if isinstance(numel, bool) or not isinstance(numel, int) or numel < 1:
            raise InputError("numel", f"{numel!r} must be an integer >= 1")
        if kind not in KINDS:
            raise InputError("kind", f"{kind!r} is not a partial collective; choose solo or majority")
        if dtype not in _DTYPES:
            raise InputError("dtype", f"{dtype} is not supported; choose float16, bfloat16, float32 or float64")
        if max_lag is not None and (isinstance(max_lag, bool) or not isinstance(max_lag, int) or max_lag < 0):
            raise InputError("max_lag", f"{max_lag!r} must be an integer >= 0 or None")
        timeout_s = check_timeout(timeout_s)
        self.numel, self.kind, self.seed, self.dtype = numel, kind, int(seed), dtype
        self.algorithm, self.max_lag, self.timeout_s = algorithm, max_lag, float(timeout_s)
        pg, ctl, ranks = self._make_groups(group, datetime.timedelta(seconds=timeout_s))
        self._ctl = ctl
        self._check_alike(ranks)
        self._start(pg, ctl, ranks)

    def _check_alike(self, ranks: Sequence[int]) -> None:
        """Refuses, on every rank alike, settings that differ between the ranks: rounds of
        different sizes, kinds or seeds cannot meet (a rank returned a round of the wrong
        size, then another aborted inside Gloo). Each setting's largest and (negated)
        smallest value over the ranks, by :meth:`_ctl_max`."""
        settings = {
            "numel": self.numel,
            "kind": KINDS.index(self.kind),
            "seed": self.seed % 2**62,
            "dtype": list(_DTYPES).index(self.dtype),
            "algorithm": zlib.crc32(self.algorithm.encode()),
            "max_lag": -1 if self.max_lag is None else self.max_lag,
        }
        for key, value in settings.items():
            if self._ctl_max(value) != -self._ctl_max(-value):
                raise InputError(
                    key,
                    f"differs between the ranks of {list(ranks)} ({getattr(self, key)!r} on this rank); every rank "
                    "must construct the partial all-reduce alike",
                )

    def _make_groups(
        self, group: Optional[dist.ProcessGroup], timeout: datetime.timedelta
    ) -> tuple[dist.ProcessGroup, dist.ProcessGroup, list[int]]:
        """Two dedicated Gloo groups: point-to-point schedules, and flush's collective."""
        if not dist.is_initialized():
            raise InputError(
                "group", "torch.distributed is not initialized; call tensorwire.torch.init_process_group() first"
            )
        ranks = list(range(dist.get_world_size())) if group is None else dist.get_process_group_ranks(group)
        local = group is not None
        made = [
            dist.new_group(ranks, backend="gloo", timeout=timeout, use_local_synchronization=local) for _ in range(2)
        ]
        pg, ctl = made
        if not isinstance(pg, dist.ProcessGroup) or not isinstance(ctl, dist.ProcessGroup):
            raise InputError("group", "this rank is not a member of the group")
        return pg, ctl, ranks

    def _ctl_max(self, value: int) -> int:
        """The largest ``value`` over the ranks (blocking; every rank calls it)."""
        t = torch.tensor([value], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self._ctl)
        return int(t.item())

    def _start(self, pg: dist.ProcessGroup, ctl: dist.ProcessGroup, ranks: Sequence[int]) -> None:
        self._pg, self._ctl = pg, ctl
        #: Global ranks of the members; ``rank`` and the results' contributors are indices in it.
        self.ranks: tuple[int, ...] = tuple(ranks)
        self.rank = pg.rank()
        self.world_size = len(ranks)
        n = self.world_size
        self._length = self.numel + 2 * n  # data | arrived flags | flush marks

        self._cond = threading.Condition(threading.RLock())
        self._pending = torch.zeros(self.numel, dtype=self.dtype)
        self._calls = 0  # calls made since construction (= the next call's round)
        self._snap = 0  # the next round to run on this rank
        self._results: dict[int, PartialResult] = {}
        self._published = -1  # every round up to this one is published here
        self._unordered: dict[int, tuple[PartialResult, list[int]]] = {}
        self._waiting: Optional[int] = None  # the round the call in progress waits for
        self._flushing = False
        self._flushes = 0  # flush() and close() calls so far (every rank counts the same)
        self._sealed = False
        self._flush_round: Optional[int] = None
        self._closed = False
        self._error: Optional[BaseException] = None

        schedule = partial_allreduce_schedule(
            self.rank,
            n,
            self._length,
            self.dtype,
            self._snapshot,
            self._publish,
            self.algorithm,
            gated=self.max_lag is not None,
        )
        self._exec = Executor(schedule, pg, name=f"tensorwire-{self.kind}", on_error=self._failed, on_arm=self._armed)
        self._exec.arm(0)
        exit_guard.track(self)

    # --- public -------------------------------------------------------------------

    def __call__(self, tensor: torch.Tensor) -> PartialResult:
        """Contributes ``tensor`` and returns the result of this rank's next round."""
        if not isinstance(tensor, torch.Tensor) or tensor.numel() != self.numel:
            raise InputError(
                "tensor",
                f"need a tensor of {self.numel} elements (got {getattr(tensor, 'shape', type(tensor).__name__)})",
            )
        flat = tensor.detach().reshape(-1).to("cpu", self.dtype)
        with self._cond:
            self._check()
            if self._flushing:
                raise InputError("call", "flush() or close() is running on this rank")
            k = self._calls
            self._calls += 1
            self._pending.add_(flat)
            self._open_gates()
            self._waiting = k
            try:
                self._maybe_initiate()
                self._wait(lambda: k in self._results, f"round {k}")
                res = self._results.pop(k)
            finally:
                self._waiting = None
        out = res.tensor.view(tensor.shape).to(tensor.device, tensor.dtype)
        return PartialResult(out, res.round, res.contributors)

    def flush(self) -> PartialResult:
        """Runs one synchronous round that includes everything still pending on every
        rank; every rank must call it. Returns the sum of that round and of the rounds
        that ran after every rank's last call (which no call returned), so that the
        results of all calls plus the flush account for every tensor exactly once.
        ``round`` is the flush round's number; ``contributors`` all ranks."""
        with self._cond:
            self._check()
            return self._flush()

    def close(self) -> None:
        """Shuts down on every rank (collective): a last synchronous round (its result is
        dropped: flush() first to keep it), then the next round is retired without
        activation so that no receive stays posted, and the progress threads end.
        Raises :class:`PartialCollectiveError` if that takes longer than ``timeout_s``."""
        with self._cond:
            if self._closed:
                return
            self._check()
            final = self._flush()
            self._closed = True
        exit_guard.untrack(self)
        if not self._exec.fire(final.round + 1, "RETIRE"):
            raise PartialCollectiveError(f"close(): round {final.round + 1} could not be retired ({self._describe()})")
        quiet = self._exec.wait_quiet(self.timeout_s)
        ended = self._exec.close(timeout_s=10.0)
        if self._exec.error is not None:
            raise PartialCollectiveError(
                f"close() failed at {self._exec.error_where}: {self._exec.error}"
            ) from self._exec.error
        if not quiet:
            raise PartialCollectiveError(
                f"close(): messages still in flight after {self.timeout_s:g} s ({self._exec.describe()})"
            )
        if not ended:
            raise PartialCollectiveError("close(): progress threads did not end")
        release_groups(self._pg, self._ctl)

    def stop_at_exit(self, wait_s: float) -> bool:
        """For :mod:`~tensorwire.torch.exit_guard`, where peers may be gone: no last round,
        only the progress threads stopped (their posted receives keep any waiting one
        waiting); True if none was left waiting. ``wait_s`` bounds the wait for them."""
        with self._cond:
            self._closed = True
        ended = self._exec.close(timeout_s=min(wait_s, 1.0))
        if ended:
            release_groups(self._pg, self._ctl)
        return ended

    @property
    def rounds_run(self) -> int:
        """Rounds that have run on this rank so far."""
        return self._snap

    @property
    def lag(self) -> int:
        """Rounds that ran on this rank but were not called for yet (results kept)."""
        with self._cond:
            return max(0, self._published + 1 - self._calls)

    @property
    def progress_threads(self) -> int:
        """Progress threads started so far."""
        return self._exec.threads

    def __enter__(self) -> "PartialAllreduce":
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()

    # --- internals ------------------------------------------------------------------

    def _check(self) -> None:
        if self._error is not None:
            raise PartialCollectiveError(
                f"partial all-reduce failed at {self._exec.error_where}: {self._error}"
            ) from self._error
        if self._closed:
            raise PartialCollectiveError("the partial all-reduce is closed")

    def _wait(self, predicate: Callable[[], bool], what: str) -> None:
        ok = self._cond.wait_for(lambda: predicate() or self._error is not None, timeout=self.timeout_s)
        if self._error is not None:
            raise PartialCollectiveError(
                f"partial all-reduce failed at {self._exec.error_where}: {self._error} ({self._describe()})"
            ) from self._error
        if not ok:
            raise PartialCollectiveError(f"{what} did not complete within {self.timeout_s:g} s ({self._describe()})")

    def _describe(self) -> str:
        return (
            f"rank {self.rank}: calls {self._calls}, next round {self._snap}, published {self._published}, "
            f"flushing {self._flushing}, sealed {self._sealed}, flush round {self._flush_round}; {self._exec.describe()}"
        )

    def _failed(self, e: BaseException) -> None:
        with self._cond:
            self._error = e
            self._cond.notify_all()

    def _armed(self, round: int) -> None:
        with self._cond:
            self._open_gates()

    def _open_gates(self) -> None:
        """Under ``max_lag``: lets this rank take part in each armed round ``m`` it has
        called for round ``m - max_lag`` for (or any, while flushing)."""
        if self.max_lag is None:
            return
        for m in self._exec.rounds():
            if self._flushing or self._calls >= m - self.max_lag + 1:
                self._exec.fire(m, "GATE", inline=False)

    def _maybe_initiate(self, inline: bool = True) -> None:
        """Fires this rank's internal activation of its next round if the rules allow
        (``inline=False``: on a progress thread, when called from a round's own thread)."""
        m = self._snap
        if self._published != m - 1:
            return  # round m - 1 is still running here; decided when it is published
        inst = self._exec.instance(m)
        if inst is None or inst.fired("N1") or (self._flushing and self._flush_round is not None):
            return
        if self._sealed:
            self._exec.fire(m, "N0", inline)
            return
        arrived = self._calls > m
        if self.kind == "majority":
            if majority_initiator(self.seed, m, self.world_size) == self.rank and (arrived or self._flushing):
                self._exec.fire(m, "N0", inline)
        elif arrived:
            self._exec.fire(m, "N0", inline)

    def _snapshot(self, inst: Instance) -> None:
        n, r = self.world_size, inst.round
        work = torch.zeros(self._length, dtype=self.dtype)
        with self._cond:
            assert r == self._snap, (r, self._snap)
            work[: self.numel].copy_(self._pending)
            self._pending.zero_()
            arrived = self._calls > r or self._flushing
            mark = self._flush_mark() if self._flushing else 0
            self._snap = r + 1
        work[self.numel + self.rank] = float(arrived)
        work[self.numel + n + self.rank] = float(mark)
        inst.data["work"] = work

    def _publish(self, inst: Instance) -> None:
        n, r, base = self.world_size, inst.round, self.numel
        work: torch.Tensor = inst.data.pop("work")
        meta = work[base:].to(torch.float64).tolist()
        contributors = tuple(q for q in range(n) if meta[q] > 0.5)
        marks = [int(round(x)) for x in meta[n:]]
        res = PartialResult(work[:base], r, contributors)
        with self._cond:
            # A rank may run round r + 1 while its round r is finishing (it was activated
            # by a rank that finished r): results are taken in round order.
            self._unordered[r] = (res, marks)
            while self._published + 1 in self._unordered:
                q = self._published + 1
                res, marks = self._unordered.pop(q)
                # The flush round: the first whose every part was taken while its rank was
                # in this same flush (a mark from the previous flush does not count).
                if self._flushing and self._flush_round is None and all(m == self._flush_mark() for m in marks):
                    self._flush_round = q
                if q >= self._calls or q == self._waiting:
                    self._results[q] = res  # kept until called for, or until flush
                self._published = q
            self._cond.notify_all()
            self._maybe_initiate(inline=False)

    def _flush_mark(self) -> int:
        """This flush's mark in a round's metadata: 1..250, exact in every dtype; marks of
        consecutive flushes differ, which is all the flush round needs."""
        return (self._flushes - 1) % 250 + 1

    def _flush(self) -> PartialResult:
        """The flush protocol; the condition's lock is held (released while waiting)."""
        self._flushing = True
        self._flushes += 1
        self._open_gates()
        self._maybe_initiate()
        calls = self._calls
        self._cond.release()
        try:
            # Every rank has stopped calling: a barrier that also finds the largest number
            # of calls any rank made (rounds from there on were returned by no call).
            most = self._ctl_max(calls)
        finally:
            self._cond.acquire()
        self._sealed = True
        self._maybe_initiate()
        self._wait(lambda: self._flush_round is not None and self._flush_round in self._results, "flush round")
        final = self._flush_round
        assert final is not None
        total = torch.zeros(self.numel, dtype=self.dtype)
        for r in range(most, final + 1):
            total.add_(self._results[r].tensor)
        self._results = {r: v for r, v in self._results.items() if r > final}
        self._calls = final + 1
        self._flushing = self._sealed = False
        self._flush_round = None
        self._open_gates()
        return PartialResult(total, final, tuple(range(self.world_size)))


__all__ = [
    "KINDS",
    "PartialAllreduce",
    "PartialCollectiveError",
    "PartialResult",
    "activation_edges",
    "chunk_bounds",
    "majority_initiator",
    "partial_allreduce_schedule",
    "splitmix64",
]
