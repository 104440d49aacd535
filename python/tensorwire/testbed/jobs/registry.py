"""Job strategies by name: how many extra hosts each needs and what each rank runs.

The mapping is built once from a tuple and is read-only. A new strategy is one more
:class:`JobStrategy` in :data:`_BUILT_IN`: a name, the number of hosts it needs besides
the workers, the function each rank runs with its
:class:`~tensorwire.testbed.jobs.context.Context`, and optionally the function that runs
the same spec with the runtime (``tensorwire.torch``; :mod:`.runtime`).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping, Optional

from tensorwire._core import InputError
from tensorwire.testbed.jobs.context import Context
from tensorwire.testbed.jobs.spec import StrategyOptions


@dataclass(frozen=True)
class JobStrategy:
    """A way to run a job: ``run(ctx)`` on every rank, ``extra_hosts(options)`` non-worker
    hosts; ``run_runtime(ctx)`` runs the spec with the runtime instead (None: it cannot)."""

    name: str
    summary: str
    extra_hosts: Callable[[StrategyOptions], int]
    run: Callable[[Context], None]
    run_runtime: Optional[Callable[[Context], None]] = None

    def runner(self, runtime: bool) -> Callable[[Context], None]:
        """What each rank runs; :class:`InputError` if ``runtime`` and the runtime cannot."""
        if not runtime:
            return self.run
        if self.run_runtime is None:
            with_runtime = ", ".join(s.name for s in _BUILT_IN if s.run_runtime is not None)
            raise InputError(
                "strategy", f"{self.name!r} cannot run with the runtime on the testbed; the runtime runs {with_runtime}"
            )
        return self.run_runtime


def _run_ring(ctx: Context) -> None:
    from tensorwire.testbed.jobs.ring import run_ring

    run_ring(ctx)


def _run_runtime(ctx: Context) -> None:
    from tensorwire.testbed.jobs.runtime import run_runtime

    run_runtime(ctx)


def _run_ps(ctx: Context) -> None:
    from tensorwire.testbed.jobs.ps import run_ps

    run_ps(ctx)


_BUILT_IN = (
    JobStrategy(
        "ring",
        "one Gloo all-reduce per piece, FIFO, one at a time (DDP without buckets)",
        lambda o: 0,
        _run_ring,
        _run_runtime,
    ),
    JobStrategy("ps", "parameter servers on hosts of their own over send/recv", lambda o: o.num_ps, _run_ps),
)

#: Job strategies by name (read-only).
JOB_STRATEGIES: Mapping[str, JobStrategy] = MappingProxyType({s.name: s for s in _BUILT_IN})


def job_strategy(name: str) -> JobStrategy:
    """The job strategy called ``name``; :class:`InputError` names the choices otherwise."""
    try:
        return JOB_STRATEGIES[name]
    except KeyError:
        raise InputError(
            "strategy", f"{name!r} cannot run on the testbed; choose one of {', '.join(JOB_STRATEGIES)}"
        ) from None
