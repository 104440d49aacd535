"""Straggler and load-imbalance specs: how compute time varies across workers.

- ``none``: every worker computes in exactly the workload's time.
- ``normal:CV``: each worker's iteration compute is multiplied by a draw from
  Normal(1, CV) (clamped at 0.05).
- ``lognormal:SIGMA``: multiplier from a log-normal with mean 1.
- ``fixed:M0,M1,...``: one fixed multiplier per worker (``2`` = twice as slow); ``MxN``
  stands for ``N`` workers at ``M`` in a row, so one slow 8-GPU node of 256 workers is
  ``fixed:1.5x8,1x248``.
- ``empirical:FILE``: multipliers drawn from measured values (e.g. per-iteration compute
  times), positive numbers separated by whitespace, commas or newlines (``#`` starts a
  comment; the decimal mark is a point); normalised to mean 1.
- ``one:M``: in every iteration one worker, drawn at random (the same draw for all),
  computes ``M`` times as long; the others take the workload's time (Li et al. 2019,
  seed 002, section 6.2: one random process delayed per step).

Draws are seeded by ``--seed``, one stream per worker.
"""

from __future__ import annotations

import math
import re
from typing import Any

from tensorwire import _core, io
from tensorwire._core import InputError
from tensorwire.io import clip

#: Largest file of measured multipliers read, bytes (``/dev/zero`` or a huge file is refused).
EMPIRICAL_FILE_LIMIT = 64 << 20


def parse_stragglers(spec: str, workers: int) -> dict[str, Any]:
    """Keyword arguments for :func:`tensorwire.simulate` from a spec.

    >>> parse_stragglers("lognormal:0.2", 8)
    {'stragglers': 'lognormal', 'spread': 0.2}
    >>> parse_stragglers("fixed:1,2", 2)["slowdowns"]
    [1.0, 2.0]
    >>> parse_stragglers("fixed:1.5x2,1x3", 5)["slowdowns"]
    [1.5, 1.5, 1.0, 1.0, 1.0]
    """
    kind, _, arg = spec.partition(":")
    if kind == "none" and not arg:
        return {"stragglers": "none"}
    if kind in ("normal", "lognormal"):
        try:
            spread = float(arg)
        except ValueError:
            raise InputError("stragglers", f"{spec!r}: {kind} needs a number, e.g. {kind}:0.1") from None
        if not 0 <= spread <= _core.MAX_SPREAD:
            raise InputError("stragglers", f"{spec!r}: the spread must be a number from 0 to {_core.MAX_SPREAD:g}")
        return {"stragglers": kind, "spread": spread}
    if kind == "fixed":
        values = _fixed(arg, spec, workers)
        if len(values) != workers:
            raise InputError(
                "stragglers", f"{spec!r}: fixed needs one multiplier per worker ({workers}), got {len(values)}"
            )
        return {"stragglers": "fixed", "slowdowns": values}
    if kind == "empirical":
        if not arg.strip():
            raise InputError("stragglers", f"{spec!r}: empirical needs a file of multipliers, e.g. empirical:times.txt")
        data = io.read_input(arg, "stragglers", EMPIRICAL_FILE_LIMIT)
        values = _measured(io.decode_text(data, arg, "stragglers"), spec)
        # (Each over the count first: the sum of two 1e308 is past a float.)
        mean = math.fsum(v / len(values) for v in values)
        return {"stragglers": "empirical", "slowdowns": [v / mean for v in values]}
    if kind == "one":
        factor = _positive(arg, spec, "", "one needs the slow worker's multiplier, a number > 0, e.g. one:2")
        return {"stragglers": "one", "slowdowns": [factor]}
    raise InputError(
        "stragglers",
        f"{spec!r} is not none, normal:CV, lognormal:SIGMA, fixed:M0,M1,..., empirical:FILE or one:M",
    )


#: What ``fixed:`` takes, for messages.
_FIXED_FORMAT = "expected positive numbers separated by commas, each alone or as MxN (N workers at M)"


def _fixed(arg: str, spec: str, workers: int) -> list[float]:
    """The multipliers of ``fixed:ARG``, ``MxN`` expanded to ``N`` copies of ``M``; refused
    as soon as they pass ``workers`` (so ``1x10**12`` allocates nothing)."""
    values: list[float] = []
    for token in arg.split(","):
        multiplier, times, count = token.partition("x")
        value = _positive(multiplier, spec, "", _FIXED_FORMAT)
        n = 1
        if times:
            if not (count.strip().isascii() and count.strip().isdigit()) or int(count) < 1:
                raise InputError(
                    "stragglers", f"{spec!r}: {clip(token.strip())!r} needs a count >= 1 after x; {_FIXED_FORMAT}"
                )
            n = int(count)
        if len(values) + n > workers:
            raise InputError(
                "stragglers", f"{spec!r}: fixed gives more multipliers than workers ({workers}); give one per worker"
            )
        values.extend([value] * n)
    return values


def input_files(spec: str) -> list[str]:
    """The files a stragglers spec reads (``empirical:FILE``), for outputs to refuse to
    overwrite.

    >>> input_files("empirical:times.txt"), input_files("lognormal:0.2")
    (['times.txt'], [])
    """
    kind, _, arg = spec.partition(":")
    return [arg] if kind == "empirical" and arg.strip() else []


#: A line that is one number with a decimal comma, or two integers separated by a comma.
_DECIMAL_COMMA = re.compile(r"\s*[+-]?[0-9]+,[0-9]+\s*")
#: What an empirical file holds, for messages.
_EMPIRICAL_FORMAT = (
    "expected positive numbers separated by whitespace, commas or newlines (# starts a comment; the decimal mark "
    "is a point)"
)


def _measured(text: str, spec: str) -> list[float]:
    """The positive numbers of an empirical file's ``text`` (:data:`_EMPIRICAL_FORMAT`);
    :class:`InputError` naming the line and the token that is not one, or a line that reads
    two ways (``1,5``: one number with a decimal comma, or two)."""
    values: list[float] = []
    for number, line in enumerate(text.splitlines(), 1):
        content = line.split("#", 1)[0]
        if _DECIMAL_COMMA.fullmatch(content):
            raise InputError(
                "stragglers",
                f"{spec!r}: line {number}: {clip(content.strip())!r} reads as one number with a decimal comma or as "
                "two numbers; write a decimal point (1.5), or separate numbers with spaces",
            )
        values.extend(
            _positive(t, spec, f"line {number}: ", _EMPIRICAL_FORMAT) for t in content.replace(",", " ").split()
        )
    if not values:
        raise InputError("stragglers", f"{spec!r}: no numbers in the file; {_EMPIRICAL_FORMAT}")
    return values


def _positive(token: str, spec: str, where: str, expected: str) -> float:
    """``token`` as a finite number > 0; :class:`InputError` naming it (after ``where``) and
    saying what was ``expected``."""
    try:
        value = float(token)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise InputError(
            "stragglers", f"{clip(spec)!r}: {where}{clip(token.strip())!r} is not a positive number; {expected}"
        )
    return value


def stragglers_note(spec: str) -> str:
    """What a title says of ``--stragglers`` (nothing for ``none``): the scaling factor and the
    compute of a run with stragglers are not those of the same run without, and a table
    that did not say so read as the workload's own.

    >>> stragglers_note("none"), stragglers_note("fixed:2,1,1,1")
    ('', 'stragglers fixed:2,1,1,1')
    """
    return "" if spec.strip() in ("", "none") else f"stragglers {spec.strip()}"
