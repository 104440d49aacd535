"""An emulated device stream: compute replaced by sleeping against deadlines.

Used wherever compute is emulated (the runtime's emulated models, the testbed's jobs), so
that 2 CPU cores can stand in for any number of GPUs. Sleeps are chained to deadlines:
back-to-back operations start at the previous one's deadline, not when the process
happened to wake, so the scheduler's wake-up latency (tens of microseconds a sleep) does
not pile up over hundreds of layers. After waiting for data the stream starts again from
the current time. Needs nothing but the standard library.
"""

from __future__ import annotations

import math
import time
from typing import Optional

#: A pause longer than this between two operations is the stream waiting for something
#: (a forward pre-hook waiting for parameters, the training loop): the next operation starts
#: when it is called. A shorter lag is the host waking late from the last sleep: the next
#: operation is chained to the last one's deadline. Seconds.
WAIT_THRESHOLD_S = 0.002


class DeviceStream:
    """One emulated device (a GPU's compute stream): operations run one after another.

    Each operation sleeps until a deadline: the previous operation's deadline plus its own
    duration, as kernels queued on a GPU run back to back whatever the host does in between.
    After a wait announced with :meth:`waited`, or a lag longer than ``wait_threshold_s``
    (None: only announced waits count), the stream starts again from the current time.

    >>> s = DeviceStream()
    >>> s.waited(); end = s.run(0.001)
    >>> round(s.busy_s, 6), time.perf_counter() >= end
    (0.001, True)
    """

    def __init__(self, wait_threshold_s: Optional[float] = WAIT_THRESHOLD_S) -> None:
        self._free_at = -math.inf
        self.wait_threshold_s = wait_threshold_s
        #: Total emulated compute, seconds.
        self.busy_s = 0.0

    def waited(self) -> None:
        """The host waited for data: the next operation starts no earlier than now."""
        self._free_at = max(self._free_at, time.perf_counter())

    def run(self, seconds: float) -> float:
        """Occupies the device for ``seconds`` (sleeping); returns the deadline it slept until
        (``time.perf_counter`` seconds)."""
        start = self._free_at
        if self.wait_threshold_s is not None:
            now = time.perf_counter()
            if now - start > self.wait_threshold_s:
                start = now
        self._free_at = start + seconds
        self.busy_s += seconds
        remaining = self._free_at - time.perf_counter()
        if remaining > 0:
            time.sleep(remaining)
        return self._free_at
