"""Which rows of a sweep each plot shows.

A sweep may vary many columns at once; a line plot varies one. For each model the report
takes a *reference scenario*: 32 workers when the sweep has them (else the most it has),
25 Gbps when it has it (else the middle rate), and the first value of every other column
(latency, topology, network, device, batch, compute speedup, iterations, seed). The
bandwidth plot varies the rate at the reference worker count, the workers plot varies the
count at the reference rate, and the breakdown, the table and the timeline show the
reference scenario itself. The page states the scenario above the plots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tensorwire.sweep.table import SCENARIO_KEYS, Row

REFERENCE_WORKERS = 32
REFERENCE_GBPS = 25.0

#: Columns that the plots vary or that follow another column.
_VARIED = ("workers", "bandwidth", "bandwidth_gbps")


@dataclass(frozen=True)
class Scenario:
    """The reference scenario of one model: fixed column values, and the reference
    ``workers`` and ``bandwidth`` (bytes/s)."""

    model: str
    fixed: tuple[tuple[str, Any], ...]
    workers: int
    bandwidth: float

    def matches(self, row: Row, *, vary: str = "") -> bool:
        """Whether ``row`` is in this scenario, letting ``vary`` (workers or bandwidth) differ."""
        if row.get("model") != self.model or any(row.get(k) != v for k, v in self.fixed):
            return False
        if vary != "workers" and row.get("workers") != self.workers:
            return False
        return vary == "bandwidth" or _same_rate(row.get("bandwidth"), self.bandwidth)

    def rows(self, rows: list[Row], *, vary: str = "") -> list[Row]:
        """The rows of this scenario (all strategies), in file order."""
        return [r for r in rows if self.matches(r, vary=vary)]

    @property
    def values(self) -> dict[str, Any]:
        """Every configuration column of the scenario except the strategy."""
        return {"model": self.model, **dict(self.fixed), "workers": self.workers, "bandwidth": self.bandwidth}


def _same_rate(a: Any, b: float) -> bool:
    return isinstance(a, (int, float)) and abs(float(a) - b) <= 1e-9 * max(abs(b), 1.0)


def models_in(rows: list[Row]) -> list[str]:
    """Model names in first-seen order."""
    return list(dict.fromkeys(str(r["model"]) for r in rows))


def reference(rows: list[Row], model: str) -> Scenario:
    """The reference scenario of ``model`` (see the module's description)."""
    mine = [r for r in rows if r.get("model") == model]
    first = mine[0]
    fixed = tuple((k, first.get(k)) for k in SCENARIO_KEYS if k not in _VARIED and k != "model")
    mine = [r for r in mine if all(r.get(k) == v for k, v in fixed)]
    workers = sorted({int(r["workers"]) for r in mine})
    n = REFERENCE_WORKERS if REFERENCE_WORKERS in workers else workers[-1]
    rates = sorted({float(r["bandwidth"]) for r in mine if int(r["workers"]) == n})
    wanted = REFERENCE_GBPS * 1e9 / 8
    rate = next((b for b in rates if _same_rate(b, wanted)), rates[len(rates) // 2])
    return Scenario(model, fixed, n, rate)


def common_baseline(rows: list[Row]) -> Optional[str]:
    """The baseline every row's speedup is over (the sweep's ``baseline`` column, chosen as
    ``compare`` chooses it: ``tensorwire.sweep.table.add_speedup``), or None where the rows
    have none or several, whose speedups a plot cannot draw on one axis.

    >>> common_baseline([{"baseline": "ddp"}, {"baseline": "ddp"}]), common_baseline([{"baseline": "ps"}, {"baseline": "ring"}])
    ('ddp', None)
    """
    baselines = {r.get("baseline") for r in rows}
    one = baselines.pop() if len(baselines) == 1 else None
    return None if one is None else str(one)
