"""Ending a training script whose communication was not closed, without an abort.

tensorwire's runtime keeps Python threads that wait inside torch.distributed (Gloo) calls
and process groups of its own. A script that ends without ``close()``, most often because
an exception ended it, leaves them to interpreter finalisation, and there CPython 3.11 and
torch abort the process: a thread whose wait returns (the peer's exit closes the socket)
cannot take the interpreter back and the C++ runtime calls ``terminate`` ("terminate
called without an active exception", SIGABRT), or a group dropped late takes the GIL at
the wrong moment (see :func:`tensorwire.torch.transport.release_groups`). The script's own
error is then buried under a signal.

So every object that owns such threads registers here (:func:`track`) and unregisters when
closed (:func:`untrack`). At interpreter exit, while the interpreter is still whole, each
one left open gets ``stop_at_exit(wait_s)``: finish what is in flight within ``wait_s``
seconds, stop its threads, release its groups, and say whether every thread ended. Where
one could not (a peer is gone, a receive stays posted), the process ends at once with
status 1 after one line on stderr; the script's traceback is already printed by then.
Other ``atexit`` handlers registered before tensorwire's runtime was imported (torch's
among them) do not run in that case, and a ``sys.exit(n)`` with communication still
blocked ends with 1, not ``n``.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import weakref
from typing import Protocol

#: Seconds each object left open waits at exit for the work it has in flight.
EXIT_WAIT_S = 10.0


class StopsAtExit(Protocol):
    """What :func:`track` takes."""

    def stop_at_exit(self, wait_s: float) -> bool:
        """Finishes within ``wait_s`` seconds if it can, stops its threads and releases its
        groups; True if no thread of it is left waiting inside torch."""
        ...


_open: weakref.WeakSet[StopsAtExit] = weakref.WeakSet()


def track(obj: StopsAtExit) -> None:
    """``obj`` owns threads or groups that must end before interpreter finalisation."""
    _open.add(obj)


def untrack(obj: StopsAtExit) -> None:
    """``obj`` was closed (idempotent)."""
    _open.discard(obj)


def _stop_all() -> list[str]:
    """Stops every object still open; the class names of those left with a waiting thread."""
    stuck = []
    for obj in list(_open):
        try:
            ended = obj.stop_at_exit(EXIT_WAIT_S)
        except Exception:  # noqa: BLE001 - at exit the script's own error is the one to show
            ended = False
        if not ended:
            stuck.append(type(obj).__name__)
        _open.discard(obj)
    return stuck


def _at_exit() -> None:
    stuck = _stop_all()
    if not stuck:
        return
    print(
        f"tensorwire: {', '.join(sorted(set(stuck)))} still had communication in flight at exit "
        "(close() was not reached, or a peer ended first); ending the process now with status 1 "
        "rather than let torch abort it",
        file=sys.stderr,
    )
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(1)


atexit.register(_at_exit)

__all__ = ["EXIT_WAIT_S", "StopsAtExit", "track", "untrack"]
