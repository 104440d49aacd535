"""A sweep without --strategies runs each built-in strategy wherever it runs and says where
it does not: `hsdp` runs on 8 workers of a star but not on 12, and a grid of both dropped it
from every point without a word."""

from __future__ import annotations

import warnings
from collections import Counter

import pytest
from tensorwire.io import InputWarning
from tensorwire.strategy import runs_on
from tensorwire.sweep.grid import expand


def test_a_default_strategy_runs_where_it_runs_and_the_rest_is_named() -> None:
    with pytest.warns(InputWarning) as caught:
        configs = expand("resnet50", "8,12", "25Gbps")
    per_workers = {n: {c.strategy for c in configs if c.workers == n} for n in (8, 12)}
    assert "hsdp" in per_workers[8] and "hsdp" not in per_workers[12]
    for n, specs in per_workers.items():
        assert all(runs_on(s, n, "star") for s in specs)
    said = [str(w.message) for w in caught]
    assert any("hsdp does not run at 12 workers on star; left out there" in m for m in said), said
    assert any("multitree runs at no point of the grid" in m for m in said), said


@pytest.mark.parametrize(("workers", "topology"), [("4,6,8", "star"), ("8,16", "nodes")])
def test_a_default_strategy_is_at_a_point_exactly_where_it_runs(workers: str, topology: str) -> None:
    from tensorwire.strategy import strategies

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        configs = expand("resnet50", workers, "25Gbps", topologies=topology)
    at = Counter((c.strategy, c.workers) for c in configs)
    for s in (s.name for s in strategies() if s.alias_of is None):
        for n in map(int, workers.split(",")):
            assert (at[(s, n)] > 0) == runs_on(s, n, topology), (s, n)
