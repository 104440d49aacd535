"""The ranges of the integers the core takes, checked before they cross into it, and the
kinds of the arguments the API takes.

Python integers are unbounded; the core's are not: counts of workers, iterations and batch
sizes are 32-bit unsigned, byte sizes, seeds and flow budgets 64-bit unsigned. A value out
of range is refused here as an :class:`InputError` naming the field (never wrapped, never an
``OverflowError``). A ``bool`` is not a number here (``True`` is not one worker). An
argument of the wrong kind (``None`` for a workload, text for a number) is an
:class:`InputTypeError` (:func:`wrong_type`): an :class:`InputError` that is also a
``TypeError``. The checks below say which: what is no real number at all (``"4"``,
``None``, ``True``) is of the wrong kind; a number out of range (``-1``, ``nan``) or not
whole where an integer is needed (``1.5`` workers) is a plain :class:`InputError`.
"""

from __future__ import annotations

import numbers
import unicodedata
from typing import Any, TypeVar

from tensorwire._core import InputError

_T = TypeVar("_T")

#: Largest value of the core's unsigned 32-bit counts (workers, iterations, batch size).
U32_MAX = 2**32 - 1
#: Largest value of the core's unsigned 64-bit quantities (bytes, seeds, flow budgets).
U64_MAX = 2**64 - 1


class InputTypeError(InputError, TypeError):
    """An argument of the wrong kind (``simulate(None, ...)``, ``spread="0.2"``): an
    :class:`InputError` (``field`` names the argument, ``message`` says what it must be), so
    that every error in input is one, and a ``TypeError``, as Python's own errors of the kind
    are (code that caught ``TypeError`` still does)."""


def wrong_type(field: str, expected: str, value: Any) -> InputTypeError:
    """The error to raise where ``value``, given for ``field``, is not ``expected``.

    >>> str(wrong_type("spread", "a number", "0.2"))
    "spread: must be a number, not '0.2'"
    """
    return InputTypeError(field, f"must be {expected}, not {value!r:.80}")


def as_items(field: str, value: Any, expected: str) -> tuple[Any, ...]:
    """The items of ``value``, a sequence given for ``field``, taken once (a generator was
    used up by a check before it was used); :func:`wrong_type` (``expected``) where it is not
    iterable, or is text (one value, not a list of characters).

    >>> as_items("jobs.hosts", (h for h in range(3)), "a list of host numbers")
    (0, 1, 2)
    """
    if isinstance(value, tuple):
        return value
    if isinstance(value, (str, bytes)):
        raise wrong_type(field, expected, value)
    try:
        items = iter(value)
    except TypeError:
        raise wrong_type(field, expected, value) from None
    return tuple(items)


def items_of(field: str, value: Any, kind: type[_T], example: str = "") -> tuple[_T, ...]:
    """The items of ``value`` (:func:`as_items`), each a ``kind``; :func:`wrong_type` naming
    ``field`` where it is no sequence, or the item (``field[i]``) that is not a ``kind``.
    ``example`` follows the kind's name in the message.

    >>> items_of("slowdowns", [1.0, "2"], float)
    Traceback (most recent call last):
    tensorwire.limits.InputTypeError: slowdowns[1]: must be a float, not '2'
    """
    name = kind.__name__
    items = as_items(field, value, f"a list of {name} objects{example}")
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise wrong_type(f"{field}[{i}]", f"a {name}{example}", item)
    return items


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


def require_real(field: str, value: Any, expected: str) -> None:
    """:func:`wrong_type` (``field`` must be ``expected``) where ``value`` is no real number
    (:func:`is_real`): for checks of their own ranges, which refuse a number out of them as a
    plain :class:`InputError`.

    >>> require_real("mfu", "0.3", "a number in (0, 1]")
    Traceback (most recent call last):
    tensorwire.limits.InputTypeError: mfu: must be a number in (0, 1], not '0.3'
    """
    if not is_real(value):
        raise wrong_type(field, expected, value)


def check_int(field: str, value: Any, minimum: int = 0, maximum: int = U64_MAX) -> int:
    """``value`` if it is an integer in ``[minimum, maximum]``, else :class:`InputError`: an
    :class:`InputTypeError` where it is no number at all (text, ``None``, a list, a ``bool``:
    :func:`wrong_type`), a plain one where it is a number out of range or not whole.

    >>> check_int("workers", 8, 1, U32_MAX)
    8
    >>> check_int("workers", "8", 1, 16)
    Traceback (most recent call last):
    tensorwire.limits.InputTypeError: workers: must be an integer from 1 to 16, not '8'
    """
    require_real(field, value, f"an integer from {minimum} to {maximum}")
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
    ``OverflowError`` wherever it met a float; what is no number at all is an
    :class:`InputTypeError` (:func:`wrong_type`).

    >>> check_real("spread", 1)
    1.0
    >>> check_real("spread", "0.2")
    Traceback (most recent call last):
    tensorwire.limits.InputTypeError: spread: must be a number, not '0.2'
    """
    require_real(field, value, "a number")
    try:
        return float(value)
    except OverflowError:
        bits = value.bit_length() if isinstance(value, int) else "so many"
        raise InputError(field, f"an integer of {bits} bits is more than a number holds") from None


#: Longest wait a timeout may name, seconds (a year): ``datetime.timedelta`` and Gloo's
#: millisecond timeouts overflow on ``inf`` or ``1e300``.
MAX_TIMEOUT_S = 365 * 86400.0


def check_positive(field: str, value: Any, what: str, maximum: float = float("inf")) -> float:
    """``value`` as a float if it is a real number in ``(0, maximum]`` (finite), else
    :class:`InputError` (:class:`InputTypeError` where it is no number) naming ``field`` and
    ``what`` it is (``"a number of seconds"``): the runtime's
    timeouts and scales took text, ``-1`` and ``inf`` and failed later, deep in torch or in
    ``datetime``.

    >>> check_positive("timeout_s", 30, "a number of seconds", MAX_TIMEOUT_S)
    30.0
    >>> check_positive("timeout_s", -1, "a number of seconds", 3600)
    Traceback (most recent call last):
    ...
    tensorwire.InputError: timeout_s: -1 is not allowed; need a number of seconds > 0 and at most 3,600
    """
    bound = f" and at most {maximum:,.0f}" if maximum != float("inf") else ""
    require_real(field, value, f"{what} > 0{bound}")
    if not 0 < value <= maximum or value != value:
        raise InputError(field, f"{value!r:.80} is not allowed; need {what} > 0{bound}")
    return check_real(field, value)


def check_timeout(value: Any, field: str = "timeout_s") -> float:
    """A timeout in seconds (:func:`check_positive`, at most :data:`MAX_TIMEOUT_S`)."""
    return check_positive(field, value, "a number of seconds", MAX_TIMEOUT_S)


def check_text(field: str, value: Any, allow: str = "\t\n") -> str:
    """``value`` if it is text the core can take and a terminal can print (a ``str`` that is
    valid Unicode: no lone surrogates such as JSON's ``"\\ud800"``; no control characters but
    those in ``allow``: an ESC from a file would drive the terminal the tables are printed
    to), else :class:`InputError` (:class:`InputTypeError` where it is not a ``str``)."""
    if not isinstance(value, str):
        raise wrong_type(field, "text", value)
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
