"""Parameter-server options co-located and concurrent: refused in one line, exit 2."""

from __future__ import annotations

import pytest
from tensorwire._core import InputError
from tensorwire.cli import main
from tensorwire.testbed.jobs.spec import StrategyOptions

SIM = ["simulate", "-m", "resnet50", "-n", "2", "-b", "10Gbps", "-s"]


@pytest.mark.parametrize(
    "args, start",
    [
        ([*SIM, "ps:num_ps=3,colocated=true"], "strategy.num_ps: 3 co-located servers need as many workers' hosts"),
        (
            [*SIM, "ps:distribution=sideways"],
            'strategy.distribution: "sideways" is not one of round-robin, block, concurrent',
        ),
        ([*SIM, "ps:colocated=maybe"], "strategy.colocated: "),
        ([*SIM, "ring:colocated=true"], "strategy.colocated: "),
    ],
)
def test_ps_options_refused_in_one_line(args: list[str], start: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("tensorwire: error: " + start), err


def test_colocated_servers_take_no_hosts_of_their_own() -> None:
    from tensorwire.strategy import Strategy

    assert Strategy("ps:num_ps=2,colocated=true").servers == 0
    assert Strategy("ps:num_ps=2").servers == 2


@pytest.mark.parametrize("spec", ["ps:num_ps=2,colocated=true", "ps:distribution=concurrent"])
def test_the_testbed_refuses_what_its_servers_cannot_do(spec: str) -> None:
    with pytest.raises(InputError):
        StrategyOptions.parse(spec)
