"""Solo and majority all-reduce and eager-SGD across real processes (Gloo on 127.0.0.1).

Thousands of rounds with random per-rank sleeps; ranks stop at different rounds, then
flush and close. Checked: every rank that sees a round gets the same result for it; the
results of all rounds plus the flush add up to every tensor passed in, exactly (integer
valued float64); shutdown ends without hanging (every run is bounded by a timeout).
"""

from __future__ import annotations

import collections
import statistics
import time
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'tensorwire[torch]')")

from _partial_workers import (  # noqa: E402
    eager_sgd,
    eager_sgd_finish_with_nothing_held,
    eager_sgd_start,
    partial_rounds,
    partial_unlike,
    subgroup_close,
)
from tensorwire.torch.launch import run_local  # noqa: E402
from tensorwire.torch.partial.collective import majority_initiator  # noqa: E402

pytestmark = pytest.mark.distributed


def check_rounds(out: list[dict[str, Any]], kind: str, world: int, seed: int) -> dict[str, float]:
    runs = [o[kind] for o in out]
    by_round: dict[int, list[Any]] = collections.defaultdict(list)
    for r in runs:
        for k, v in r["seen"].items():
            by_round[k].append(v)
    most = max(r["calls"] for r in runs)
    assert sorted(by_round) == list(range(most)), "every round up to the last call is seen by some rank"
    for k, views in by_round.items():
        assert all(v == views[0] for v in views), f"{kind} round {k}: ranks disagree: {views}"
        contributors = views[0][1]
        assert contributors and list(contributors) == sorted(set(contributors)), (k, contributors)
        if kind == "majority":
            assert majority_initiator(seed, k, world) in contributors, (
                f"round {k}: the designated initiator must have arrived"
            )
    flushes = {r["flush"] for r in runs}
    assert len(flushes) == 1, f"{kind}: flush results differ: {flushes}"
    flush_values, flush_round, flush_contributors = flushes.pop()
    assert flush_round >= most and flush_contributors == tuple(range(world))
    got = [sum(views[0][0][i] for views in by_round.values()) + flush_values[i] for i in range(3)]
    want = [sum(r["total"][i] for r in runs) for i in range(3)]
    assert got == want, f"{kind}: rounds + flush = {got}, tensors passed in = {want} (lost or doubled)"
    assert max(r["close_s"] for r in runs) < 30.0
    return {
        "nap": statistics.fmean(len(v[0][1]) for v in by_round.values()),
        "run_s": max(r["run_s"] for r in runs),
        "threads": max(r["threads"] for r in runs),
    }


@pytest.mark.parametrize(
    "world,rounds,stop_spread",
    [(3, 2000, 300), (4, 2000, 300), (8, 1000, 150)],
    ids=["3-processes", "4-processes", "8-processes"],
)
def test_solo_and_majority_rounds_add_up(world: int, rounds: int, stop_spread: int) -> None:
    seed = 11 + world
    t0 = time.perf_counter()
    out = run_local(partial_rounds, world, ["solo", "majority"], rounds, seed, 0.002, stop_spread, timeout_s=900.0)
    stats = {kind: check_rounds(out, kind, world, seed) for kind in ("solo", "majority")}
    print(f"{world} processes, {rounds} rounds: {stats}, {time.perf_counter() - t0:.1f} s in all")
    assert 1.0 <= stats["solo"]["nap"] <= world
    # Majority rounds wait for a random rank: more processes are active than in solo rounds.
    assert stats["majority"]["nap"] >= stats["solo"]["nap"]


@pytest.mark.parametrize("kind", ["solo", "majority"])
def test_eager_sgd_applies_every_gradient_once(kind: str) -> None:
    world, steps, staleness = 4, 300, 2
    out = run_local(eager_sgd, world, kind, steps, staleness, 3, 5, timeout_s=600.0)
    total = [sum(o["total"][i] for o in out) for i in range(5)]
    expected = [-t / world for t in total]  # lr 1, gradients averaged over 4 ranks: exact
    for o in out:
        assert o["w"] == expected, (o["w"], expected)
        # Rank 3 is slow: rounds never run more than `staleness` ahead of any rank's call.
        assert o["ahead"] <= staleness, o
    assert out[3]["late"] > 0 or kind == "majority"


def test_eager_sgd_finish_does_not_step_when_nothing_was_held_back() -> None:
    """finish() stepped the optimiser on an all-zero flush: momentum moved every parameter by
    0.023 after the last synchronous step had left nothing to apply."""
    for out in run_local(eager_sgd_finish_with_nothing_held, 2, timeout_s=120.0):
        assert out == {"moved": 0.0, "flushed": 0.0}, out


def test_eager_sgd_starts_every_rank_from_the_first_rank_s_parameters() -> None:
    """Ranks that initialised their models differently never converged (no broadcast, unlike
    DDP); ``broadcast=False`` keeps each rank's own."""
    assert run_local(eager_sgd_start, 3, True, timeout_s=120.0) == [[0.0] * 3] * 3
    assert run_local(eager_sgd_start, 3, False, timeout_s=120.0) == [[float(r)] * 3 for r in range(3)]


@pytest.mark.parametrize("field", ["numel", "kind", "dtype"])
def test_ranks_that_construct_it_differently_are_all_refused(field: str) -> None:
    """Rank 1 returned a round of the wrong size, then rank 0 aborted inside Gloo; now every
    rank refuses, naming the setting and the ranks."""
    out = run_local(partial_unlike, 3, field, timeout_s=120.0)
    assert all(o.startswith(f"{field}: differs between the ranks of [0, 1, 2]") for o in out), out


def test_subgroup_and_close_without_flush_at_different_rounds() -> None:
    out = run_local(subgroup_close, 4, 3, timeout_s=300.0)
    assert out[0] == {}
    for local, o in enumerate(out[1:]):
        assert o["ranks"] == (1, 2, 3) and o["rank"] == local
        assert set(o["contributors"]) <= {0, 1, 2}
        assert o["close_s"] < 30.0
    assert len({o["calls"] for o in out[1:]}) > 1  # they really stopped at different rounds
