"""The schedule engine and the partial all-reduce protocol, in one process.

Ranks are threads over an in-process stand-in for Gloo's point-to-point
(:mod:`_partial_loopback`), so the protocol runs many ranks and rounds in seconds: the
same invariants as the multi-process tests, plus the staleness bound, the activation
graph the core's trees give, and the engine's and/or, consumable and persistent
semantics.
"""

from __future__ import annotations

import collections
import random
import threading
import time
from typing import Any, Optional

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'tensorwire[torch]')")

from _partial_loopback import LoopbackGroup, LoopbackPartialAllreduce, fabric  # noqa: E402
from tensorwire import _core  # noqa: E402
from tensorwire._core import InputError  # noqa: E402
from tensorwire.torch.partial.collective import activation_edges, chunk_bounds, majority_initiator  # noqa: E402
from tensorwire.torch.partial.schedule import Dep, Executor, Schedule, compute, nop, recv, send  # noqa: E402

# --- the engine ------------------------------------------------------------------------


def test_schedule_rejects_cycles_unknown_deps_and_and_conditions() -> None:
    with pytest.raises(InputError, match="cycle"):
        Schedule([nop("a", ["b"]), nop("b", ["a"])])
    with pytest.raises(InputError, match="unknown"):
        Schedule([nop("a", ["zz"])])
    with pytest.raises(InputError, match="two operations"):
        Schedule([nop("a"), nop("a")])
    with pytest.raises(InputError, match="only allowed on 'or'"):
        Schedule([nop("a"), nop("b", [Dep("a", lambda i: True)])])


def _two_rank_schedules(log: list[tuple[int, int, str]]) -> list[Schedule]:
    """Rank 0: trigger T -> send to 1. Rank 1: receive from 0; X fires on the receive
    or on its own trigger T (or, consumable); C computes after X (and)."""
    s0 = Schedule(
        [nop("T", trigger=True), send("S", 1, 0, lambda i: torch.tensor([float(i.round)]), ["T"])],
        rearm_on="T",
    )
    s1 = Schedule(
        [
            nop("T", trigger=True),
            recv("R", 0, 0, lambda i: torch.zeros(1)),
            nop("X", ["T", Dep("R", lambda i: True)], mode="or"),
            compute("C", lambda i: log.append((1, i.round, "C")), ["X"]),
        ],
        final=["R", "C"],
        rearm_on="X",
    )
    return [s0, s1]


def test_or_dependencies_are_consumable_and_rounds_persist() -> None:
    log: list[tuple[int, int, str]] = []
    fab = fabric(2)
    s0, s1 = _two_rank_schedules(log)
    e0, e1 = Executor(s0, LoopbackGroup(fab, 0)), Executor(s1, LoopbackGroup(fab, 1))  # type: ignore[arg-type]
    e1.arm(0)
    e0.arm(0)
    for r in range(5):
        assert e1.fire(r, "T")  # internal activation first...
        assert not e1.fire(r, "T")  # ...consumed
        assert e0.fire(r, "T")  # the message arrives later: X does not fire again
        deadline = time.monotonic() + 5
        while e1.instance(r) is not None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert e1.instance(r) is None, e1.describe()
    assert [x for x in log] == [(1, r, "C") for r in range(5)]
    assert e1.rounds() == [5] and e0.rounds() == [5]  # re-armed, idle
    assert e0.tag(3, 0) != e0.tag(4, 0)
    # Round 5's receive is posted and waits for ever: its progress thread stays.
    assert not e1.close(timeout_s=0.05) and e0.close(timeout_s=0.05)


def test_chunk_bounds_follow_tensor_split() -> None:
    for length in (1, 5, 16, 17, 100):
        for chunks in (1, 3, 4, 7):
            b = chunk_bounds(length, chunks)
            sizes = [t.numel() for t in torch.tensor_split(torch.arange(length), chunks)]
            assert [b[i + 1] - b[i] for i in range(chunks)] == sizes


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 12, 16])
def test_activation_graph_from_the_core_trees(n: int) -> None:
    parents = {r: set(activation_edges(r, n)[0]) for r in range(n)}
    children = {r: set(activation_edges(r, n)[1]) for r in range(n)}
    for r in range(n):
        assert all(r in parents[c] for c in children[r]), "each possible child has this rank as a possible parent"
        assert all(r in children[p] for p in parents[r])
        # Internal activation sends to every child of the rank's own tree, which covers all.
        assert children[r] == set(_core.activation_tree(r, n, r)[1])
    # A single initiator's activation reaches everyone in ceil(log2 n) hops.
    for init in range(n):
        depth = {init: 0}
        frontier = [init]
        while frontier:
            nxt = []
            for r in frontier:
                for c in _core.activation_tree(r, n, init)[1]:
                    depth[c] = depth[r] + 1
                    nxt.append(c)
            frontier = nxt
        assert len(depth) == n and max(depth.values()) <= max(0, (n - 1).bit_length())


def test_majority_initiators_are_uniform_and_shared() -> None:
    counts = collections.Counter(majority_initiator(7, k, 6) for k in range(6000))
    assert set(counts) == set(range(6)) and min(counts.values()) > 850
    assert [majority_initiator(7, k, 6) for k in range(10)] == [majority_initiator(7, k, 6) for k in range(10)]


