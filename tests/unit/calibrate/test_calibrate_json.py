"""``calibrate nccl-tests`` on nccl-tests' JSON output (``-J FILE.json``, v2.17.3 on): the same
run as its standard output, the same rows and the same fit; NCCL_ALGO / NCCL_PROTO read from
the environment it records; malformed files refused in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorwire._core import InputError
from tensorwire.calibrate import parse_log
from tensorwire.cli import main

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nccl-tests"
AZURE = FIXTURES / "azure-nd-h100-v5-allreduce.log"
COREWEAVE = FIXTURES / "coreweave-h100-12x8-sharp-allreduce.log"
_RANK = re.compile(
    r"^#\s+Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$"
)


def as_json(
    log: Path, binary: str = "./build/all_reduce_perf", env: Optional[list[str]] = None, v1: bool = False
) -> str:
    """The JSON nccl-tests -J would have written for the standard output ``log``, as its writer
    does (src/util.cu at v2.19.6): one line, a device per process (its first GPU), the printed
    digits as numbers."""
    text = log.read_text()
    ranks = [m.groups() for line in text.splitlines() if (m := _RANK.match(line))]
    first_of_process: dict[str, tuple[str, ...]] = {}
    for r in ranks:
        first_of_process.setdefault(r[2], r)
    per_process = len(ranks) // len(first_of_process)
    results: list[dict[str, Any]] = []
    for line in text.splitlines():
        f = line.split()
        if len(f) == 13 and f[0].isdigit():
            results.append(
                {"size": f[0], "count": f[1], "type": f[2], "redop": f[3], "root": f"{int(f[4]):6d}",
                 "out_of_place": _figures(f, 5), "in_place": _figures(f, 9), "actual_iterations": 20, "experiment_name": ""}
            )  # fmt: skip
    average = re.search(r"Avg bus bandwidth\s*:\s*(\S+)", text)
    key, inner = ("average_bus_bandwidith", "bandwidith") if v1 else ("average_bus_bandwidth", "bandwidth")
    doc = {
        "version": 1 if v1 else 3,
        "start_time": "2026-11-30 06:00:00",
        "args": [binary, "-b", "1M", "-e", "8G", "-f", "2", "-J", "out.json"],
        "env": ["PATH=/usr/bin", *(env or [])],
        "nccl_version": "21805",
        "config": {
            "nthreads": 1,
            "ngpus": per_process,
            "minimum_bytes": 1048576,
            "maximum_bytes": 8589934592,
            "step_factor": 2,
            "warmup_iters": 5,
            "iterations": 20,
            "devices": [
                {
                    "rank": int(r[0]),
                    "group": int(r[1]),
                    "pid": int(r[2]),
                    "hostname": r[3],
                    "device": int(r[4]),
                    "device_hex": r[5],
                    "device_info": r[6],
                }
                for r in first_of_process.values()
            ],
        },  # fmt: skip
        "results": results,
        "out_of_bounds": {"count": 0, "okay": True},
        key: {inner: average.group(1) if average else "0", "okay": "unchecked"},
        "end_time": "2026-11-30 06:01:00",
    }
    # Numbers as written: json.dumps would quote the digit strings, so unquote them.
    return re.sub(r'"(-?[0-9]+(?:\.[0-9]+)?)"', r"\1", json.dumps(doc)).replace('"root": -1', '"root": "    -1"')


def _figures(fields: list[str], j: int) -> dict[str, Any]:
    """One (time, algbw, busbw, #wrong) group of a table row, as -J writes it."""
    return {"time": fields[j], "alg_bw": fields[j + 1], "bus_bw": fields[j + 2], "nwrong": fields[j + 3]}


def _write(tmp_path: Path, text: str, name: str = "out.json") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _calibrate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["calibrate", "nccl-tests", *args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("log", [AZURE, COREWEAVE], ids=["1x8 one process", "12x8 a process per GPU"])
def test_the_json_of_a_run_reads_as_its_standard_output(tmp_path: Path, log: Path) -> None:
    text, js = parse_log(str(log)), parse_log(_write(tmp_path, as_json(log)))
    assert (js.collective, js.binary, js.ranks, js.nodes, js.gpus_per_node, js.gpu) == (
        text.collective, "all_reduce_perf", text.ranks, text.nodes, text.gpus_per_node, text.gpu
    )  # fmt: skip
    assert js.nccl_version == "2.18.5"  # nccl_version 21805 (the fixtures' logs print none)
    assert [(r.size, r.count, r.seconds, r.busbw, r.in_place_busbw) for r in js.rows] == [
        (r.size, r.count, r.seconds, r.busbw, r.in_place_busbw) for r in text.rows
    ]
    assert js.avg_busbw == text.avg_busbw and js.hosts == text.hosts
    assert [r.line for r in js.rows] == list(range(1, len(js.rows) + 1))


def test_calibrating_on_the_json_fits_what_the_standard_output_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = _calibrate(capsys, str(AZURE), "--json")
    assert rc == 0
    rc, out_json, _ = _calibrate(capsys, _write(tmp_path, as_json(AZURE)), "--json")
    assert rc == 0
    text, js = json.loads(out), json.loads(out_json)
    assert js["calibration"] == text["calibration"] and js["topology"] == text["topology"]
    strip = [{k: v for k, v in row.items() if k != "log"} for row in js["rows"]]
    assert strip == [{k: v for k, v in row.items() if k != "log"} for row in text["rows"]]


def test_nccl_algo_and_proto_come_from_the_recorded_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, as_json(AZURE, env=["NCCL_ALGO=Ring", "NCCL_PROTO=^LL128;allgather:LL"]))
    run = parse_log(path)
    assert (run.nccl_algo and run.nccl_algo.value, run.nccl_proto and run.nccl_proto.value) == ("ring", "^ll128")
    assert run.nccl_algo is not None and run.nccl_algo.line == "env"
    rc, out, _ = _calibrate(capsys, path, "--json")
    assert rc == 0 and json.loads(out)["strategy"] == "nccl:algo=ring,proto=^ll128"
    # A name NCCL does not have is refused naming the environment.
    rc, _, err = _calibrate(capsys, _write(tmp_path, as_json(AZURE, env=["NCCL_ALGO=Rnig"]), "typo.json"))
    assert rc == 2 and err.count("\n") == 1 and "typo.json:env: NCCL_ALGO=Rnig: 'rnig' is none of" in err, err


def test_version_1_s_spelling_and_cpu_time_read(tmp_path: Path) -> None:
    # nccl-tests before February 2026 wrote average_bus_bandwidith; -C 1 writes cpu_time, and
    # the GPU's time is then size / alg_bw (as for the standard output's cputime column).
    doc = json.loads(as_json(AZURE, v1=True), parse_float=str)
    assert parse_log(_write(tmp_path, json.dumps(doc).replace('"', '"'))).avg_busbw == parse_log(str(AZURE)).avg_busbw
    for result in doc["results"]:
        for key in ("out_of_place", "in_place"):
            result[key]["cpu_time"] = "3.5"
            del result[key]["time"]
    run = parse_log(_write(tmp_path, re.sub(r'"(-?[0-9]+\.[0-9]+)"', r"\1", json.dumps(doc)), "cpu.json"))
    first = next(r for r in parse_log(str(AZURE)).rows)
    assert run.rows[0].seconds == pytest.approx(first.size / first.algbw, rel=1e-12)


def _broken(tmp_path: Path, change: Any) -> str:
    doc = json.loads(as_json(AZURE), parse_float=str, parse_int=str)
    change(doc)
    return _write(tmp_path, re.sub(r'"(-?[0-9]+(?:\.[0-9]+)?)"', r"\1", json.dumps(doc)), "bad.json")


def _set(path: list[Any], value: Any) -> Any:
    def change(doc: Any) -> None:
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set(["args", 0], "./a.out"), "cannot tell the collective: args[0] is './a.out', no nccl-tests binary"),
        (_set(["args", 0], "broadcast_perf"), "broadcast_perf is not a collective calibration reads"),
        (_set(["results", 2, "out_of_place", "nwrong"], "3"), "result 3 (size 4194304) out_of_place: nwrong 3"),
        (_set(["results", 2, "out_of_place", "alg_bw"], "80.00"), "algbw 80.00 is not size / time"),
        (_set(["results", 2, "out_of_place", "bus_bw"], "nan"), "bus_bw 'nan' is not a number"),
        (_set(["results", 2, "count"], "7"), "result 3: size and count disagree"),
        (
            lambda doc: doc["results"].insert(3, doc["results"][2]),
            "result 4: size 4194304 (float, sum) again, as on result 3",
        ),
        (_set(["results", 0, "out_of_place"], None), "result 1 (size 1048576) has no out_of_place figures"),
        (_set(["config", "devices", 0, "hostname"], ["x"]), "config.devices[0].hostname is missing"),
        (_set(["results"], []), "no result times anything"),
        (lambda doc: doc.pop("config"), "config is missing or not an object"),
    ],
)
def test_a_malformed_json_log_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, message: str
) -> None:
    path = _broken(tmp_path, change)
    rc, out, err = _calibrate(capsys, path)
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"tensorwire: error: log: {path}") and message in err, err


