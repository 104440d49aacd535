"""Link and node failures during a simulated run.

A :class:`Failure` names a link (``h3->sw``, ``leaf0->spine1``) or a node (``h3``, ``sw``,
``spine1``: every link to or from it) as :attr:`tensorwire.Result.link_utilization` names
them, a time, and the rate the links keep as a fraction of their nominal rate (0: down).
Routes are fixed (no rerouting is modelled): a job whose messages must cross a link that
is down stops with an ``InputError`` naming it. A scenario with failures is never folded.

>>> parse_failure("leaf0->spine1@20ms:rate=0.5")
Failure(target='leaf0->spine1', at_s=0.02, rate=0.5)
>>> parse_failure("h3@1s")
Failure(target='h3', at_s=1.0, rate=0.0)
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorwire._core import InputError
from tensorwire.limits import check_real, wrong_type
from tensorwire.units import to_seconds


@dataclass(frozen=True)
class Failure:
    """``target`` keeps ``rate`` (a fraction of its nominal rate; 0 = down) from ``at_s`` on."""

    target: str
    at_s: float
    rate: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.target, str):
            raise wrong_type("failures.target", "a link or node name (text) such as 'h3->sw' or 'h3'", self.target)
        for key in ("at_s", "rate"):
            # Not a number, or past a float (10**400: an OverflowError in the run), named here.
            check_real(f"failures.{key}", getattr(self, key))
        if not self.target:
            raise InputError("failures.target", "name a link (h0->sw) or a node (h0, sw, leaf0)")
        if not 0.0 <= self.rate <= 1.0:
            raise InputError(
                "failures.rate", f"{self.rate!r} must be a fraction of the nominal rate in [0, 1] (0: down)"
            )
        if not self.at_s >= 0.0:
            raise InputError("failures.at_s", f"{self.at_s!r} must be a time >= 0 s")


#: The form ``--fail`` and :func:`parse_failure` take, with examples that can run.
FAIL_FORM = "TARGET@TIME[:rate=X], e.g. leaf0->spine1@20ms:rate=0.5 or h3@1s:rate=0.25"


def parse_failure(text: str) -> Failure:
    """``TARGET@TIME[:rate=X]``: e.g. ``leaf0->spine1@20ms:rate=0.5`` or ``h3@1s`` (down).
    Every refusal names ``fail`` (the CLI's ``--fail``), those of the values too (a rate
    outside [0, 1] was ``failures.rate``, the field of :class:`Failure`'s own checks).

    >>> parse_failure("h3@1s:rate=2")
    Traceback (most recent call last):
    tensorwire.InputError: fail: 'h3@1s:rate=2': 2.0 must be a fraction of the nominal rate in [0, 1] (0: down)
    """
    if not isinstance(text, str):
        raise wrong_type("fail", f"text: {FAIL_FORM}", text)
    target, sep, rest = text.partition("@")
    if not sep or not target:
        raise InputError("fail", f"{text!r} is not {FAIL_FORM}")
    when, _, option = rest.partition(":")
    rate = 0.0
    if option:
        key, eq, value = option.partition("=")
        if key != "rate" or not eq:
            raise InputError("fail", f"{option!r} is not rate=X (a fraction of the nominal rate, 0 = down)")
        try:
            rate = float(value)
        except ValueError:
            raise InputError("fail", f"rate {value!r} is not a number in [0, 1]") from None
    at_s = to_seconds(when, "fail")
    try:
        return Failure(target, at_s, rate)
    except InputError as e:
        raise InputError("fail", f"{text!r}: {e.message}") from None
