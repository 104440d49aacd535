"""In-process stand-ins for Gloo groups: ranks are threads of one process.

``LoopbackGroup`` has the point-to-point methods the schedule executor uses (``send``,
``recv``, ``rank``); a send completes at once (the message is copied into the receiver's
mailbox), a receive when a message with its (source, tag) is there. Messages are
delivered in order per (source, destination, tag), like Gloo. ``LoopbackPartialAllreduce``
is a :class:`PartialAllreduce` over them, so the protocol can be tested with many ranks
and rounds in a second, without processes.
"""

from __future__ import annotations

import datetime
import random
import threading
import time
from collections import defaultdict, deque
from typing import Any, Optional

import torch
from tensorwire.torch.partial.collective import PartialAllreduce


class _Fabric:
    def __init__(
        self, n: int, jitter_s: float = 0.0, seed: int = 0, slow_recv: Optional[dict[int, float]] = None
    ) -> None:
        self.n = n
        self.slow_recv = dict(slow_recv or {})
        self.cond = threading.Condition()
        self.boxes: dict[tuple[int, int, int], deque[torch.Tensor]] = defaultdict(deque)
        self.jitter_s = jitter_s
        self.rng = random.Random(seed)
        self.max_values: list[int] = []
        self.max_gen = 0
        self.max_out: dict[int, int] = {}
        self.messages = 0


class _Done:
    def wait(self, timeout: Optional[datetime.timedelta] = None) -> bool:
        return True


class _Recv:
    def __init__(self, fabric: _Fabric, key: tuple[int, int, int], tensor: torch.Tensor) -> None:
        self.fabric, self.key, self.tensor = fabric, key, tensor

    def wait(self, timeout: Optional[datetime.timedelta] = None) -> bool:
        f = self.fabric
        if self.key[1] in f.slow_recv:
            time.sleep(f.slow_recv[self.key[1]])
        with f.cond:
            if not f.cond.wait_for(lambda: bool(f.boxes[self.key]), timeout=30.0):
                raise RuntimeError(f"loopback receive {self.key} timed out")
            self.tensor.copy_(f.boxes[self.key].popleft())
        return True


class LoopbackGroup:
    def __init__(self, fabric: _Fabric, rank: int) -> None:
        self.fabric, self._rank = fabric, rank

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self.fabric.n

    def send(self, tensors: list[torch.Tensor], dst: int, tag: int) -> Any:
        f = self.fabric
        if f.jitter_s:
            time.sleep(f.rng.random() * f.jitter_s)
        with f.cond:
            f.boxes[(self._rank, dst, tag)].append(tensors[0].clone())
            f.messages += 1
            f.cond.notify_all()
        return _Done()

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int) -> Any:
        return _Recv(self.fabric, (src, self._rank, tag), tensors[0])

    def all_max(self, value: int) -> int:
        """A blocking max over the ranks (flush's collective)."""
        f = self.fabric
        with f.cond:
            gen = f.max_gen
            f.max_values.append(value)
            if len(f.max_values) == f.n:
                f.max_out[gen] = max(f.max_values)
                f.max_values = []
                f.max_gen += 1
                f.cond.notify_all()
            f.cond.wait_for(lambda: gen in f.max_out, timeout=60.0)
            return f.max_out[gen]


class LoopbackPartialAllreduce(PartialAllreduce):
    """A :class:`PartialAllreduce` whose ranks are threads on a shared fabric."""

    def __init__(self, fabric: _Fabric, rank: int, numel: int, kind: str = "solo", **kw: Any) -> None:
        self._fabric_rank = (fabric, rank)
        super().__init__(numel, kind, **kw)

    def _make_groups(self, group: Any, timeout: datetime.timedelta) -> Any:
        fabric, rank = self._fabric_rank
        g = LoopbackGroup(fabric, rank)
        return g, g, list(range(fabric.n))

    def _ctl_max(self, value: int) -> int:
        return self._ctl.all_max(value)  # type: ignore[attr-defined,no-any-return]

    def _release_groups(self) -> None:
        pass


def fabric(n: int, jitter_s: float = 0.0, seed: int = 0, slow_recv: Optional[dict[int, float]] = None) -> _Fabric:
    """A shared fabric for ``n`` loopback ranks; a send sleeps up to ``jitter_s``; a
    receive at rank ``r`` sleeps ``slow_recv[r]`` seconds first."""
    return _Fabric(n, jitter_s, seed, slow_recv)
