"""The parameter-server transport, and failures: a dead or stuck rank never hangs the others."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.distributed, pytest.mark.needs_torch]


def test_parameter_server_matches_synchronous_training() -> None:
    import _runtime_jobs as jobs
    from tensorwire.torch import run_local

    workers = 2
    out: list[Any] = run_local(jobs.parameter_server, workers + 1, timeout_s=180)
    server = out[-1]
    for rank, r in enumerate(out[:-1]):
        assert len(r) == 4
        for label, got in r.items():
            assert got["diff"][0] <= 1, f"rank {rank} {label}: differs by up to {got['diff'][1]:.2e}"
    assert server["served"] == sum(r["groups"] for r in out[0].values()), "one push/pull per group"


@pytest.mark.parametrize("victim", [0, 2], ids=["leader-dies", "follower-dies"])
def test_a_dead_rank_makes_the_others_fail_quickly(victim: int) -> None:
    import _runtime_jobs as jobs
    from tensorwire.torch import run_local

    t0 = time.monotonic()
    out = run_local(jobs.dies, 3, victim, timeout_s=120, allow_failures=True)
    assert time.monotonic() - t0 < 110
    assert "exited with status 17" in str(out[victim])
    for rank, r in enumerate(out):
        if rank == victim:
            continue
        assert isinstance(r, dict) and r["type"] == "CommunicationError", f"rank {rank}: {r}"
        assert f"rank {rank}: gradient communication failed" in r["error"]
        assert r["after_s"] < 20, f"rank {rank} noticed after {r['after_s']:.1f} s"


def test_ranks_wrapping_different_models_are_all_refused_at_once() -> None:
    """A rank with a wider hidden layer waited out the timeout, then blamed a dead peer; every
    rank now refuses at construction, naming the first parameter that differs."""
    import _runtime_jobs as jobs
    from tensorwire.torch import run_local

    start = time.time()
    out = run_local(jobs.unlike_models, 3, timeout_s=120)
    assert all(
        o.startswith("module: rank 2's model differs from rank 0's: parameter 0 is ('0.weight', (96, 8)") for o in out
    ), out
    assert time.time() - start < 50, "refused at construction, not after the 60 s timeout"


def test_a_stuck_leader_makes_the_follower_fail_after_the_timeout() -> None:
    import _runtime_jobs as jobs
    from tensorwire.torch import run_local

    out = run_local(jobs.dies, 2, 0, 12.0, timeout_s=120, allow_failures=True)
    follower = out[1]
    assert isinstance(follower, dict) and follower["type"] == "CommunicationError", follower
    assert "Timed out" in follower["error"] or "timed out" in follower["error"].lower()
    assert 4 <= follower["after_s"] < 12, f"timeout_s=5, noticed after {follower['after_s']:.1f} s"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc/self/task (Linux only)")
def test_closing_ends_the_groups_threads_before_interpreter_exit() -> None:
    """A Gloo thread still alive at interpreter exit can abort the process (see
    ``release_groups``): close() and destroy_process_group() must end them."""
    import _runtime_jobs as jobs
    from tensorwire.torch import run_local

    for rank, r in enumerate(run_local(jobs.teardown, 2, timeout_s=120)):
        assert r["base"] > 0, f"rank {rank}: no Gloo threads found by name: {r}"
        assert r["during"] > r["base"], f"rank {rank}: the wrapper made no groups: {r}"
        assert r["closed"] == r["base"], f"rank {rank}: close() left the wrapper's group threads: {r}"
        assert r["destroyed"] == 0, f"rank {rank}: destroy_process_group() left the default group's threads: {r}"
        assert "closed" in r["refused"], f"rank {rank}: a closed transport started work: {r}"


def _torchrun(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    torchrun = Path(sys.executable).with_name("torchrun")
    script = Path(__file__).with_name("_torchrun_train.py")
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [str(torchrun), "--standalone", "--nproc-per-node=2", str(script), str(tmp_path / "out.json"), *args],
        capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip


def test_a_plain_script_runs_under_torchrun(tmp_path: Path) -> None:
    p = _torchrun(tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads((tmp_path / "out.json").read_text())
    assert got["world"] == 2 and got["identical_on_every_rank"] and got["groups"] > 10


@pytest.mark.parametrize(
    ("mode", "error"),
    [("accumulate", "gradient accumulation is not supported"), ("partial", "ValueError: the script's own error")],
)
def test_a_script_that_ends_in_an_error_exits_with_it_not_an_abort(tmp_path: Path, mode: str, error: str) -> None:
    # The script never reaches close(): ScheduledDataParallel's groups, or PartialAllreduce's
    # threads still waiting on a posted receive, must not abort the process at exit (a
    # SIGABRT hid the error); both ranks end with status 1 after the script's traceback.
    p = _torchrun(tmp_path, mode)
    assert error in p.stderr, p.stderr[-3000:]
    assert "terminate called" not in p.stderr and "SIGABRT" not in p.stderr, p.stderr[-3000:]
    # Each rank ends with status 1; one that is slower to fail may be stopped first by
    # torchrun's agent (SIGTERM, -15) once the other has failed (seen under a loaded CI).
    codes = [int(c) for c in re.findall(r"exitcode  : (-?\d+)", p.stderr)]  # the summary's lines
    assert len(codes) == 2 and 1 in codes and set(codes) <= {1, -15}, p.stderr[-3000:]