# --- the protocol over the loopback ------------------------------------------------------


def run_threads(
    n: int,
    kind: str,
    rounds: int,
    *,
    seed: int = 0,
    stop_spread: int = 0,
    max_lag: Optional[int] = None,
    slow: Optional[int] = None,
    slow_s: float = 0.002,
    algorithm: str = "recursive-doubling",
    jitter_s: float = 0.0,
    slow_recv: Optional[dict[int, float]] = None,
    flushes: int = 1,
) -> list[dict[str, Any]]:
    fab = fabric(n, jitter_s, seed, slow_recv)
    pas: list[Any] = [None] * n
    out: list[Any] = [None] * n

    def make(r: int) -> None:
        pas[r] = LoopbackPartialAllreduce(
            fab, r, 3, kind, dtype=torch.float64, seed=seed, max_lag=max_lag, algorithm=algorithm, timeout_s=20.0
        )

    def work(r: int) -> None:
        try:
            rng = random.Random(seed * 101 + r)
            pa = pas[r]
            calls = rounds - rng.randint(0, stop_spread)
            seen, total, ahead = {}, [0, 0, 0], 0
            for k in range(calls):
                if r == slow:
                    time.sleep(slow_s)
                elif rng.random() < 0.3:
                    time.sleep(rng.random() * 0.0005)
                t = [r + 1, k % 7, rng.randint(-5, 5)]
                ahead = max(ahead, pa.rounds_run - k)
                res = pa(torch.tensor(t, dtype=torch.float64))
                assert res.round == k
                seen[k] = (tuple(res.tensor.tolist()), res.contributors)
                total = [a + b for a, b in zip(total, t)]
            f = pa.flush()
            for _ in range(flushes - 1):  # more flushes right away: nothing left, zero sums
                assert pa.flush().tensor.abs().sum() == 0
            pa.close()
            out[r] = {
                "seen": seen,
                "total": total,
                "flush": (tuple(f.tensor.tolist()), f.round),
                "calls": calls,
                "ahead": ahead,
            }
        except BaseException as e:  # noqa: BLE001
            out[r] = e

    for target in (make, work):
        threads = [threading.Thread(target=target, args=(r,), daemon=True) for r in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads), "a rank hung"
    errors = [o for o in out if isinstance(o, BaseException)]
    assert not errors, errors[0]
    return out


def check(out: list[dict[str, Any]], kind: str, n: int, seed: int) -> float:
    by_round: dict[int, list[Any]] = collections.defaultdict(list)
    for o in out:
        for k, v in o["seen"].items():
            by_round[k].append(v)
    assert sorted(by_round) == list(range(max(o["calls"] for o in out)))
    for k, views in by_round.items():
        assert all(v == views[0] for v in views), (k, views)
        if kind == "majority":
            assert majority_initiator(seed, k, n) in views[0][1]
    assert len({o["flush"] for o in out}) == 1
    flush = out[0]["flush"][0]
    got = [sum(v[0][0][i] for v in by_round.values()) + flush[i] for i in range(3)]
    assert got == [sum(o["total"][i] for o in out) for i in range(3)]
    return sum(len(v[0][1]) for v in by_round.values()) / max(1, len(by_round))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8])
@pytest.mark.parametrize("kind", ["solo", "majority"])
def test_protocol_any_number_of_ranks(n: int, kind: str) -> None:
    out = run_threads(n, kind, 80, seed=n, stop_spread=25, jitter_s=0.0001)
    check(out, kind, n, n)


@pytest.mark.parametrize("algorithm", ["ring", "halving-doubling", "tree", "double-tree"])
def test_protocol_on_other_allreduce_schedules(algorithm: str) -> None:
    check(run_threads(5, "solo", 60, seed=3, stop_spread=10, algorithm=algorithm), "solo", 5, 3)


@pytest.mark.parametrize("kind", ["solo", "majority"])
@pytest.mark.parametrize("max_lag", [0, 1, 3])
def test_staleness_bound_with_one_slow_rank(kind: str, max_lag: int) -> None:
    out = run_threads(4, kind, 120, seed=1, max_lag=max_lag, slow=2)
    check(out, kind, 4, 1)
    # Before its call k a rank has called for round k - 1; no round beyond k - 1 + max_lag
    # may have started.
    assert max(o["ahead"] for o in out) <= max_lag


def test_without_a_bound_the_slow_rank_falls_behind() -> None:
    out = run_threads(4, "solo", 60, seed=1, slow=2, slow_s=0.02)
    assert out[2]["ahead"] > 5


@pytest.mark.parametrize("kind", ["solo", "majority"])
def test_back_to_back_flushes_with_a_slow_rank(kind: str) -> None:
    """A rank still finishing one flush while the others start the next (or close): a
    round then mixes marks of two flushes and must not count as either flush round."""
    for seed in range(3):
        out = run_threads(4, kind, 30, seed=seed, stop_spread=5, slow_recv={2: 0.003}, flushes=3)
        check(out, kind, 4, seed)
