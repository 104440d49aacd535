"""``tensorwire bench partial`` (the click command object the main CLI registers)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install 'tensorwire[torch]')")

from click.testing import CliRunner  # noqa: E402
from tensorwire._core import InputError  # noqa: E402
from tensorwire.torch.partial.cli import bench  # noqa: E402


def test_bad_options_name_the_field() -> None:
    # 100,000 kept forking until killed; "2,,3" was read as 2,3.
    for bad in ("1", "100000", "2,,3"):
        r = CliRunner().invoke(bench, ["partial", "--processes", bad])
        assert isinstance(r.exception, InputError) and r.exception.args[0] == "processes", bad
    r = CliRunner().invoke(bench, ["partial", "--kinds", "solo,ring"])
    assert isinstance(r.exception, InputError) and r.exception.args[0] == "kinds"


@pytest.mark.distributed
def test_bench_partial_runs_and_reports_json() -> None:
    args = ["partial", "-p", "3", "-d", "5ms", "-i", "4", "--warmup", "1", "--numel", "64", "--json"]
    r = CliRunner().invoke(bench, args)
    assert r.exit_code == 0, r.output
    (res,) = json.loads(r.output)
    assert res["processes"] == 3 and set(res["latency_s"]) == {"solo", "majority", "blocking"}
    assert res["nap"]["blocking"] == 3 and 1 <= res["nap"]["solo"] <= 3
    assert all(v > 0 for v in res["latency_s"].values()) and "speedup" in res
    assert 1 <= res["expected_majority_nap"] <= 3 and set(res["overruns"]) == set(res["latency_s"])
