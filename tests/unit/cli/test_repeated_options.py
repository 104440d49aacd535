"""A single-value option given twice is refused (click kept the last: `--cluster a --cluster
b` ran with b, `-n 4 -n 8` with 8 workers), in every spelling; options that take several
values, and flags, may repeat."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tensorwire.cli.app import cli
from tensorwire.cli.repeats import check_repeats

RUN = ["simulate", "-b", "25Gbps", "-s", "ring"]


@pytest.mark.parametrize(
    ("args", "option"),
    [
        ([*RUN, "-m", "resnet50", "-m", "vgg16", "-n", "4"], "-m"),
        ([*RUN, "-m", "resnet50", "-n", "4", "-n8"], "-n"),
        ([*RUN, "--model=resnet50", "--model", "vgg16", "-n", "4"], "--model"),
        ([*RUN, "-m", "resnet50", "--model", "vgg16", "-n", "4"], "-m"),
        (["calibrate", "nccl-tests", "x.log", "--topology", "rail", "--topology", "nodes"], "--topology"),
    ],
)
def test_a_single_value_option_given_twice_is_refused_naming_it(args: list[str], option: str) -> None:
    done = subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "", done
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"tensorwire: error: {option} is given 2 times") and "give it once" in line, line


@pytest.mark.parametrize(
    "args",
    [
        ["compare", "-m", "resnet50", "-m", "vgg16", "-n", "4", "-b", "25Gbps"],  # multiple=True
        [*RUN, "-m", "resnet50", "-n", "4", "--json", "--json"],  # a flag
        [*RUN, "-m", "resnet50", "-n", "4", "--", "-n", "8"],  # after --: arguments
        ["jobs", "--job", "a:resnet50:4:ring", "--job", "b:vgg16:4:ring"],
    ],
)
def test_options_that_may_repeat_are_left_alone(args: list[str]) -> None:
    check_repeats(cli, args)  # raises nothing
