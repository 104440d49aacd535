"""The ranges of the integers the core takes, checked before they cross into it.

Python integers are unbounded; the core's are not: counts of workers, iterations and batch
sizes are 32-bit unsigned, byte sizes, seeds and flow budgets 64-bit unsigned. A value out
of range is refused here as an :class:`InputError` naming the field (never wrapped, never an
``OverflowError``). A ``bool`` is not a number here (``True`` is not one worker).
"""

from __future__ import annotations

import numbers
import unicodedata
from typing import Any

from tensorwire._core import InputError

#: Largest value of the core's unsigned 32-bit counts (workers, iterations, batch size).
U32_MAX = 2**32 - 1
#: Largest value of the core's unsigned 64-bit quantities (bytes, seeds, flow budgets).
U64_MAX = 2**64 - 1


def is_int(value: Any) -> bool:
    """An integer (``int``, numpy's) that is not a ``bool``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    """A real number (``int``, ``float``, numpy's integers and floats, ``Fraction``) that is
    not a ``bool``: what :func:`check_real` converts.

    >>> is_real(0.5), is_real(True), is_real("0.5")
    (True, False, False)
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_int(field: str, value: Any, minimum: int = 0, maximum: int = U64_MAX) -> int:
    """``value`` if it is an integer in ``[minimum, maximum]``, else :class:`InputError`.

    >>> check_int("workers", 8, 1, U32_MAX)
    8
    """
    if not is_int(value) or not minimum <= value <= maximum:
        shown = (
            repr(value)
            if not is_int(value) or int(value).bit_length() <= 96
            else f"an integer of {int(value).bit_length()} bits"
        )
        raise InputError(field, f"{shown} is not allowed; need an integer from {minimum} to {maximum}")
    return int(value)


def check_real(field: str, value: Any) -> float:
    """``value`` as a float if it is a real number (``int``, ``float``, numpy's; not a
    ``bool``) that a float holds, else :class:`InputError`: ``10**400`` raised Python's
    ``OverflowError`` wherever it met a float.

    >>> check_real("spread", 1)
    1.0
    """
    if not is_real(value):
        raise InputError(field, f"{value!r:.80} is not a number")
    try:
        return float(value)
    except OverflowError:
        bits = value.bit_length() if isinstance(value, int) else "so many"
        raise InputError(field, f"an integer of {bits} bits is more than a number holds") from None


def check_text(field: str, value: Any, allow: str = "\t\n") -> str:
    """``value`` if it is text the core can take and a terminal can print (a ``str`` that is
    valid Unicode: no lone surrogates such as JSON's ``"\\ud800"``; no control characters but
    those in ``allow``: an ESC from a file would drive the terminal the tables are printed
    to), else :class:`InputError`."""
    if not isinstance(value, str):
        raise InputError(field, f"{value!r:.80} is not text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(
            field, f"{value[:40]!a}: not valid Unicode (character {e.start} is a lone surrogate)"
        ) from None
    bad = next(
        (i for i, c in enumerate(value) if (unicodedata.category(c) == "Cc" or c in _BIDI_CONTROLS) and c not in allow),
        None,
    )
    if bad is not None:
        raise InputError(
            field,
            f"{value[:40]!a}: character {bad} is a control character (U+{ord(value[bad]):04X}); give printable text",
        )
    return value


#: Unicode's bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069):
#: a right-to-left override in a workload's name printed the rest of the table line reversed.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
