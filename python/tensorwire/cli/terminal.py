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


#: Lines for standard error once the command running has succeeded, in order, each once:
#: its input warnings and its notes (a refused command prints its one error line alone; a
#: note that a default strategy was left out had come before the error that then refused
#: the command's workload file).
after_success: list[str] = []


def say_after_success(line: str) -> None:
    """Keeps ``line`` (a whole ``tensorwire: ...`` line) for the end of a command that succeeds."""
    if line not in after_success:
        after_success.append(line)


def note(text: str) -> None:
    """A ``tensorwire: note: ...`` line, shown once the command succeeds."""
    say_after_success(f"tensorwire: note: {text}")
