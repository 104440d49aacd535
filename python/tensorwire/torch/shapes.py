"""One sample's shape, as the runtime's tools take it (``measure``, ``profile`` and the
``--input-shape`` option): one rule, without torch, for the modules that check it before a
tensor is made."""

from __future__ import annotations

import math
from typing import Any, Optional

from tensorwire._core import InputError

#: Most elements one sample may have (2^28, 1 GiB of fp32): refused before a tensor is made.
MAX_SAMPLE_ELEMENTS = 1 << 28


def check_input_shape(dims: Any, shown: Optional[str] = None) -> tuple[int, ...]:
    """One sample's shape, as ``measure``, ``profile`` and a :class:`~tensorwire.torch.measuring.Job` take it: a non-empty
    sequence of integers >= 1 of at most :data:`MAX_SAMPLE_ELEMENTS` elements, as a tuple of
    plain ints; else :class:`InputError` naming ``input_shape`` (``shown``: how the user
    wrote it, e.g. ``'3x0'``).

    >>> check_input_shape([3, 224, 224])
    (3, 224, 224)
    """
    said = shown if shown is not None else f"{dims!r:.80}"
    if (
        not isinstance(dims, (tuple, list))
        or not dims
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims)
    ):
        raise InputError(
            "input_shape", f"{said} must be a non-empty list of integers >= 1 (one sample's shape, e.g. 3x224x224)"
        )
    elements = math.prod(dims)
    if elements > MAX_SAMPLE_ELEMENTS:
        raise InputError(
            "input_shape", f"{said} is {elements:.3g} elements a sample; at most {MAX_SAMPLE_ELEMENTS:,} (2^28)"
        )
    return tuple(int(d) for d in dims)
