"""What a job's processes are told: the workload, the strategy and its options, the ranks.

The launcher writes one :class:`JobSpec` as JSON; each process reads it, learns its rank and
role from it and writes its measurements to ``<out_dir>/rank-<r>.json``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from tensorwire._core import InputError
from tensorwire.strategy import Strategy


@dataclass(frozen=True)
class StrategyOptions:
    """A strategy spec's options, with the core's defaults (see ``tensorwire strategies``).

    Parsed from a spec the core has already validated, so only the values are read here.
    """

    name: str
    partition_bytes: Optional[int] = None
    num_ps: int = 1
    placement: str = "round-robin"
    distribution: str = "round-robin"
    barrier: bool = True
    #: Release order of ready pieces (``schedule=``): ``fifo`` or ``priority``.
    schedule: str = "fifo"
    #: Options as written other than the ones above (``schedule`` included), name -> value;
    #: the job's :meth:`~tensorwire.testbed.jobs.registry.JobStrategy.check` refuses those it
    #: does not run.
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str) -> StrategyOptions:
        """``ps:num_ps=2,distribution=block`` -> options, as the core parses the spec.

        >>> o = StrategyOptions.parse("ps:num_ps=2,distribution=block,pipeline=1MiB")
        >>> o.name, o.num_ps, o.placement, o.distribution, o.barrier, o.partition_bytes, o.schedule
        ('ps', 2, 'round-robin', 'block', True, 1048576, 'fifo')
        >>> StrategyOptions.parse("ring:compression=8,schedule=priority").extra
        {'compression': '8', 'schedule': 'priority'}
        """
        s = Strategy(spec).core
        placement, distribution, barrier = s.ps_settings or ("round-robin", "round-robin", True)
        colocated = s.family == "parameter-server" and s.servers == 0
        if distribution == "concurrent" or colocated:
            # The testbed's servers run on hosts of their own and send one message at a time.
            raise InputError(
                "strategy",
                "the testbed runs parameter servers on hosts of their own, one message at a time:"
                " colocated=true and distribution=concurrent are simulator-only",
            )
        named = {"num_ps", "placement", "distribution", "barrier", "partition", "pipeline"}
        return cls(
            name=s.name,
            partition_bytes=s.partition_bytes,
            num_ps=max(s.servers, 1),
            placement=placement,
            distribution=distribution,
            barrier=barrier,
            schedule=s.policy,
            extra={k: v for k, v in s.options if k not in named},
        )


@dataclass(frozen=True)
class JobSpec:
    """Everything one job's processes need (JSON-serialisable)."""

    strategy: str
    options: StrategyOptions
    workload: dict[str, Any]
    workers: int
    world_size: int
    master_addr: str
    master_port: int
    iterations: int
    warmup: int
    delay_s: float
    #: The testbed's shaped rate per link direction, bytes/s.
    link_rate_bytes_per_s: float
    out_dir: str
    timeout_s: float
    #: Run :mod:`tensorwire.testbed.jobs.probe` before training.
    probe: bool = False
    #: Run the spec with the runtime (:mod:`tensorwire.testbed.jobs.runtime`).
    runtime: bool = False

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_file(cls, path: str | Path) -> JobSpec:
        data = json.loads(Path(path).read_text())
        data["options"] = StrategyOptions(**data["options"])
        return cls(**data)


def check_iterations(iterations: int, warmup: int) -> None:
    """Raises :class:`InputError` unless ``iterations > warmup >= 1``.

    The steady-state time is ``(C[n-1] - C[w-1]) / (n - w)`` over the completion times ``C``
    of the ``n`` iterations after ``w`` warm-up iterations, so at least one of each.
    """
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 1:
        raise InputError("warmup", f"{warmup!r} must be an integer >= 1")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations <= warmup:
        raise InputError("iterations", f"{iterations!r} must be an integer > warmup ({warmup})")
