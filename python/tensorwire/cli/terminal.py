"""Standard output for the CLI's tables: a rich console that treats a reader gone away
(``tensorwire strategies | head -1``) as plain output does, and a stdout that cannot be
written (a full disk, ``> /dev/full``) as one line.

rich ends the process with status 1 on a broken pipe (``Console.on_broken_pipe``), where
``print`` to a closed pipe ends the CLI with 0 (:func:`tensorwire.cli.main`): the console
here raises :class:`BrokenPipeError` instead, for ``main`` to end as it does.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console


class _Console(Console):
    def on_broken_pipe(self) -> None:
        silence_stdout()
        raise BrokenPipeError


def stdout_console() -> Console:
    """The console the CLI prints its tables to: soft-wrapped off, 160 columns when not a
    terminal."""
    return _Console(soft_wrap=False, width=None if sys.stdout.isatty() else 160)


def silence_stdout() -> None:
    """Points standard output at /dev/null, so that what is still buffered is dropped
    instead of failing again when the interpreter flushes it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


__all__ = ["silence_stdout", "stdout_console"]
