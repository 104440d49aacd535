"""A valid spec whose option changes nothing in the simulator says so (a warning, not a
refusal: the runtime runs it): `ps:schedule=priority` equalled plain `ps` to the nanosecond,
and `ps:barrier=false,schedule=priority` without a credit equalled `ps:barrier=false`."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
import tensorwire as tw
from tensorwire.io import InputWarning
from tensorwire.strategy import Strategy


def _seconds(spec: str) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        return tw.simulate(tw.load_model("vgg16"), tw.Cluster(8, "10Gbps"), spec, iterations=2).iteration_time_s


@pytest.mark.parametrize(
    ("spec", "same_as"),
    [
        ("ps:schedule=priority,partition=1MiB,credit=4MiB", "ps:partition=1MiB,credit=4MiB"),
        ("ps:barrier=false,schedule=priority", "ps:barrier=false"),
    ],
)
def test_the_warning_is_given_exactly_where_the_option_changes_nothing(spec: str, same_as: str) -> None:
    assert _seconds(spec) == pytest.approx(_seconds(same_as), rel=1e-6)
    with pytest.warns(InputWarning, match="strategy.schedule: .*changes nothing"):
        Strategy(spec)


def test_priority_with_a_credit_and_no_barrier_changes_the_time_and_is_not_warned_about() -> None:
    spec = "ps:barrier=false,schedule=priority,credit=4MiB"
    assert _seconds(spec) < 0.99 * _seconds("ps:barrier=false,credit=4MiB")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        Strategy(spec)


def test_the_cli_prints_it_once_after_the_table() -> None:
    args = ["compare", "-m", "resnet50", "-n", "8", "-b", "25Gbps", "-s", "ps,ps:schedule=priority"]
    done = subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "warning: strategy.schedule" in line]
    assert len(lines) == 1 and "give barrier=false with it" in lines[0], done.stderr
