"""Timing helpers of job processes: tight wake-ups and sleeping until a deadline.

Emulated compute itself is :class:`tensorwire.torch.device_stream.DeviceStream` (the jobs use it
with announced waits only: ``wait_threshold_s=None``).
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


def sleep_until(deadline: float) -> None:
    """Sleeps until ``time.perf_counter()`` reaches ``deadline``."""
    remaining = deadline - time.perf_counter()
    if remaining > 0:
        time.sleep(remaining)
