"""The ``tensorwire`` command. Every error in user input ends as one line on stderr and
exit status 2; no traceback is ever shown for bad input."""

from __future__ import annotations

from typing import Optional, Sequence

import click

from tensorwire._core import InputError


def _fail(message: str) -> int:
    click.echo(f"tensorwire: error: {message}", err=True)
    return 2


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns (and, from the console script, exits with) the exit status."""
    from tensorwire.cli.app import cli

    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="tensorwire", standalone_mode=False)
    except InputError as e:
        field, message = e.args if len(e.args) == 2 else ("input", str(e))
        return _fail(f"{field}: {message}")
    except click.exceptions.NoSuchOption as e:
        return _fail(e.format_message())
    except click.UsageError as e:
        return _fail(e.format_message().replace("\n", " "))
    except click.Abort:
        return _fail("aborted")
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.ClickException as e:
        return _fail(e.format_message())
    except KeyboardInterrupt:
        click.echo("tensorwire: interrupted", err=True)
        return 130
    except BrokenPipeError:
        return 0
    return 0