def test_the_collective_option_must_agree_with_the_binary_and_stands_in_for_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = _calibrate(capsys, _write(tmp_path, as_json(AZURE)), "--collective", "allgather")
    assert rc == 2 and "collective: " in err and "is all_reduce_perf (allreduce), not allgather" in err, err
    nameless = _write(tmp_path, as_json(AZURE, binary="./job.sh"), "nameless.json")
    assert parse_log(nameless, "allreduce").collective == "allreduce"
    with pytest.raises(InputError):
        parse_log(nameless)


def test_a_key_given_twice_is_an_edited_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = as_json(AZURE)
    path = _write(tmp_path, text.replace('"version": 3', '"version": 3, "version": 3'), "twice.json")
    rc, _, err = _calibrate(capsys, path)
    assert rc == 2 and "key 'version' appears twice in one object" in err, err


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document (keys and list indices from the root)."""
    out = [prefix] if prefix else []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, child in items:
        out += _paths(child, (*prefix, key))
    return out


#: Values that sit on the readers' edges: zero (a time of 0 divided by zero), negatives, past
#: a double, NaN as nccl-tests writes it, empty containers.
_EDGES: list[Any] = [0, 0.0, "0", -1, 1e308, "1e400", "nan", None, [], {}, True, 2**70]
_DOC = json.loads(as_json(AZURE))
_PLACES = _paths(_DOC)


@settings(max_examples=300, deadline=None)
@given(place=st.sampled_from(_PLACES), value=st.sampled_from(_EDGES) | _JSON, drop=st.booleans())
def test_any_edit_of_a_json_log_reads_or_is_refused_as_bad_input(
    tmp_path_factory: Any, place: tuple[Any, ...], value: Any, drop: bool
) -> None:
    """Whatever one place of the Azure fixture's JSON holds instead (any JSON value), or with
    it removed, the reader returns a run or raises InputError: no other exception reaches the
    user."""
    doc = json.loads(json.dumps(_DOC))
    node = doc
    for key in place[:-1]:
        node = node[key]
    if drop:
        del node[place[-1]]
    else:
        node[place[-1]] = value
    target = tmp_path_factory.mktemp("fuzz") / "edited.json"
    target.write_text(json.dumps(doc))
    try:
        run = parse_log(str(target))
    except InputError:
        return
    assert run.rows and run.ranks >= 1
