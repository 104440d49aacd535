"""The ``tensorwire`` command. Every error in user input ends as one line on stderr and
exit status 2; no traceback is ever shown for bad input. A command group run without its
command (``tensorwire``, ``tensorwire calibrate``) shows its usage and help, as click does,
and exits with 2.

A run stopped by Ctrl-C (SIGINT) or SIGTERM (``timeout``, batch schedulers) stops within
about a second, prints one line (``tensorwire: interrupted``) and exits with 128 + the
signal's number: 130 for SIGINT, 143 for SIGTERM. Output files are written atomically, so
an interrupted command leaves the old file (or none), never a part of one.
"""

from __future__ import annotations

import errno
import signal
import sys
import warnings
from types import FrameType
from typing import Any, Optional, Sequence

import click

from tensorwire._core import InputError
from tensorwire.cli.terminal import after_success, say_after_success, silence_stdout

#: Click's error for a group run without its command (``tensorwire``, ``tensorwire
#: calibrate``): shown as click shows it, the usage and help on several lines, exit 2.
#: Click 8.1 has none (it prints the help itself and exits 0).
_NO_COMMAND: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())

#: Errors writing standard output (a full disk, an I/O error, a file too large): one line.
#: Output files report theirs as input errors naming their option.
_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EIO, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}

#: What an input that needs more memory than the machine has gets.
_NO_MEMORY = "memory: the input needs more memory than this machine has; give smaller sizes or counts"

#: torch's messages for an allocation that failed (CPU; "out of memory" also covers CUDA's).
_ALLOCATOR_FAILURES = ("can't allocate memory", "out of memory")

#: The signal that stopped the run (SIGINT unless SIGTERM arrived).
_stopped_by: list[int] = []


def _fail(message: str) -> int:
    click.echo(f"tensorwire: error: {message}", err=True)
    return 2


def _interrupted() -> int:
    signum = _stopped_by[-1] if _stopped_by else int(signal.SIGINT)
    name = signal.Signals(signum).name
    click.echo("tensorwire: interrupted" + ("" if signum == signal.SIGINT else f" ({name})"), err=True)
    return 128 + signum


def _on_signal(signum: int, frame: Optional[FrameType]) -> None:
    """SIGTERM is handled as Ctrl-C is: the run stops, pools shut down, workers end."""
    _stopped_by.append(signum)
    raise KeyboardInterrupt


def _not_utf8(args: Sequence[str]) -> Optional[str]:
    r"""The option (or argument) whose text is not UTF-8, if any. Python hands bytes that are
    not UTF-8 over as lone surrogates, which nothing downstream can encode.

    >>> _not_utf8(["-b", "25Gbps"]) is None, _not_utf8(["--topology=\udcff"]), _not_utf8(["-s", "\udcc3("])
    (True, '--topology', '-s')
    """
    for i, arg in enumerate(args):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            if arg.startswith("-") and "=" in arg:
                return arg.split("=", 1)[0]
            if i > 0 and args[i - 1].startswith("-"):
                return args[i - 1]
            return f"argument {i + 1}"
    return None


#: Fields the API names after its own arguments, named here after the command line's
#: options that set them (``--overhead``, ``--stragglers fixed:...``, ``--batch`` of an
#: LLM, ``--add-modules``).
CLI_FIELDS = {
    "per_message_overhead": "overhead",
    "slowdowns": "stragglers",
    "micro_batch": "batch",
    "batch_size": "batch",
    "modules": "add_modules",
}


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: Optional[str] = None,
    *,
    _default: Any = warnings.showwarning,
) -> None:
    """Keeps an :class:`~tensorwire.io.InputWarning` (a default assumed for what an input file
    does not say) as one line, ``tensorwire: warning: ...``, for the end of a command that
    succeeds; shows other warnings as Python does."""
    from tensorwire.io import InputWarning

    if not issubclass(category, InputWarning):
        _default(message, category, filename, lineno, file, line)
    else:
        say_after_success(f"tensorwire: warning: {message}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns (and, from the console script, exits with) the exit status. The
    input warnings of a command that succeeds follow its output on stderr; a refused command
    prints its one error line alone (a Chakra trace's "batch size unknown" came before the
    error that refused the trace)."""
    if sys.stdout is None:  # started with standard output closed (`tensorwire models >&-`)
        return _fail("stdout: closed; give the command somewhere to write its output (a file or a pipe)")
    after_success.clear()
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        status = _main(argv)
    if status == 0:
        for text in after_success:
            click.echo(text, err=True)
    return status


def _main(argv: Optional[Sequence[str]]) -> int:
    from tensorwire.api import UnseenOptionWarning
    from tensorwire.cli.app import cli
    from tensorwire.cli.repeats import check_repeats

    # The commands refuse or note a --latency that NCCL's timing does not see themselves
    # (options.check_latency_seen); a --cluster file's latency is for flow-level strategies.
    warnings.filterwarnings("ignore", category=UnseenOptionWarning)
    args = list(argv) if argv is not None else sys.argv[1:]
    bad = _not_utf8(args)
    if bad is not None:
        return _fail(f"{bad}: is not valid UTF-8 text")
    _stopped_by.clear()
    previous: Any = None
    try:
        previous = signal.signal(signal.SIGTERM, _on_signal)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        check_repeats(cli, args)
        cli.main(args=args, prog_name="tensorwire", standalone_mode=False)
        sys.stdout.flush()  # what is still buffered fails here, not at exit
    except InputError as e:
        field, message = e.args if len(e.args) == 2 else ("input", str(e))
        if field == "interrupted":  # the core stopped at a pending signal
            return _interrupted()
        return _fail(f"{CLI_FIELDS.get(field, field)}: {message}")
    except click.exceptions.NoSuchOption as e:
        return _fail(e.format_message())
    except _NO_COMMAND as e:  # the help, not squashed into one line
        click.echo(e.format_message(), err=True)
        return 2
    except click.UsageError as e:
        return _fail(e.format_message().replace("\n", " "))
    except click.Abort as e:
        if isinstance(e.__context__, KeyboardInterrupt) or _stopped_by:
            return _interrupted()
        return _fail("aborted")
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.ClickException as e:
        return _fail(e.format_message())
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        silence_stdout()
        return 0
    except OSError as e:
        if e.errno not in _OUTPUT_ERRNOS:
            raise
        silence_stdout()
        return _fail(f"stdout: cannot write the output ({e.strerror})")
    except MemoryError:
        return _fail(_NO_MEMORY)
    except RuntimeError as e:  # torch's allocators raise RuntimeError, not MemoryError
        if not any(m in str(e) for m in _ALLOCATOR_FAILURES):
            raise
        return _fail(_NO_MEMORY)
    except RecursionError:
        return _fail("input: nested too deeply")
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        sys.stderr.flush()
    return 0
