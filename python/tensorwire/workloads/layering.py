"""From what a trace saw to a :class:`~tensorwire.Workload`: the rules shared by the
PyTorch-profiler (Kineto) and Chakra importers.

A trace gives, for one training step of one rank, the compute of the forward and backward
passes and the collectives launched. The workload format wants layers in forward order, each
with forward and backward seconds and the gradient tensors it owns. The rules:

- a gradient tensor is one all-reduce or reduce-scatter launched from the start of the
  backward pass to the end of the step (its bytes are the whole buffer's: a DDP bucket, one
  parameter for per-parameter all-reduces, an FSDP unit's unsharded gradients for its
  reduce-scatter);
- it is owned by the layer whose backward was running (or had last run) when it was launched:
  in the simulator it becomes ready when that layer's backward ends, as in the trace;
- several ranks: per-layer times are the median over ranks; the ranks must have launched the
  same collectives (kind and bytes, in order) and have the same layers;
- the workload's element size (``dtype_bytes``) is that of the gradients' dtype, so that a
  strategy's ``reduce_dtype`` rescales a bf16 trace's bytes from 2, not 4.
"""

from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import dataclass, field
from typing import Optional, Sequence

from tensorwire._core import InputError
from tensorwire.io import InputWarning
from tensorwire.workload import Layer, Tensor, Workload

#: Collectives that synchronise gradients when launched from the backward pass on: DDP's
#: all-reduces, FSDP's and ZeRO's reduce-scatters.
GRADIENT_KINDS = ("allreduce", "reduce_scatter")


@dataclass(frozen=True)
class Collective:
    """One collective launched in the step. Times in seconds from the step's start.

    ``kind``: ``allreduce``, ``allgather``, ``reduce_scatter``, ``broadcast``, ``alltoall``,
    ``reduce``, ``gather``, ``scatter``, ``barrier``, ``send`` or ``recv``.
    ``phase``: ``forward`` (launched before the backward pass), ``backward`` or ``after``
    (after the last backward op). ``overlap_s``: how long it ran while compute ran.
    """

    kind: str
    bytes: int
    dtype: str
    launch_s: float
    start_s: float
    end_s: float
    phase: str
    layer: Optional[str] = None
    overlap_s: float = 0.0
    index: int = 0

    @property
    def is_gradient(self) -> bool:
        """An all-reduce or reduce-scatter (:data:`GRADIENT_KINDS`) from the backward pass
        on: a gradient tensor of the workload."""
        return self.kind in GRADIENT_KINDS and self.phase in ("backward", "after")


@dataclass(frozen=True)
class Step:
    """What one rank's trace says about one training step (seconds, bytes).

    ``layers``: forward order; their tensors are the gradient collectives they own, listed so
    that the reverse of the list is the launch order (the workload's production order).
    ``batch_size``: samples in the step (None where the trace does not say); ``passes``: its
    forward/backward passes (more than one: micro-batches of gradient accumulation, the
    earlier ones' compute counted in ``forward_s``).
    """

    rank: int
    step: int
    duration_s: float
    forward_s: float
    backward_s: float
    layers: tuple[Layer, ...]
    collectives: tuple[Collective, ...]
    batch_size: Optional[int] = None
    structure: str = "collectives"
    notes: tuple[str, ...] = field(default=())
    passes: int = 1

    @property
    def comm_time_s(self) -> float:
        """Sum of the collectives' durations."""
        return math.fsum(c.end_s - c.start_s for c in self.collectives)


def split_at_collectives(
    forward_s: float,
    backward_marks: Sequence[tuple[float, Sequence[Collective]]],
    backward_s: float,
    prefix: str = "segment",
) -> tuple[Layer, ...]:
    """Layers when a trace has no module structure: the backward pass is cut after each
    launch of gradient all-reduces.

    ``backward_marks``: (seconds since the backward began, collectives launched then), in
    time order; a mark past ``backward_s`` counts as at its end. Segment *i* of the backward
    (from the previous mark to this one) becomes a layer owning the collectives of the mark;
    the backward left after the last mark becomes a layer without tensors nearest the input.
    The forward is split across layers in proportion to their backward time (evenly if there
    is none): the trace cannot say more.
    """
    segments: list[tuple[float, list[Collective]]] = []
    previous = 0.0
    for at, colls in backward_marks:
        at = min(max(at, previous), backward_s)
        if segments and at == previous:
            segments[-1][1].extend(colls)
            continue
        segments.append((at - previous, list(colls)))
        previous = at
    if backward_s > previous or not segments:
        segments.append((backward_s - previous, []))
    # Backward order -> forward order.
    segments.reverse()
    total = math.fsum(b for b, _ in segments)
    layers = []
    for i, (back, colls) in enumerate(segments):
        share = back / total if total > 0 else 1.0 / len(segments)
        name = f"{prefix}{i}"
        layers.append(Layer(name, forward_s * share, back, owned_tensors(name, colls)))
    return tuple(layers)


