"""CLI values that used to be accepted silently, or to end in a traceback, are one line."""

from __future__ import annotations

import pytest
from tensorwire.cli import main

JOBS = ["jobs", "-b", "25Gbps", "--job", "a:resnet50:4:ring", "--job", "b:vgg16:4:ring"]


@pytest.mark.parametrize(
    "args, start",
    [
        (["compare", "-m", "resnet50", "-n", "4", "--strategies", ""], "strategies: give at least one strategy spec"),
        (
            ["compare", "-m", "resnet50", "-n", "4", "--strategies", "ps,,ring"],
            "strategies: 'ps,,ring' has an empty item",
        ),
        (
            ["simulate", "-m", "resnet50", "-n", "4", "-b", "25Gbps", "-s", "ring", "--gpu", ""],
            "gpu: resnet50 has no measurements for ''",
        ),
        (["sweep", "-m", "resnet50", "-n", "4,,8", "-s", "ring", "-o", "x.csv"], "workers: '4,,8' has an empty item"),
        (
            ["jobs", "-b", "25Gbps", "--job", "a b:resnet50:4:ring"],
            "job: 'a b:resnet50:4:ring': the name 'a b' may use only",
        ),
        (
            [*JOBS, "--place", "a=0-1000000000"],
            "place: 'a=0-1000000000': '0-1000000000': hosts are numbered from 0 to 1,048,575",
        ),
        (
            [*JOBS, "--place", "a=99999999999999999999"],
            "place: 'a=99999999999999999999': '99999999999999999999': hosts are numbered",
        ),
        (
            ["simulate", "-m", "resnet50", "-n", "8", "-b", "25Gbps", "-s", "ring", "--seed", "18446744073709551616"],
            "seed: 18446744073709551616 is not allowed",
        ),
        (["simulate", "-m", "resnet50", "-n", "99999999999999999999999", "-b", "25Gbps", "-s", "ring"], "workers: "),
        (
            ["simulate", "-m", "resnet50", "-n", "8", "-b", "25Gbps", "-s", "ring", "--batch", "4294967297"],
            "workload.batch_size: ",
        ),
        (
            [
                "simulate",
                "-m",
                "resnet50",
                "-n",
                "8",
                "-b",
                "25Gbps",
                "-s",
                "ring",
                "--max-flows",
                "99999999999999999999999",
            ],
            "max_flows: ",
        ),
        (
            [
                "simulate",
                "-m",
                "resnet50",
                "-n",
                "8",
                "-b",
                "25Gbps",
                "-s",
                "ring",
                "--iterations",
                "99999999999999999999999",
            ],
            "iterations: ",
        ),
        (
            ["simulate", "-m", "resnet50", "-n", "8", "-b", "25Gbps", "-s", "ring", "--trace-workers", "2"],
            "trace-workers: needs --trace FILE",
        ),
        # torch was handed 100,000 threads unchecked (a segmentation fault after 5 s).
        (["profile", "resnet18", "-o", "p.json", "--threads", "100000"], "threads: 100000 is more than this machine's"),
        (["measure", "--threads", "100000"], "threads: 100000 is more than this machine's"),
    ],
)
def test_refused_in_one_line(args: list[str], start: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("tensorwire: error: " + start), err


@pytest.mark.parametrize("args", [[], ["calibrate"]])
def test_a_group_without_its_command_shows_its_help_on_several_lines(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and "error:" not in err
    lines = err.splitlines()
    assert lines[0] == f"Usage: tensorwire {' '.join([*args, ''])}[OPTIONS] COMMAND [ARGS]..."
    assert "Commands:" in lines and len(lines) > 5, err


def test_no_bandwidth_on_star_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    # the same line names the API's argument (tests/unit/api/test_argument_checks.py)
    assert main(["simulate", "-m", "resnet50", "-n", "8", "-s", "ring"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tensorwire: error: bandwidth: give the host link rate, e.g. 25Gbps (--bandwidth"), err
