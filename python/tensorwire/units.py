"""Units at the API: bytes, bytes/s and seconds. Text such as ``4MiB``, ``25Gbps`` or ``5us``
is parsed by the core (one parser for the CLI, the API and strategy options).

``MB`` = 10^6 bytes, ``MiB`` = 2^20 bytes, ``Gbps`` = 10^9 bit/s.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

from tensorwire import _core
from tensorwire.limits import require_real


def _number(value: object, field: str) -> None:
    """Refuses what is not a number (:func:`~tensorwire.limits.wrong_type`, an
    :class:`~tensorwire.limits.InputTypeError`): ``True`` is not 1 B/s, and ``None`` not 0 s."""
    require_real(field, value, "a number or text such as 25Gbps or 5us")
    if isinstance(value, int) and abs(value).bit_length() > 1023:
        raise _core.InputError(field, f"an integer of {value.bit_length()} bits is too large")


def to_bytes(value: float | int | str, field: str = "size") -> float:
    """Bytes from a number (bytes) or text such as ``4MiB``.

    >>> to_bytes("1MiB")
    1048576.0
    """
    if isinstance(value, str):
        return _core.parse_bytes(field, value)
    _number(value, field)
    return float(value)


def to_rate(value: float | int | str, field: str = "bandwidth") -> float:
    """Bytes per second from a number (bytes/s) or text such as ``25Gbps``.

    >>> to_rate("8Gbps")
    1000000000.0
    """
    if isinstance(value, str):
        return _core.parse_rate(field, value)
    _number(value, field)
    rate = float(value)
    if not rate > 0 or rate == float("inf"):
        raise _core.InputError(field, f"{value!r} must be a rate greater than 0")
    return rate


def to_seconds(value: float | int | str, field: str = "duration") -> float:
    """Seconds from a number (seconds) or text such as ``5us``.

    >>> to_seconds("5us")
    5e-06
    """
    if isinstance(value, str):
        return _core.parse_duration(field, value)
    _number(value, field)
    seconds = float(value)
    if not seconds >= 0 or seconds == float("inf"):
        raise _core.InputError(field, f"{value!r} must be a duration >= 0")
    return seconds


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun`` in the singular or the plural (an ``s`` added).

    >>> counted(1, "worker"), counted(8, "worker"), counted(0, "collective")
    ('1 worker', '8 workers', '0 collectives')
    """
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def short_repr(obj: Any, counts: Mapping[str, str]) -> str:
    """``repr`` of the dataclass ``obj`` as the generated one writes it, but for the fields
    named in ``counts`` (field -> noun), which it gives as their length: a result of 1,024
    workers printed 70 kB of links and spans, an LLM workload 60 kB of layers.

    >>> @dataclasses.dataclass
    ... class Run:
    ...     name: str
    ...     spans: tuple[int, ...]
    >>> short_repr(Run("a", (1, 2, 3)), {"spans": "span"})
    "Run(name='a', spans=<3 spans>)"
    """
    shown = (
        f"{f.name}=<{counted(len(getattr(obj, f.name)), counts[f.name])}>"
        if f.name in counts
        else f"{f.name}={getattr(obj, f.name)!r}"
        for f in dataclasses.fields(obj)
        if f.repr
    )
    return f"{type(obj).__qualname__}({', '.join(shown)})"


def format_bytes(n: float) -> str:
    """``97.5 MiB``-style text for a byte count."""
    for suffix, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {suffix}"
    return f"{n:.0f} B"


def format_rate(bytes_per_s: float) -> str:
    """``25 Gbps``-style text for a rate in bytes/s."""
    bits = bytes_per_s * 8
    for suffix, scale in (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("Kbps", 1e3)):
        if bits >= scale:
            return f"{bits / scale:g} {suffix}"
    return f"{bits:g} bps"


def format_seconds(s: float) -> str:
    """``12.3 ms``-style text for a duration in seconds, four significant digits; from 1,000 s
    on whole seconds with thousands separated (it wrote ``8.94e+04 s``).

    >>> format_seconds(0.0123), format_seconds(1.5), format_seconds(89398.2), format_seconds(1234.5)
    ('12.3 ms', '1.5 s', '89,400 s', '1,234 s')
    """
    if s >= 1e3:
        return f"{float(f'{s:.4g}'):,.0f} s"
    for suffix, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.4g} {suffix}"
    return f"{s / 1e-9:.4g} ns"


def format_count(x: float) -> str:
    """A rate such as samples/s: thousands separated, with decimals when it is small (an LLM
    job makes a few samples per second), three significant digits below 100; ``-`` for NaN
    (a workload without compute has no samples).

    >>> format_count(1878.74), format_count(16.42), format_count(0.0123), format_count(float("nan"))
    ('1,879', '16.4', '0.0123', '-')
    """
    if math.isnan(x):
        return "-"
    if x >= 100 or x == 0:
        return f"{x:,.0f}"
    return f"{x:.3g}"
