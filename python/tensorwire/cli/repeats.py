"""An option that takes one value, given twice, is refused before the command runs.

click keeps the last of them: `simulate --cluster a.json --cluster b.json` ran with
`b.json`, `-m resnet50 -m vgg16` with VGG-16, `-n 4 -n 8` with 8 workers, and said nothing,
so a line edited by appending an option silently ran something else than it read. Options
that take several values (``multiple=True``) and flags (given twice, they say the same) are
left alone.
"""

from __future__ import annotations

from typing import Optional, Sequence

import click


def check_repeats(group: click.Group, args: Sequence[str]) -> None:
    """Raises :class:`click.UsageError` naming the first single-value option of the command
    ``args`` call (through nested groups) that is given more than once, with its values."""
    command: click.Command = group
    rest = list(args)
    while isinstance(command, click.Group):
        name = next((a for a in rest if not a.startswith("-")), None)
        if name is None:
            return  # no command (yet): click says what is missing
        sub = command.get_command(click.Context(command), name)
        if sub is None:
            return  # not a command: click says so
        rest = rest[rest.index(name) + 1 :]
        command = sub
    repeated = _first_repeated(command, rest)
    if repeated is not None:
        option, values = repeated
        shown = ", ".join(repr(v) for v in values)
        raise click.UsageError(f"{option} is given {len(values)} times ({shown}); it takes one value: give it once")


def _first_repeated(command: click.Command, args: Sequence[str]) -> Optional[tuple[str, list[str]]]:
    """``(option as first written, its values)`` of the first single-value option of
    ``command`` that ``args`` give twice; None if none is."""
    single: dict[str, click.Option] = {}
    takes_value: set[str] = set()
    for p in command.params:
        if not isinstance(p, click.Option):
            continue
        for opt in (*p.opts, *p.secondary_opts):
            if not p.is_flag and not p.count:
                takes_value.add(opt)
                if not p.multiple:
                    single[opt] = p
    seen: dict[str, tuple[str, list[str]]] = {}
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            break
        opt, value = token, None
        if token.startswith("--") and "=" in token:
            opt, value = token.split("=", 1)
        elif token.startswith("-") and not token.startswith("--") and len(token) > 2 and token[:2] in takes_value:
            opt, value = token[:2], token[2:]  # -n4
        if opt not in takes_value:
            continue
        if value is None:
            value = args[i] if i < len(args) else ""
            i += 1
        param = single.get(opt)
        if param is None:
            continue
        first, values = seen.setdefault(param.name or opt, (opt, []))
        values.append(value)
        if len(values) > 1:
            return first, values
    return None
