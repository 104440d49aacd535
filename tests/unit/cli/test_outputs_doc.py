"""docs/outputs.md lists every key the JSON outputs give and every column of a sweep file,
and no key they no longer give: the keys are read from the outputs themselves (commands
run here), from ``Result.to_dict()`` and from ``tensorwire.sweep.COLUMNS``, so a key added
to an output without a line in the page fails here. ``completions_s``, ``baseline``,
``busbw_factor``, ``model_tflops_per_gpu`` and the jobs' ``slowdown`` and ``hosts`` were
documented nowhere."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import tensorwire as tw
from tensorwire.cli import main
from tensorwire.sweep import COLUMNS, run_grid

DOC = Path(__file__).resolve().parents[3] / "docs" / "outputs.md"
#: Keys whose value maps names chosen by the run (links) to numbers: not keys of the schema.
OPEN_MAPS = ("link_utilization",)


def _sections() -> dict[str, str]:
    """The page's ``## `` sections by heading."""
    parts = re.split(r"^## ", DOC.read_text(), flags=re.MULTILINE)[1:]
    return {p.split("\n", 1)[0]: p for p in parts}


def _documented(heading: str) -> dict[str, str]:
    """The keys the tables of the section whose heading starts with ``heading`` list, with
    the type each says."""
    section = next(text for title, text in _sections().items() if title.startswith(heading))
    return dict(re.findall(r"^\| `([^`]+)` \| ([^|]+?) \|", section, flags=re.MULTILINE))


def _keys(value: Any, prefix: str = "") -> set[str]:
    """Every key of a JSON value, nested ones as ``outer.inner`` and those of a list's
    objects as ``outer[].inner``."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(prefix + k)
            if k not in OPEN_MAPS:
                out |= _keys(v, f"{prefix}{k}.")
    elif isinstance(value, list):
        for item in value:
            out |= _keys(item, f"{prefix[:-1]}[].")
    return out


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


SIMULATE_RUNS = (
    # a zoo model with a failure (without_failures) and a partial collective's NAP
    ("-m", "resnet50", "-n", "4", "-b", "25Gbps", "-s", "ring:partial=solo", "--fail", "h1->sw@10ms:rate=0.5"),
    # a microbenchmark timed by NCCL's model (nccl_choices)
    ("--collective", "allreduce:1MiB", "-n", "8", "--topology", "rail:node=dgx-h100", "-s", "nccl"),
    # an LLM (tokens/s, TFLOP/s, model states)
    ("-m", "llama3_8b", "-n", "16", "--topology", "rail:node=dgx-h100", "-s", "ddp"),
)


def test_simulate_json_keys_are_the_documented_ones(capsys: pytest.CaptureFixture[str]) -> None:
    given: set[str] = set()
    for args in SIMULATE_RUNS:
        given |= _keys(_json(capsys, "simulate", *args))
    api = set(tw.Result.__dataclass_fields__) - {"active_processes"} | {"nap", "max_link_utilization"}
    documented = set(_documented("`simulate --json`"))
    assert given - documented == set(), "documented nowhere in docs/outputs.md"
    assert api - documented == set(), "Result.to_dict() keys documented nowhere in docs/outputs.md"
    assert documented - given - api == set(), "documented but given by no output"


def test_compare_json_keys_are_simulate_s_and_the_documented_ones(capsys: pytest.CaptureFixture[str]) -> None:
    given: set[str] = set()
    for args in (
        ("-m", "resnet50", "-n", "4", "-b", "25Gbps", "-s", "ps,ring"),  # speedup_over_ps
        # ps over the flow budget: a refused row and a baseline note
        ("-m", "resnet50", "-n", "4", "-b", "25Gbps", "-s", "ps,ring", "--max-flows", "3000"),
        ("-m", "llama3_8b", "-n", "16", "--topology", "rail:node=dgx-h100", "-s", "ddp,fsdp"),
    ):
        for row in _json(capsys, "compare", *args):
            given |= _keys(row)
    own = set(_documented("`compare --json`"))
    assert given - own - set(_documented("`simulate --json`")) == set(), "documented nowhere in docs/outputs.md"
    assert own - given == set(), "documented but given by no output"


def test_every_sweep_column_is_documented_with_its_type() -> None:
    documented = _documented("Sweep files")
    assert list(documented) == [c.name for c in COLUMNS]
    for c in COLUMNS:
        assert documented[c.name] == (f"{c.kind} or empty" if c.nullable else c.kind), c.name
    rows = run_grid("resnet50", 4, "25Gbps", "ps,ring", jobs=1)
    assert all(list(r) == list(documented) for r in rows)


def test_jobs_json_keys_are_the_documented_ones(capsys: pytest.CaptureFixture[str]) -> None:
    given: set[str] = set()
    args = ("--job", "a:resnet50:4:ring", "--job", "b:vgg16:4:ring", "-b", "25Gbps", "--fail", "h1->sw@10ms:rate=0.5")
    for row in _json(capsys, "jobs", *args):
        given |= _keys(row)
    assert given == set(_documented("`jobs --json`"))
