"""Partial collectives and eager-SGD (Li et al. 2019, seed 002) on torch.distributed.

Sketch (run on every rank of a torchrun job)::

    from tensorwire.torch.partial import PartialAllreduce, EagerSGD
    pa = PartialAllreduce(numel=1024, kind="solo")                     # every rank
    r = pa(grad)             # returns at once if a faster rank already ran the round
    r.tensor, r.round, r.contributors
    leftover = pa.flush(); pa.close()                                  # every rank

Sketch (run on every rank of a torchrun job)::

    opt = EagerSGD(torch.optim.SGD(model.parameters(), lr=0.1), kind="majority")
    for x, y in data:                       # the training loop stays as it is
        opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    opt.finish()                            # leftover gradients, then close

Modules: :mod:`~tensorwire.torch.partial.schedule` (schedules as DAGs of operations and
their executor), :mod:`~tensorwire.torch.partial.collective` (solo and majority
all-reduce), :mod:`~tensorwire.torch.partial.eager` (eager-SGD),
:mod:`~tensorwire.torch.partial.bench` (Li et al. 2019's microbenchmark and the hyperplane
regression experiment). Importing this package does not import torch; the names do.
See docs/partial-collectives.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tensorwire.lazy import lazy_exports

if TYPE_CHECKING:
    from tensorwire.torch.partial.bench import BenchResult, HyperplaneResult, hyperplane, microbenchmark
    from tensorwire.torch.partial.collective import PartialAllreduce, PartialCollectiveError, PartialResult
    from tensorwire.torch.partial.eager import EagerSGD
    from tensorwire.torch.partial.schedule import Executor, Instance, Op, Schedule

_WHERE = {
    "PartialAllreduce": "collective",
    "PartialCollectiveError": "collective",
    "PartialResult": "collective",
    "EagerSGD": "eager",
    "Executor": "schedule",
    "Instance": "schedule",
    "Op": "schedule",
    "Schedule": "schedule",
    "BenchResult": "bench",
    "HyperplaneResult": "bench",
    "hyperplane": "bench",
    "microbenchmark": "bench",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_exports("tensorwire.torch.partial", _WHERE, globals(), {"torch": "torch"})
