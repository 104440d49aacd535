"""`result.speedup` and `result.ranked` take Results and rows alike, and refuse what has no
common measure: `speedup(Result, Result)` was an AttributeError, a zero time a
ZeroDivisionError, `{}` a KeyError, and a training run against a microbenchmark a ratio
of unrelated times."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import tensorwire as tw
from hypothesis import given
from hypothesis import strategies as st
from tensorwire.result import ranked, speedup


@pytest.fixture(scope="module")
def runs() -> dict[str, tw.Result]:
    w, c = tw.load_model("resnet50"), tw.Cluster(4, "25Gbps")
    out = {s: tw.simulate(w, c, s, iterations=2) for s in ("ps", "ring")}
    out["bench"] = tw.simulate(tw.Workload.collective("allreduce:1MiB"), c, "ring", iterations=2)
    return out


def test_results_and_their_rows_give_the_same_speedup_and_order(runs: dict[str, tw.Result]) -> None:
    ps, ring = runs["ps"], runs["ring"]
    by_rate = ring.throughput_samples_per_s / ps.throughput_samples_per_s
    assert speedup(ps, ring) == speedup(ps.to_dict(), ring.to_dict()) == pytest.approx(by_rate)
    assert [r.strategy for r in ranked([ps, ring])] == ["ring", "ps"]
    assert [r["strategy"] for r in ranked([ps.to_dict(), ring.to_dict()])] == ["ring", "ps"]


@pytest.mark.parametrize(
    ("base", "run", "field", "says"),
    [
        ({"iteration_time_s": 1.0}, {"iteration_time_s": 0.0}, "run", "positive number of seconds"),
        ({}, {"iteration_time_s": 1.0}, "base", "has no iteration_time_s"),
        ({"iteration_time_s": 1.0}, 5, "run", "a Result, a sweep row"),
    ],
)
def test_what_has_no_speed_is_refused_naming_it(base: Any, run: Any, field: str, says: str) -> None:
    with pytest.raises(tw.InputError) as e:
        speedup(base, run)
    assert e.value.field == field and says in e.value.message


def test_a_training_run_and_a_microbenchmark_have_no_common_measure(runs: dict[str, tw.Result]) -> None:
    with pytest.raises(tw.InputError, match="no common measure"):
        speedup(runs["ps"], runs["bench"])
    with pytest.raises(tw.InputError, match="no common measure"):
        ranked([runs["ps"], runs["bench"], runs["ring"]])


rows = st.builds(
    lambda t, r: {"iteration_time_s": t, "throughput_samples_per_s": r},
    st.floats(1e-6, 1e6),
    st.floats(1e-3, 1e9),
)


@given(st.lists(rows, min_size=1, max_size=8))
def test_ranked_puts_each_row_at_least_as_fast_as_the_next(given_rows: list[dict[str, float]]) -> None:
    order = ranked(given_rows)
    assert sorted(map(id, order)) == sorted(map(id, given_rows))
    assert all(speedup(b, a) >= 1 for a, b in zip(order, order[1:]))


def test_compare_says_when_its_speedup_is_not_the_ratio_of_the_times_shown() -> None:
    args = ["compare", "-m", "resnet50", "-n", "4", "-b", "25Gbps", "--stragglers", "fixed:1,1,1,3"]
    partial = subprocess.run(
        [sys.executable, "-m", "tensorwire", *args, "-s", "ps,ring:partial=solo"], capture_output=True, text=True
    )
    assert partial.returncode == 0, partial.stderr
    assert "vs ps: samples/s over ps's, not the ratio of the iteration times shown" in partial.stdout
    plain = subprocess.run([sys.executable, "-m", "tensorwire", *args, "-s", "ps,ring"], capture_output=True, text=True)
    assert plain.returncode == 0 and "not the ratio of the iteration times" not in plain.stdout
