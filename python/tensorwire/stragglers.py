"""Straggler and load-imbalance specs: how compute time varies across workers.

- ``none``: every worker computes in exactly the workload's time.
- ``normal:CV``: each worker's iteration compute is multiplied by a draw from
  Normal(1, CV) (clamped at 0.05).
- ``lognormal:SIGMA``: multiplier from a log-normal with mean 1.
- ``fixed:M0,M1,...``: one fixed multiplier per worker (``2`` = twice as slow).
- ``empirical:FILE``: multipliers drawn from measured values, one positive number per line
  (e.g. per-iteration compute times); normalised to mean 1.

Draws are seeded by ``--seed``, one stream per worker.
"""

from __future__ import annotations

import math
from typing import Any

from tensorwire import _core, io
from tensorwire._core import InputError

#: Largest file of measured multipliers read, bytes (``/dev/zero`` or a huge file is refused).
EMPIRICAL_FILE_LIMIT = 64 << 20


def parse_stragglers(spec: str, workers: int) -> dict[str, Any]:
    """Keyword arguments for :func:`tensorwire.simulate` from a spec.

    >>> parse_stragglers("lognormal:0.2", 8)
    {'stragglers': 'lognormal', 'spread': 0.2}
    >>> parse_stragglers("fixed:1,2", 2)["slowdowns"]
    [1.0, 2.0]
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
        values = _numbers(arg.split(","), spec)
        if len(values) != workers:
            raise InputError(
                "stragglers", f"{spec!r}: fixed needs one multiplier per worker ({workers}), got {len(values)}"
            )
        return {"stragglers": "fixed", "slowdowns": values}
    if kind == "empirical":
        if not arg.strip():
            raise InputError("stragglers", f"{spec!r}: empirical needs a file of multipliers, e.g. empirical:times.txt")
        data = io.read_input(arg, "stragglers", EMPIRICAL_FILE_LIMIT)
        values = _numbers(io.decode_text(data, arg, "stragglers").split(), spec)
        # (Each over the count first: the sum of two 1e308 is past a float.)
        mean = math.fsum(v / len(values) for v in values)
        return {"stragglers": "empirical", "slowdowns": [v / mean for v in values]}
    raise InputError(
        "stragglers", f"{spec!r} is not none, normal:CV, lognormal:SIGMA, fixed:M0,M1,... or empirical:FILE"
    )


def input_files(spec: str) -> list[str]:
    """The files a stragglers spec reads (``empirical:FILE``), for outputs to refuse to
    overwrite.

    >>> input_files("empirical:times.txt"), input_files("lognormal:0.2")
    (['times.txt'], [])
    """
    kind, _, arg = spec.partition(":")
    return [arg] if kind == "empirical" and arg.strip() else []


def _numbers(texts: list[str], spec: str) -> list[float]:
    try:
        values = [float(t) for t in texts if t.strip()]
    except ValueError:
        raise InputError("stragglers", f"{spec!r}: expected positive numbers") from None
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise InputError("stragglers", f"{spec!r}: expected positive numbers")
    return values
