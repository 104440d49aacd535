"""Chang et al. 2020's five-attribute trace as a workload.

One event per line: ``event_time tensor_name size source destination`` separated by
whitespace or commas; ``#`` starts a comment. Times are seconds relative to the first
event (the start of backpropagation), sizes are bytes. Only the events of the first
source seen are used (traces are per worker). Optional header comments set what the trace
cannot say: ``# forward_s: 0.176`` (forward pass, split evenly over layers),
``# first_backward_s: 0.05`` (compute before the first gradient; default 0) and
``# batch_size: 32``.

Each distinct tensor becomes one layer; its backward time is the gap to the previous event,
so gradients become ready in the simulator exactly when the trace says.
"""

from __future__ import annotations

import math
import re

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.limits import U32_MAX, U64_MAX
from tensorwire.workload import Layer, Tensor, Workload

_HEADER = re.compile(r"#\s*(forward_s|first_backward_s|batch_size)\s*[:=]\s*(\S+)")


def parse_trace(text: str, name: str = "trace") -> Workload:
    """Parses trace text; raises :class:`InputError` naming the line on bad input."""
    header: dict[str, float] = {"forward_s": 0.0, "first_backward_s": 0.0, "batch_size": 1.0}
    events: list[tuple[float, str, int]] = []
    source = None
    for number, raw in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(raw.strip())
        if m:
            try:
                header[m.group(1)] = float(m.group(2))
            except ValueError:
                raise InputError(f"trace line {number}", f"{m.group(1)} must be a number") from None
            continue
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = [f for f in re.split(r"[,\s]+", line) if f]
        if len(fields) != 5:
            raise InputError(
                f"trace line {number}",
                f"expected 5 fields (event_time tensor_name size source destination), got {len(fields)}",
            )
        when, tensor, size, src, _dst = fields
        try:
            t = float(when)
            b = int(size)
        except ValueError:
            raise InputError(f"trace line {number}", "event_time must be a number and size an integer") from None
        if not math.isfinite(t) or t < 0 or b < 0:
            raise InputError(f"trace line {number}", "event_time and size must be >= 0")
        if b > U64_MAX:
            raise InputError(f"trace line {number}", f"size {b} is more than {U64_MAX} bytes")
        source = source or src
        if src == source:
            events.append((t, tensor, b))
            if len(events) > _core.MAX_LAYERS:  # each event a layer: refused while reading
                raise InputError(
                    f"trace line {number}",
                    f"more than {_core.MAX_LAYERS:,} events of source {source!r}, each a layer of the workload;"
                    f" a workload holds at most {_core.MAX_LAYERS:,}",
                )
    if not events:
        raise InputError("trace", "no events found; expected lines of: event_time tensor_name size source destination")
    for key in ("forward_s", "first_backward_s"):
        if not (math.isfinite(header[key]) and header[key] >= 0):
            raise InputError(f"trace.{key}", "must be a number of seconds >= 0")
    batch = header["batch_size"]
    if not (math.isfinite(batch) and 1 <= batch <= U32_MAX and batch == int(batch)):
        raise InputError("trace.batch_size", f"{batch!r} is not allowed; need an integer from 1 to {U32_MAX}")
    events.sort(key=lambda e: e[0])
    seen: dict[str, int] = {}
    produced: list[tuple[float, str, int]] = []
    for t, tensor, b in events:
        if tensor in seen:
            raise InputError("trace", f"tensor {tensor!r} appears twice for source {source!r}")
        seen[tensor] = len(produced)
        produced.append((t, tensor, b))
    start = produced[0][0]
    gaps = []
    previous = start
    for i, (t, _tensor, _b) in enumerate(produced):
        gaps.append(header["first_backward_s"] if i == 0 else t - previous)
        previous = t
    forward_each = header["forward_s"] / len(produced)
    layers = tuple(
        Layer(tensor, forward_each, gap, (Tensor(tensor, b),))
        for (_, tensor, b), gap in zip(reversed(produced), reversed(gaps))
    )
    return Workload(name, int(batch), layers, f"trace of {source}", ("five-attribute trace (seed 000 section 5)",))
