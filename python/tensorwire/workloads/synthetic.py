"""Synthetic models (Chang et al. 2020, seed 000 section 8.5): a zoo model with a block of layers repeated,
e.g. Inception-v3 with N more compute-intensive 35x35x288 modules (``Mixed_5d``) or
network-intensive 17x17x768 modules (``Mixed_6e``). The copies keep the block's compute
times and gradient sizes and are inserted right after it.
"""

from __future__ import annotations

import dataclasses

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.workload import Layer, Tensor, Workload

#: Seed 000's two module kinds, as blocks of the Inception-v3 zoo model.
MODULES = {"compute": "Mixed_5d", "network": "Mixed_6e"}


def repeat_block(workload: Workload, prefix: str, count: int) -> Workload:
    """``workload`` with ``count`` copies of the layers whose names start with ``prefix.``.

    >>> from tensorwire import load_model
    >>> w = load_model("inception_v3")
    >>> bigger = repeat_block(w, "Mixed_6e", 2)
    >>> bigger.total_bytes - w.total_bytes
    17135616
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise InputError("modules", f"{count!r} must be an integer >= 0")
    block = [i for i, layer in enumerate(workload.layers) if layer.name.startswith(prefix + ".")]
    if not block:
        kinds = ", ".join(f"{kind} ({block})" for kind, block in MODULES.items())
        raise InputError(
            "modules",
            f"{workload.name} has no block {prefix!r}; the blocks are Inception-v3's (-m inception_v3): {kinds}, or any of its block names",
        )
    # A workload holds at most MAX_LAYERS layers and as many tensors: room for both.
    block_tensors = sum(len(workload.layers[i].tensors) for i in block)
    room = (_core.MAX_LAYERS - len(workload.layers)) // len(block)
    if block_tensors:
        room = min(room, (_core.MAX_LAYERS - len(workload.tensors)) // block_tensors)
    if count > room:  # refused before the copies are built (10^20 of them filled memory)
        raise InputError(
            "modules",
            f"{count:,} copies of {prefix} ({len(block)} layers, {block_tensors} tensors each) would pass the "
            f"{_core.MAX_LAYERS:,} layers and tensors a workload can hold; at most {max(room, 0):,}",
        )
    copies = [
        Layer(
            f"{prefix}_copy{c}{layer.name[len(prefix) :]}",
            layer.forward_s,
            layer.backward_s,
            tuple(Tensor(f"{prefix}_copy{c}{t.name[len(prefix) :]}", t.bytes) for t in layer.tensors),
        )
        for c in range(1, count + 1)
        for layer in (workload.layers[i] for i in block)
    ]
    end = block[-1] + 1
    layers = workload.layers[:end] + tuple(copies) + workload.layers[end:]
    return dataclasses.replace(workload, name=f"{workload.name}+{count}x{prefix}", layers=layers)


def add_modules(workload: Workload, spec: str) -> Workload:
    """``compute:N`` or ``network:N`` (Chang et al. 2020's two kinds; Inception-v3), or ``PREFIX:N``."""
    kind, _, count = spec.partition(":")
    if not count.isdigit():
        raise InputError("add_modules", f"{spec!r} is not KIND:COUNT (compute:25, network:125 or BLOCK:N)")
    return repeat_block(workload, MODULES.get(kind, kind), int(count))
