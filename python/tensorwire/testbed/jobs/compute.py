"""Emulated compute: a device that is busy for the profiled time of each layer.

The worker sleeps instead of computing, so 2 CPU cores can stand in for any number of
GPUs. Sleeps are scheduled against deadlines: back-to-back layers chain from the previous
deadline, not from when the process happened to wake, so the scheduler's wake-up latency
(tens of microseconds a sleep) does not pile up over hundreds of layers. After waiting for
data (:meth:`ComputeClock.resync`), the device starts again from the current time.
"""

from __future__ import annotations

import ctypes
import time


def tighten_timer_slack(nanoseconds: int = 1000) -> None:
    """Asks Linux to wake this process within ``nanoseconds`` of a sleep's end (default slack: 50 us)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(29, nanoseconds, 0, 0, 0)  # PR_SET_TIMERSLACK
    except (OSError, AttributeError):
        pass


class ComputeClock:
    """A single compute stream (one GPU): runs emulated operations one after another."""

    def __init__(self) -> None:
        self._free_at = time.perf_counter()
        self.busy_s = 0.0

    def resync(self) -> None:
        """The stream waited for data: its next operation starts now, not at the last deadline."""
        self._free_at = max(self._free_at, time.perf_counter())

    def run(self, seconds: float) -> float:
        """Occupies the device for ``seconds``; returns the deadline it slept until (perf_counter s)."""
        self._free_at += seconds
        self.busy_s += seconds
        remaining = self._free_at - time.perf_counter()
        if remaining > 0:
            time.sleep(remaining)
        return self._free_at


def sleep_until(deadline: float) -> None:
    """Sleeps until ``time.perf_counter()`` reaches ``deadline``."""
    remaining = deadline - time.perf_counter()
    if remaining > 0:
        time.sleep(remaining)
