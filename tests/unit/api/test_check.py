"""``check`` (the core's: does a strategy run with N workers on a fabric?) refuses exactly
what the old probe (a 1 KiB all-reduce simulated through ``_core.Scenario``) refused, with
the same field and message, for every built-in strategy on the common fabrics."""

from __future__ import annotations

import itertools
from typing import Optional

import pytest
from tensorwire import _core
from tensorwire.strategy import Strategy, check, probe, runs_on

TOPOLOGIES = ("star", "ring", "leaf-spine", "nodes:machine=p3.16xlarge", "nodes:machine=dgx-a100", "rail")
WORKERS = (1, 2, 3, 4, 8, 16)


def _old_probe(spec: str, workers: int, topology: str) -> Optional[tuple[str, str]]:
    """The probe compare and sweep ran before ``check``: a simulation of 1 KiB."""
    tiny = _core.Workload("probe", 1, [("probe", 0.0, 0.0)], [("probe.g", 1024, 0)], 4, "allreduce")
    try:
        _core.Scenario(tiny, workers, _core.Strategy(spec), 1e9, 0.0, _core.Topology(topology), iterations=1).simulate()
    except _core.InputError as e:
        return (e.field, e.message)
    return None


def _check(spec: str, workers: int, topology: str) -> Optional[tuple[str, str]]:
    try:
        check(spec, workers, topology)
    except _core.InputError as e:
        return (e.field, e.message)
    return None


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_check_refuses_what_the_probe_refused(topology: str) -> None:
    names = [s["name"] for s in _core.strategies()]
    refused = 0
    for name, n in itertools.product(names, WORKERS):
        old = _old_probe(name, n, topology)
        assert _check(name, n, topology) == old, (name, n, topology)
        assert runs_on(name, n, topology) == (old is None)
        refused += old is not None
    # The matrix does exercise refusals (multitree off one machine, multicast on a ring, ...).
    assert topology == "star" or refused > 0


def test_check_takes_parsed_objects_and_probe_is_its_old_name() -> None:
    check(Strategy("ring"), 4, _core.Topology("star"))
    with pytest.raises(_core.InputError):
        probe("multitree", 4)
    assert not runs_on("ring:partition=x", 4)
