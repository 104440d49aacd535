"""What every job process shares: its rank, the workload as tasks, gradient buffers, timing.

Tasks are the core's partition of the workload, the same one the simulator uses: each
tensor, or each piece of it with ``partition=SIZE``, is one task
(:func:`tensorwire._core.partition`); parameter servers take theirs, with each task's
server, from the strategy (``_core.Strategy.ps_tasks``: ``placement=sharded`` cuts every
tensor into ``num_ps`` even pieces). Per layer they are released in the simulator's order:
the layer's tensors in reverse, the pieces of one tensor in order.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tensorwire import _core
from tensorwire.testbed.jobs.spec import JobSpec
from tensorwire.workload import Workload

if TYPE_CHECKING:  # torch is an optional extra: imported only inside job processes
    import torch

#: Bytes per gradient element (float32).
ELEMENT_BYTES = 4


@dataclass(frozen=True)
class Task:
    """One synchronised piece: ``bytes`` bytes at ``offset`` of tensor ``tensor``."""

    id: int
    tensor: int
    piece: int
    offset: int
    bytes: int
    layer: int


class Context:
    """State of one job process (any rank)."""

    def __init__(self, spec: JobSpec, rank: int) -> None:
        self.spec = spec
        self.rank = rank
        self.workload = Workload.from_dict(spec.workload)
        self.options = spec.options
        sizes = [t.bytes for t in self.workload.tensors]
        owner = [i for i, layer in enumerate(self.workload.layers) for _ in layer.tensors]
        self.tensor_bytes = sizes
        strategy = _core.Strategy(spec.strategy)
        #: Parameter servers: the server of each task (the simulator's rule); else empty.
        self.server_of_task: list[int] = []
        if strategy.family == "parameter-server":
            with_servers = strategy.ps_tasks(sizes, owner)
            pieces = [t[:5] for t in with_servers]
            self.server_of_task = [t[5] for t in with_servers]
        else:
            pieces = _core.partition(sizes, owner, spec.options.partition_bytes)
        self.tasks = [
            Task(i, tensor, piece, offset, nbytes, layer)
            for i, (tensor, piece, offset, nbytes, layer) in enumerate(pieces)
        ]
        layer_tasks: list[list[Task]] = [[] for _ in self.workload.layers]
        for t in self.tasks:
            layer_tasks[t.layer].append(t)
        #: Per layer, task ids in release order (tensors reversed, pieces in order).
        self.release_order = [[t.id for t in sorted(ts, key=lambda t: (-t.tensor, t.piece))] for ts in layer_tasks]
        #: All task ids in the order the backward pass produces them.
        self.production_order = [i for layer in reversed(self.release_order) for i in layer]
        self.delay_s = spec.delay_s
        self.started_at = time.perf_counter()
        #: Per iteration: when this rank finished it (backward over, every piece synchronised), perf_counter s.
        self.completions: list[float] = []
        self.notes: dict[str, Any] = {}

    @property
    def path_delay_s(self) -> float:
        """User-space delay of one host-to-host message: two hops of ``delay_s``."""
        return 2.0 * self.delay_s

    def tensor_buffers(self) -> list[torch.Tensor]:
        """A zeroed float32 buffer per tensor, ``ceil(bytes / 4)`` elements (at least 1)."""
        import torch

        return [torch.zeros(max(1, -(-b // ELEMENT_BYTES)), dtype=torch.float32) for b in self.tensor_bytes]

    def views(self, buffers: list[torch.Tensor]) -> list[torch.Tensor]:
        """Per task, the slice of its tensor's buffer it covers."""
        out = []
        for t in self.tasks:
            n = buffers[t.tensor].numel()
            start = min(t.offset // ELEMENT_BYTES, n - 1)
            length = max(1, min(-(-t.bytes // ELEMENT_BYTES), n - start))
            out.append(buffers[t.tensor].narrow(0, start, length))
        return out

    def write_result(self, role: str) -> None:
        """Writes this rank's measurements to ``<out_dir>/rank-<r>.json`` (then renames it)."""
        data = {
            "rank": self.rank,
            "role": role,
            "pid": os.getpid(),
            "host_addr": os.environ.get("TENSORWIRE_TESTBED_ADDR", ""),
            "started_at": self.started_at,
            "completions": self.completions,
            "notes": self.notes,
        }
        path = Path(self.spec.out_dir) / f"rank-{self.rank}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data) + "\n")
        os.replace(tmp, path)