def with_owners(layers: Sequence[Layer], colls: Sequence[Collective]) -> tuple[Collective, ...]:
    """``colls`` with ``layer`` set to the layer owning each as a gradient tensor: the first
    tensor (in layer order) named ``....KIND#INDEX`` after the collective.

    Linear in the number of tensors: ``KIND#INDEX`` has no dot, so a name ends with
    ``.KIND#INDEX`` exactly when that is the text after its last dot, which indexes them."""
    owner = {t.name: layer.name for layer in layers for t in layer.tensors}
    by_suffix: dict[str, str] = {}
    for tensor, layer_name in owner.items():
        head, dot, suffix = tensor.rpartition(".")
        if dot:
            by_suffix.setdefault(suffix, layer_name)
    out = []
    for c in colls:
        name = by_suffix.get(f"{c.kind}#{c.index}") if c.is_gradient else None
        out.append(
            Collective(c.kind, c.bytes, c.dtype, c.launch_s, c.start_s, c.end_s, c.phase, name, c.overlap_s, c.index)
        )
    return tuple(out)


def owned_tensors(layer: str, colls: Sequence[Collective]) -> tuple[Tensor, ...]:
    """The gradient tensors of ``colls`` (launch order) as a layer lists them: reversed, so
    that the simulator produces them in launch order. Named ``LAYER.KIND#INDEX``, INDEX being
    the collective's position in the step."""
    return tuple(Tensor(f"{layer}.{c.kind}#{c.index}", c.bytes) for c in reversed(colls) if c.is_gradient)


def merge_ranks(
    steps: Sequence[Step],
    name: str,
    sources: Sequence[str],
    what: str,
    *,
    batch_size: int = 1,
    dtype_bytes: Optional[int] = None,
) -> Workload:
    """One workload from one or several ranks' steps: median per-layer times; the ranks must
    agree on collectives and layers (else :class:`InputError` naming the first difference).
    ``batch_size``: samples per worker and step; ``dtype_bytes``: the gradients' element size
    (default 4)."""
    first = steps[0]
    signature = [(c.kind, c.bytes) for c in first.collectives]
    for s in steps[1:]:
        other = [(c.kind, c.bytes) for c in s.collectives]
        if other != signature:
            diff = next(
                (i for i, (a, b) in enumerate(zip(signature, other)) if a != b), min(len(signature), len(other))
            )
            mine = f"{signature[diff][0]} of {signature[diff][1]} B" if diff < len(signature) else "nothing"
            theirs = f"{other[diff][0]} of {other[diff][1]} B" if diff < len(other) else "nothing"
            raise InputError(
                "workload",
                f"ranks saw different collectives in step {first.step}: collective {diff} is {mine} on rank "
                f"{first.rank} but {theirs} on rank {s.rank} ({len(signature)} vs {len(other)} collectives); "
                "expected traces of the same job and step",
            )
        if [layer.name for layer in s.layers] != [layer.name for layer in first.layers]:
            raise InputError(
                "workload",
                f"ranks {first.rank} and {s.rank} have different layers ({len(first.layers)} vs {len(s.layers)}); "
                "expected traces of the same model",
            )
    layers = tuple(
        Layer(
            layer.name,
            statistics.median(s.layers[i].forward_s for s in steps),
            statistics.median(s.layers[i].backward_s for s in steps),
            layer.tensors,
        )
        for i, layer in enumerate(first.layers)
    )
    grads = [c for c in first.collectives if c.is_gradient]
    ranks = ", ".join(str(s.rank) for s in steps)
    micro = f", {first.passes} micro-batches" if first.passes > 1 else ""
    description = (
        f"{what} step {first.step}, rank(s) {ranks}: {len(layers)} layers ({first.structure}){micro}, "
        f"{len(first.collectives)} collectives, {len(grads)} gradient {_kinds(grads)} of "
        f"{sum(c.bytes for c in grads)} B; step {statistics.median(s.duration_s for s in steps):.6f} s"
    )
    return Workload(name, batch_size, layers, description, tuple(sources), dtype_bytes or 4)


def _kinds(grads: Sequence[Collective]) -> str:
    """The gradient collectives' kinds, as the description names them."""
    kinds = {c.kind for c in grads}
    if kinds == {"reduce_scatter"}:
        return "reduce-scatters"
    return "all-reduces and reduce-scatters" if len(kinds) > 1 else "all-reduces"


def assumed_batch(source: str, why: str) -> int:
    """Batch size 1, for a trace that does not say its own (``why``), with an
    :class:`~tensorwire.io.InputWarning` saying how to give it."""
    warnings.warn(
        f"{source}: batch size unknown ({why}); 1 assumed, which scales samples/s: give `tensorwire import-trace "
        "--batch N`, or set batch_size in the workload file",
        InputWarning,
        stacklevel=3,
    )
    return 1
