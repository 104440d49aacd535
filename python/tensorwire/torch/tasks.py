"""Guo 2019's task API over the core's scheduler (no torch needed here).

A gradient tensor is *partitioned* into tasks of at most ``partition_bytes``; when its
gradient exists the framework calls :meth:`TaskScheduler.notify_ready`; :meth:`TaskScheduler.poll`
says which groups of tasks to *start* now (one group is one communication operation; fusion
packs several tasks into one); when a started group is done :meth:`TaskScheduler.notify_finish`
returns its credit. The order, the credit and the fusion buffer are decided by
``tensorwire._core.Scheduler``: the same state machine the simulator runs (DESIGN.md
principle 1). Nothing here decides an order by itself.

>>> cfg = SchedulerConfig.make("priority", partition=4, credit=8)
>>> s = TaskScheduler(cfg, sizes_bytes=[8, 4], layers=[0, 1])
>>> [(t.tensor, t.offset_bytes, t.nbytes) for t in s.tasks]
[(0, 0, 4), (0, 4, 4), (1, 0, 4)]
>>> s.notify_ready(0, tensor=1); s.notify_ready(0, tensor=0)
>>> [[(i, t.tensor, t.piece) for i, t in g.tasks] for g in s.poll()]   # layer 0 first, 8 bytes of credit
[[(0, 0, 0)], [(0, 0, 1)]]
>>> s.notify_finish(s.last_polled[0]); [[t.tensor for _, t in g.tasks] for g in s.poll()]
[[1]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal, Optional, Sequence, Union

from tensorwire import _core
from tensorwire._core import InputError

Mode = Literal["priority", "fifo", "fusion"]
MODES: tuple[Mode, ...] = ("priority", "fifo", "fusion")

#: Defaults of ``mode="priority"``: ByteScheduler-style pieces and a few of them in flight.
PRIORITY_PARTITION_BYTES = 4 * 2**20
PRIORITY_CREDIT_BYTES = 16 * 2**20
#: Defaults of ``mode="fusion"``: Horovod's before 0.21 (HOROVOD_FUSION_THRESHOLD = 64 MiB,
#: HOROVOD_CYCLE_TIME = 5 ms; the simulator's ``cycle`` default too). Horovod 0.21 moved to
#: 128 MiB and 1 ms.
FUSION_BYTES = 64 * 2**20
FUSION_CYCLE_S = 5e-3

Size = Union[int, str, None]


def to_bytes_option(value: Size, field: str) -> Optional[int]:
    """``None``, a positive integer of bytes, or text such as ``"4MiB"`` -> bytes or ``None``."""
    if value is None:
        return None
    if isinstance(value, str):
        n = _core.parse_bytes(field, value)
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(field, f"{value!r} must be a size in bytes (an integer) or text such as '4MiB'")
    else:
        n = float(value)
    if not math.isfinite(n) or n < 1 or n != int(n):
        raise InputError(field, f"{value!r} must be a whole number of bytes >= 1")
    return int(n)


def to_seconds_option(value: Union[float, int, str, None], field: str) -> Optional[float]:
    """``None``, seconds (a number >= 0) or text such as ``"5ms"`` -> seconds or ``None``."""
    if value is None:
        return None
    if isinstance(value, str):
        return _core.parse_duration(field, value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InputError(field, f"{value!r} must be a number of seconds >= 0 or text such as '5ms'")
    return float(value)


@dataclass(frozen=True)
class SchedulerConfig:
    """How tasks are cut and released; validated by :meth:`make`.

    ``partition_bytes``: largest piece (None: whole tensors). ``credit_bytes``: most bytes
    in flight (a group larger than the credit still goes alone). ``max_groups``: most
    operations in flight; without a credit an all-reduce transport runs one at a time, as
    on an NCCL stream, and a parameter server pushes everything at once (the simulator's
    rule: :meth:`for_transport`), unless ``in_flight`` says otherwise (the simulator's
    ``inflight``). ``fusion_bytes``/``fusion_cycle_s``: Horovod's buffer threshold (bytes)
    and cycle (seconds), only in mode ``fusion``.
    """

    mode: Mode
    partition_bytes: Optional[int]
    credit_bytes: Optional[int]
    fusion_bytes: Optional[int] = None
    fusion_cycle_s: Optional[float] = None
    #: Most operations in flight as asked for (None: the transport's rule, :meth:`for_transport`).
    in_flight: Optional[int] = None
    max_groups: Optional[int] = None

    @classmethod
    def make(
        cls,
        mode: str = "priority",
        partition: Size = None,
        credit: Size = None,
        fusion_bytes: Size = None,
        fusion_cycle_s: Union[float, int, str, None] = None,
        in_flight: Optional[int] = None,
    ) -> SchedulerConfig:
        """Validates the options and fills in the mode's defaults.

        >>> SchedulerConfig.make("fusion")
        SchedulerConfig(mode='fusion', partition_bytes=None, credit_bytes=None, fusion_bytes=67108864, fusion_cycle_s=0.005, in_flight=None, max_groups=None)
        >>> SchedulerConfig.make("fifo", fusion_bytes="1MiB")
        Traceback (most recent call last):
        _core.InputError: fusion_bytes: only with mode='fusion' (mode is 'fifo')
        """
        if mode not in MODES:
            raise InputError("mode", f"{mode!r} is not a mode; choose one of {', '.join(MODES)}")
        part = to_bytes_option(partition, "partition")
        cred = to_bytes_option(credit, "credit")
        fb = to_bytes_option(fusion_bytes, "fusion_bytes")
        fc = to_seconds_option(fusion_cycle_s, "fusion_cycle_s")
        if mode != "fusion":
            for name, v in (("fusion_bytes", fb), ("fusion_cycle_s", fc)):
                if v is not None:
                    raise InputError(name, f"only with mode='fusion' (mode is {mode!r})")
        if mode == "priority":
            part = PRIORITY_PARTITION_BYTES if partition is None else part
            cred = PRIORITY_CREDIT_BYTES if credit is None else cred
        if mode == "fusion":
            fb = FUSION_BYTES if fb is None else fb
            fc = FUSION_CYCLE_S if fc is None else fc
        if in_flight is not None and (isinstance(in_flight, bool) or not isinstance(in_flight, int) or in_flight < 1):
            raise InputError("in_flight", f"{in_flight!r} must be an integer >= 1 (collectives in flight at most)")
        return cls(mode, part, cred, fb, fc, in_flight)

    @classmethod
    def from_strategy(cls, spec: str) -> SchedulerConfig:
        """The scheduler settings of a strategy spec, as the core parses it (the simulator's
        settings for the same spec: one definition of every option and default).

        ``schedule=priority`` is mode ``priority``, ``fusion=`` mode ``fusion``, else
        ``fifo``; ``partition``, ``credit``, ``fusion``/``cycle`` and ``inflight`` as
        written, with the core's defaults; the limit on operations in flight is the core's.

        >>> c = SchedulerConfig.from_strategy("ring:schedule=priority,partition=1MiB,credit=2MiB")
        >>> c.mode, c.partition_bytes, c.credit_bytes
        ('priority', 1048576, 2097152)
        >>> f = SchedulerConfig.from_strategy("ring:fusion=4MiB")
        >>> f.mode, f.fusion_bytes, f.fusion_cycle_s, f.max_groups
        ('fusion', 4194304, 0.005, 1)
        """
        s = _core.Strategy(spec)
        if s.family == "sharded":
            raise InputError(
                "strategy",
                f"{s.name} is sharded data parallelism; the runtime schedules all-reduce and parameter-server strategies",
            )
        mode: Mode = "priority" if s.policy == "priority" else "fusion" if s.fusion_bytes is not None else "fifo"
        given = dict(s.options)
        in_flight = int(given["inflight"]) if "inflight" in given else None
        return cls(
            mode, s.partition_bytes, s.credit_bytes, s.fusion_bytes, s.fusion_cycle_s, in_flight, s.max_in_flight
        )

    def with_limits(self, partition_bytes: Optional[int], credit_bytes: Optional[int]) -> SchedulerConfig:
        """The same mode with another partition and credit (what auto-tuning changes)."""
        max_groups = self.max_groups if credit_bytes is None or self.in_flight is not None else None
        return replace(self, partition_bytes=partition_bytes, credit_bytes=credit_bytes, max_groups=max_groups)

    def for_transport(self, all_reduce: bool, ordered: bool = False) -> SchedulerConfig:
        """``in_flight`` if given; otherwise, without a credit, one operation at a time for
        all-reduce and unbounded for a parameter server (the simulator's rule).

        ``ordered``: the all-reduce transport runs its operations one at a time in start
        order by itself (a stream), so "one at a time" needs no limit here: every ready
        group is committed at once and the next starts the moment the one before ends,
        without the leader's decision on that path. ``in_flight`` and the credit then
        bound what is committed ahead (where priority can still reorder).

        >>> SchedulerConfig.make("fifo").for_transport(all_reduce=True).max_groups
        1
        >>> SchedulerConfig.make("fifo").for_transport(all_reduce=True, ordered=True).max_groups is None
        True
        """
        if self.in_flight is not None:
            return replace(self, max_groups=self.in_flight)
        return replace(self, max_groups=1 if all_reduce and not ordered and self.credit_bytes is None else None)

    @property
    def policy(self) -> str:
        """The core's policy: ``priority``, else ``fifo`` (fusion keeps ready order)."""
        return "priority" if self.mode == "priority" else "fifo"


#: Options of a strategy spec that the runtime runs: its scheduler's, and ``dispatch``, the
#: simulator's cost of the runtime's own dispatch (a setting of the prediction, which the
#: testbed calibrates). Any other option would be predicted but not run.
RUNTIME_OPTIONS = ("schedule", "partition", "credit", "fusion", "cycle", "inflight", "dispatch")


def runtime_strategy(spec: str, names: Optional[Sequence[str]] = ("ring",)) -> SchedulerConfig:
    """:meth:`SchedulerConfig.from_strategy` for a spec the runtime is to run, refusing
    (:class:`InputError` naming ``strategy``) one it would not run as written: a strategy
    other than ``names`` (the transport's: ``ring`` for the all-reduce transport, ``ps`` for
    the parameter server; None: any), or an option outside :data:`RUNTIME_OPTIONS`
    (``ring:compression=8`` would run uncompressed; ``butterfly`` would run Gloo's all-reduce).

    >>> runtime_strategy("ring:schedule=priority,partition=1MiB").mode
    'priority'
    >>> runtime_strategy("ring:compression=8")
    Traceback (most recent call last):
    tensorwire.InputError: strategy: the runtime does not run option(s) compression of 'ring:compression=8'; it runs schedule, partition, credit, fusion, cycle, inflight, dispatch
    """
    s = _core.Strategy(spec)
    if names is not None and s.name not in names:
        raise InputError(
            "strategy",
            f"this transport runs {' or '.join(repr(n) for n in names)} specs, not {s.name!r} (it would be predicted "
            "but not run)",
        )
    unknown = sorted({k for k, _ in s.options} - set(RUNTIME_OPTIONS))
    if unknown:
        raise InputError(
            "strategy",
            f"the runtime does not run option(s) {', '.join(unknown)} of {s.spec!r}; it runs {', '.join(RUNTIME_OPTIONS)}",
        )
    return SchedulerConfig.from_strategy(s.spec)


@dataclass(frozen=True)
class Task:
    """A piece of one tensor: the unit the scheduler releases (offset and size in bytes)."""

    index: int
    tensor: int
    piece: int
    offset_bytes: int
    nbytes: int
    layer: int


@dataclass(frozen=True)
class Group:
    """One communication operation: (iteration, task) pairs, payloads concatenated in order."""

    tasks: tuple[tuple[int, Task], ...]
    nbytes: int


def partition(sizes_bytes: Sequence[int], layers: Sequence[int], piece_bytes: Optional[int] = None) -> list[Task]:
    """Guo 2019's ``partition``: pieces of at most ``piece_bytes`` (core code), listed by
    layer, then tensor; ``Task.tensor`` indexes ``sizes_bytes`` whatever the order.

    >>> [(t.tensor, t.offset_bytes, t.nbytes) for t in partition([10, 3], [1, 0], 4)]
    [(1, 0, 3), (0, 0, 4), (0, 4, 4), (0, 8, 2)]
    """
    if len(sizes_bytes) != len(layers):
        raise InputError("layers", f"needs one layer per tensor ({len(sizes_bytes)} tensors, {len(layers)} layers)")
    order = sorted(range(len(sizes_bytes)), key=lambda i: (layers[i], i))
    raw = _core.partition([int(sizes_bytes[i]) for i in order], [int(layers[i]) for i in order], piece_bytes)
    return [Task(k, order[t], p, off, n, layer) for k, (t, p, off, n, layer) in enumerate(raw)]


class TaskScheduler:
    """Guo 2019's Core for one configuration: tasks, readiness, release order, credit.

    ``sizes_bytes`` and ``layers`` describe the tensors (``layers``: forward position;
    lower goes first under ``priority``). ``element_bytes`` rounds the partition down to
    whole elements. Times are seconds on any clock that only moves forward.
    """

    def __init__(
        self,
        config: SchedulerConfig,
        sizes_bytes: Sequence[int],
        layers: Sequence[int],
        element_bytes: int = 1,
    ) -> None:
        self.config = config
        piece = config.partition_bytes
        if piece is not None:
            piece = max(element_bytes, piece // element_bytes * element_bytes)
        self.piece_bytes = piece
        self.tasks: tuple[Task, ...] = tuple(partition(sizes_bytes, layers, piece))
        by_tensor: list[list[Task]] = [[] for _ in sizes_bytes]
        for t in self.tasks:
            by_tensor[t.tensor].append(t)
        self._by_tensor = by_tensor
        self._core = _core.Scheduler(
            policy=config.policy,
            credit_bytes=config.credit_bytes,
            max_tasks=config.max_groups,
            fusion_bytes=config.fusion_bytes,
            fusion_cycle_s=config.fusion_cycle_s,
        )
        self._in_flight = 0
        #: The groups the last :meth:`poll` returned.
        self.last_polled: list[Group] = []

    def tasks_of(self, tensor: int) -> list[Task]:
        """The tasks of one tensor, in offset order."""
        return self._by_tensor[tensor]

    def notify_ready(self, iteration: int, tensor: int, now_s: float = 0.0) -> None:
        """Every task of ``tensor`` in ``iteration`` is ready at ``now_s``."""
        for t in self._by_tensor[tensor]:
            self._core.notify_ready(iteration, t.index, t.layer, t.nbytes, now_s)

    def poll(self, now_s: float = 0.0) -> list[Group]:
        """The groups to start now, in order (each counts against the credit until finished)."""
        groups = [
            Group(tuple((it, self.tasks[task]) for it, task, _ in raw), sum(n for _, _, n in raw))
            for raw in self._core.poll(now_s)
        ]
        self._in_flight += len(groups)
        self.last_polled = groups
        return groups

    def next_deadline(self) -> Optional[float]:
        """When to poll again for a fusion-cycle flush (seconds), if anything waits in the buffer."""
        return self._core.next_deadline()

    def notify_finish(self, group: Group) -> None:
        """A started group is done: its credit returns."""
        self._core.notify_finish(group.nbytes)
        self._in_flight -= 1

    @property
    def idle(self) -> bool:
        """Nothing waiting and nothing in flight (a new configuration may take over)."""
        return self._in_flight == 0 and self._core.waiting() == 0


__all__ = [
    "FUSION_BYTES",
    "FUSION_CYCLE_S",
    "MODES",
    "Group",
    "Mode",
    "PRIORITY_CREDIT_BYTES",
    "PRIORITY_PARTITION_BYTES",
    "SchedulerConfig",
    "Task",
    "TaskScheduler",
    "partition",
]
