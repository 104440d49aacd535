"""Creating, tearing down and cleaning up testbeds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import tensorwire as tw
from tensorwire.testbed import Testbed, cleanup_leftovers, netns

pytestmark = pytest.mark.testbed


def _ours(run_id: str) -> list[str]:
    return netns.run_namespaces(run_id)


def test_creates_hosts_and_switch_and_removes_them() -> None:
    with Testbed(hosts=3, rate="100Mbps") as tb:
        assert sorted(_ours(tb.run_id)) == sorted([tb.namespace(h) for h in range(3)] + [tb.names.switch_namespace])
        assert [tb.address(h) for h in range(3)] == ["10.77.0.1", "10.77.0.2", "10.77.0.3"]
        out = tb.run(2, ["ip", "-o", "-4", "addr", "show", "dev", tb.interface(2)]).stdout
        assert "10.77.0.3/24" in out
        assert len(tb.interface(2)) <= 15
        assert netns.record_path(tb.run_id).exists()
    assert _ours(tb.run_id) == []
    assert not netns.record_path(tb.run_id).exists()


def test_removes_everything_after_an_exception_inside_the_with() -> None:
    with pytest.raises(ZeroDivisionError):
        with Testbed(hosts=2) as tb:
            run_id = tb.run_id
            sleeper = tb.popen(0, ["sleep", "30"])
            raise ZeroDivisionError  # an error in the user's code inside the with block
    assert _ours(run_id) == []
    assert sleeper.wait(timeout=5) != 0


def test_hosts_reach_each_other_and_only_their_own_subnet() -> None:
    with Testbed(hosts=2, rate="100Mbps") as tb:
        routes = tb.run(0, ["ip", "-o", "route"]).stdout
        assert "default" not in routes
        code = "import socket; s=socket.create_connection(('10.77.0.2', 9), timeout=2)"
        probe = tb.run(0, [sys.executable, "-c", code], check=False)
        assert "ConnectionRefusedError" in probe.stderr  # reached host 1; nothing listens


def test_two_testbeds_coexist() -> None:
    with Testbed(hosts=2, rate="100Mbps") as a, Testbed(hosts=2, rate="200Mbps") as b:
        assert a.run_id != b.run_id
        assert len(_ours(a.run_id)) == 3 and len(_ours(b.run_id)) == 3
        ta = a.measure_throughput(0, 1, max_seconds=0.5)
        tb_ = b.measure_throughput(0, 1, max_seconds=0.5)
        assert ta.rate_bytes_per_s < 0.6 * tb_.rate_bytes_per_s  # each sees its own shaping
    assert _ours(a.run_id) == [] and _ours(b.run_id) == []


_KILLED_RUN = textwrap.dedent(
    """
    import sys, time
    from tensorwire.testbed import Testbed
    tb = Testbed(hosts=2, rate="100Mbps")
    tb.start()
    tb.popen(1, ["sleep", "60"])
    print(tb.run_id, flush=True)
    time.sleep(60)
    """
)


def _default_sigint() -> None:
    # A shell's background jobs start with SIGINT ignored, and a child inherits that;
    # the owner must react to Ctrl-C as it would in a terminal.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_owner(script: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, preexec_fn=_default_sigint
    )
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    assert len(run_id) == netns.RUN_ID_LENGTH, run_id
    return proc, run_id


def test_next_run_removes_what_a_killed_run_left() -> None:
    proc, run_id = _start_owner(_KILLED_RUN)
    deadline = time.monotonic() + 10
    while not (sleeper_pids := netns.namespace_pids(f"tw{run_id}-h1")) and time.monotonic() < deadline:
        time.sleep(0.05)  # `ip netns exec` may not have entered the namespace yet
    assert sleeper_pids
    with Testbed(hosts=2) as live:  # a live run must survive the cleanup of the dead one
        assert len(_ours(run_id)) == 3  # owner alive: not touched
        assert cleanup_leftovers() == []
        proc.kill()
        proc.wait()
        assert len(_ours(run_id)) == 3  # SIGKILL: nothing could clean up
        assert run_id in cleanup_leftovers()
        assert _ours(run_id) == []
        assert not netns.record_path(run_id).exists()
        assert len(_ours(live.run_id)) == 3
    for pid in sleeper_pids:
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_clean_up(sig: signal.Signals) -> None:
    # The run id is printed once inside `with`, so the signal arrives with the handler in place.
    script = _KILLED_RUN.replace("print(tb.run_id, flush=True)\n", "").replace(
        "time.sleep(60)", "with tb:\n    print(tb.run_id, flush=True)\n    time.sleep(60)"
    )
    proc, run_id = _start_owner(script)
    proc.send_signal(sig)
    # Cleanup must happen, not be fast: namespace teardown can take seconds on a loaded machine.
    assert proc.wait(timeout=60) != 0
    assert _ours(run_id) == []
    assert not netns.record_path(run_id).exists()


def test_bad_input_is_an_input_error() -> None:
    with pytest.raises(tw.InputError) as e:
        Testbed(hosts=0)
    assert e.value.args[0] == "hosts"
    with pytest.raises(tw.InputError) as e:
        Testbed(hosts=2, rate="fast")
    assert e.value.args[0] == "rate"
    with Testbed(hosts=2) as tb:
        with pytest.raises(tw.InputError):
            tb.address(2)
        with pytest.raises(tw.InputError):
            tb.run(0, "echo hi")


def test_timing_of_setup_is_small() -> None:
    t0 = time.monotonic()
    with Testbed(hosts=8):
        pass
    assert time.monotonic() - t0 < 10


def test_validate_cleanup_removes_what_a_killed_run_left_and_only_that() -> None:
    proc, run_id = _start_owner(_KILLED_RUN)
    stranger = f"{netns.PREFIX}{netns.new_run_id()}-h0"  # named like ours, but no record
    subprocess.run(["ip", "netns", "add", stranger], check=True)
    try:
        proc.kill()
        proc.wait()
        assert len(_ours(run_id)) == 3
        done = subprocess.run(
            [sys.executable, "-m", "tensorwire", "validate", "--cleanup"], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().startswith("removed the leftovers of") and run_id in done.stdout
        assert _ours(run_id) == [] and not netns.record_path(run_id).exists()
        assert stranger in netns.namespaces()  # not tensorwire's: left alone
        again = subprocess.run(
            [sys.executable, "-m", "tensorwire", "validate", "--cleanup"], capture_output=True, text=True, timeout=120
        )
        assert again.stdout.strip() == "nothing to clean up: no testbed run was left behind"
    finally:
        subprocess.run(["ip", "netns", "delete", stranger], check=False)


def test_validate_cleanup_needs_root(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tensorwire.cli import main

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert main(["validate", "--cleanup"]) == 2
    assert capsys.readouterr().err.strip() == (
        "tensorwire: error: cleanup: needs root: the testbed's namespaces are root's; run it as root (sudo)"
    )
