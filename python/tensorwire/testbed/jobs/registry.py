"""Job strategies by name: how many extra hosts each needs, what each rank runs and which
of the spec's options it runs.

The mapping is built once from a tuple and is read-only. A new strategy is one more
:class:`JobStrategy` in :data:`_BUILT_IN`: a name, the number of hosts it needs besides
the workers, the function each rank runs with its
:class:`~tensorwire.testbed.jobs.context.Context`, the options it runs, and optionally the
function that runs the same spec with the runtime (``tensorwire.torch``; :mod:`.runtime`).

A spec is predicted by the simulator as written, so an option the job would not run is
refused before anything starts (:meth:`JobStrategy.check`): run silently without it, the
job would measure something else than the simulator predicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping, Optional

from tensorwire._core import InputError
from tensorwire.testbed.jobs.context import Context
from tensorwire.testbed.jobs.spec import StrategyOptions
from tensorwire.torch.tasks import RUNTIME_OPTIONS


@dataclass(frozen=True)
class JobStrategy:
    """A way to run a job: ``run(ctx)`` on every rank, ``extra_hosts(options)`` non-worker
    hosts; ``run_runtime(ctx)`` runs the spec with the runtime instead (None: it cannot).

    ``runs`` lists the options beyond :class:`StrategyOptions`' own fields (those are its
    ``extra``) that ``run`` runs: name -> the one value it runs (None: any value);
    ``why`` adds a reason to the refusal of an option. (Combinations no run takes, such as
    ``placement=sharded`` with a piece size, the core refuses as it parses the spec.)
    """

    name: str
    summary: str
    extra_hosts: Callable[[StrategyOptions], int]
    run: Callable[[Context], None]
    run_runtime: Optional[Callable[[Context], None]] = None
    runs: Mapping[str, Optional[str]] = field(default_factory=dict)
    why: Mapping[str, str] = field(default_factory=dict)

    def check(self, options: StrategyOptions) -> None:
        """Refuses, with one :class:`InputError`, every option of the spec that ``run`` would
        not run (the simulator would predict it, and the job would run something else): named
        ``strategy.<option>`` for one option, ``strategy`` for several. Says what the job
        runs, and points to ``run_job(..., runtime=True)`` for the options the runtime runs.
        (A runtime job is checked by :func:`~tensorwire.testbed.jobs.runtime.runtime_config`.)
        """
        bad = [(k, v) for k, v in options.extra.items() if k not in self.runs or self.runs[k] not in (None, v)]
        if bad:
            written = ", ".join(f"{k}={v}" for k, v in bad)
            runs = ", ".join(k if v is None else f"{k}={v}" for k, v in self.runs.items())
            reasons = "".join(f"; {self.why[k]}" for k, _ in bad if k in self.why)
            text = (
                f"the testbed's {self.name} job does not run {written}, which the simulator would predict: it runs"
                f" {self.summary}, with no option beyond {runs}{reasons}"
            )
            them = "it" if len(bad) == 1 else "them"
            by_runtime = [f"{k}={v}" for k, v in bad if k in RUNTIME_OPTIONS]
            if self.run_runtime is not None and by_runtime:
                text += (
                    f"; the runtime runs {', '.join(by_runtime)}: run_job(..., runtime=True)"
                    f' (docs/testbed.md, "Jobs"), or leave {them} out'
                )
            else:
                text += f"; leave {them} out to measure what is predicted"
            raise InputError("strategy" if len(bad) > 1 else f"strategy.{bad[0][0]}", text)

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


#: Why the ring job does not run an option it is often given.
_RING_WHY = {
    "schedule": "schedule=priority would let each rank's scheduler order the all-reduces by its own timing, and Gloo"
    " needs every rank to issue the same all-reduces in the same order",
    "credit": "a credit releases several all-reduces at once, which the simulator runs concurrently, while this job"
    " runs one at a time",
    "fusion": "fusion flushes its buffer by each rank's own clock, and Gloo needs the same buffers on every rank",
}

_BUILT_IN = (
    JobStrategy(
        "ring",
        "one Gloo all-reduce per piece, FIFO, one at a time (DDP without buckets)",
        lambda o: 0,
        _run_ring,
        _run_runtime,
        runs=MappingProxyType({"partition": None, "schedule": "fifo"}),
        why=MappingProxyType({**_RING_WHY, "cycle": _RING_WHY["fusion"]}),
    ),
    JobStrategy(
        "ps",
        "parameter servers on hosts of their own over send/recv, every piece pushed as soon as it exists",
        lambda o: o.num_ps,
        _run_ps,
        runs=MappingProxyType(
            {
                "num_ps": None,
                "placement": None,
                "distribution": None,
                "barrier": None,
                "partition": None,
                "pipeline": None,
                "colocated": None,  # colocated=true is refused by StrategyOptions.parse
                "schedule": "fifo",
            }
        ),
    ),
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
