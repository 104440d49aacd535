"""Chakra execution traces (MLCommons; the input of ASTRA-sim) as a
:class:`~tensorwire.Workload`, read without protobuf or any download.

A Chakra ET file (schema ``et_def.proto``, package ``ChakraProtoMsg``) is a stream of
protobuf messages, each preceded by its length as a varint: one ``GlobalMetadata``, then
``Node`` messages. This module decodes the protobuf wire format itself, for the fields it
needs (field numbers from et_def.proto):

- ``Node``: ``id`` (1), ``name`` (2), ``type`` (3: ``COMP_NODE`` = 4, ``COMM_SEND_NODE`` = 5,
  ``COMM_RECV_NODE`` = 6, ``COMM_COLL_NODE`` = 7; others are skipped), ``ctrl_deps`` (4),
  ``data_deps`` (5), ``duration_micros`` (7), ``attr`` (10);
- ``AttributeProto``: ``name`` (1) and an integer, bool or string value; the attributes read
  are ``comm_type`` (``CollectiveCommType``: ``ALL_REDUCE`` = 0, ``REDUCE`` = 1,
  ``ALL_GATHER`` = 2, ``GATHER`` = 3, ``SCATTER`` = 4, ``BROADCAST`` = 5, ``ALL_TO_ALL`` = 6,
  ``REDUCE_SCATTER`` = 7, ``REDUCE_SCATTER_BLOCK`` = 8, ``BARRIER`` = 9) and ``comm_size``
  (bytes).

Nodes run in dependency order (ties by id), one at a time: the compute before the first
backward node (a name containing ``Backward`` or starting ``autograd::engine``) is the
forward pass; if no node is so named, all compute counts as backward. The backward is cut
after each all-reduce (the rule of :func:`~tensorwire.workloads.layering.split_at_collectives`).
One file per rank; several files are merged as for PyTorch profiler traces.
"""

from __future__ import annotations

import heapq
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, Union

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.io import TRACE_FILE_LIMIT, read_input
from tensorwire.limits import U64_MAX
from tensorwire.workload import Workload
from tensorwire.workloads.layering import (
    Collective,
    Step,
    assumed_batch,
    merge_ranks,
    split_at_collectives,
    with_owners,
)

PathLike = Union[str, Path]

COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE = 4, 5, 6, 7
#: CollectiveCommType values of et_def.proto, as tensorwire's collective kinds.
COMM_TYPES = {
    0: "allreduce",
    1: "reduce",
    2: "allgather",
    3: "gather",
    4: "scatter",
    5: "broadcast",
    6: "alltoall",
    7: "reduce_scatter",
    8: "reduce_scatter",
    9: "barrier",
}
_EXPECTED = (
    "expected a Chakra execution trace: varint-length-delimited GlobalMetadata then Node messages (et_def.proto)"
)


class _Malformed(Exception):
    pass


@dataclass
class Node:
    """The fields of a Chakra ``Node`` that tensorwire uses."""

    id: int = 0
    name: str = ""
    type: int = 0
    ctrl_deps: list[int] = field(default_factory=list)
    data_deps: list[int] = field(default_factory=list)
    duration_micros: int = 0
    attrs: dict[str, Union[int, str, float, bool]] = field(default_factory=dict)


# -- protobuf wire format -----------------------------------------------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise _Malformed(f"truncated varint at byte {pos}")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise _Malformed(f"varint longer than 10 bytes at byte {pos}")


def _fields(buf: bytes) -> list[tuple[int, int, Union[int, bytes]]]:
    """(field number, wire type, value) of a message; LEN values as bytes."""
    out: list[tuple[int, int, Union[int, bytes]]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _Malformed(f"field number 0 at byte {pos}")
        value: Union[int, bytes]
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1 or wire == 5:
            size = 8 if wire == 1 else 4
            if pos + size > len(buf):
                raise _Malformed(f"truncated fixed-size field {number}")
            value, pos = buf[pos : pos + size], pos + size
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise _Malformed(f"field {number} runs past its message ({size} B at byte {pos} of {len(buf)})")
            value, pos = buf[pos : pos + size], pos + size
        else:
            raise _Malformed(f"unsupported wire type {wire} (field {number})")
        out.append((number, wire, value))
    return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _packed(wire: int, value: Union[int, bytes]) -> list[int]:
    if wire == 0:
        return [int(value)] if isinstance(value, int) else []
    if wire != 2 or not isinstance(value, bytes):
        raise _Malformed("a repeated integer field has the wrong wire type")
    out, pos = [], 0
    while pos < len(value):
        v, pos = _varint(value, pos)
        out.append(v)
    return out


def _attribute(buf: bytes) -> tuple[str, Union[int, str, float, bool, None]]:
    name = ""
    value: Union[int, str, float, bool, None] = None
    for number, wire, v in _fields(buf):
        if number == 1 and isinstance(v, bytes):
            name = v.decode("utf-8", "replace")
        elif number in (7, 9) and wire == 0 and isinstance(v, int):  # int32, int64
            value = _signed(v)
        elif number in (11, 13) and wire == 0 and isinstance(v, int):  # uint32, uint64
            value = v
        elif number in (15, 17) and wire == 0 and isinstance(v, int):  # sint32, sint64 (zigzag)
            value = (v >> 1) ^ -(v & 1)
        elif number == 27 and wire == 0:
            value = bool(v)
        elif number == 29 and isinstance(v, bytes):
            value = v.decode("utf-8", "replace")
        elif number in (19, 23) and wire == 5 and isinstance(v, bytes):
            value = struct.unpack("<I" if number == 19 else "<i", v)[0]
        elif number in (21, 25) and wire == 1 and isinstance(v, bytes):
            value = struct.unpack("<Q" if number == 21 else "<q", v)[0]
        elif number == 3 and wire == 1 and isinstance(v, bytes):
            value = struct.unpack("<d", v)[0]
        elif number == 5 and wire == 5 and isinstance(v, bytes):
            value = struct.unpack("<f", v)[0]
    return name, value


def _node(buf: bytes) -> Node:
    n = Node()
    for number, wire, v in _fields(buf):
        if number == 1 and wire == 0 and isinstance(v, int):
            n.id = v
        elif number == 2 and isinstance(v, bytes):
            n.name = v.decode("utf-8", "replace")
        elif number == 3 and wire == 0 and isinstance(v, int):
            n.type = v
        elif number == 4:
            n.ctrl_deps.extend(_packed(wire, v))
        elif number == 5:
            n.data_deps.extend(_packed(wire, v))
        elif number == 7 and wire == 0 and isinstance(v, int):
            n.duration_micros = v
        elif number == 10 and isinstance(v, bytes):
            key, value = _attribute(v)
            if value is not None:
                n.attrs[key] = value
    return n


#: Most nodes read from one trace, 2^23 (8.4 million): counted before any is decoded (a node
#: costs ~1 KiB in Python; a 99 MB trace of 1.1 million collectives filled 2.7 GB and ran a
#: minute before its layer count was refused).
MAX_NODES = 1 << 23


def read_nodes(path: PathLike) -> tuple[str, list[Node]]:
    """The version string of the GlobalMetadata and the nodes of a Chakra ET file."""
    p = Path(path)
    data = read_input(p, "workload", TRACE_FILE_LIMIT)
    messages: list[bytes] = []
    pos = 0
    try:
        while pos < len(data):
            size, start = _varint(data, pos)
            if start + size > len(data):
                raise _Malformed(
                    f"message {len(messages)} at byte {pos} claims {size} B but only {len(data) - start} remain (truncated?)"
                )
            messages.append(data[start : start + size])
            pos = start + size
        if not messages:
            raise _Malformed("empty file")
        if len(messages) - 1 > MAX_NODES:
            raise InputError("workload", f"{p.name}: {len(messages) - 1:,} nodes, more than the {MAX_NODES:,} read")
        meta = _fields(messages[0])
        version = next((v.decode("utf-8", "replace") for k, _w, v in meta if k == 1 and isinstance(v, bytes)), "")
        nodes = []
        comms = 0
        for m in messages[1:]:
            node = _node(m)
            nodes.append(node)
            comms += node.type in (COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE)
            if comms > _core.MAX_LAYERS:  # each a tensor of the workload: refused while reading
                raise InputError(
                    "workload",
                    f"{p.name}: more than {_core.MAX_LAYERS:,} communication nodes, the collectives (tensors) a "
                    "workload holds",
                )
    except _Malformed as e:
        raise InputError("workload", f"{p.name}: malformed Chakra trace: {e}; {_EXPECTED}") from None
    if not nodes:
        raise InputError("workload", f"{p.name}: Chakra trace has no nodes; {_EXPECTED}")
    return version, nodes


# -- nodes to a step ----------------------------------------------------------------------


def _topological(nodes: Sequence[Node], name: str) -> list[Node]:
    by_id: dict[int, Node] = {}
    for n in nodes:
        if n.id in by_id:
            raise InputError("workload", f"{name}: node id {n.id} appears twice; expected unique node ids")
        by_id[n.id] = n
    children: dict[int, list[int]] = {i: [] for i in by_id}
    waiting: dict[int, int] = {}
    for n in nodes:
        deps = set(n.ctrl_deps) | set(n.data_deps)
        for d in deps:
            if d not in by_id:
                raise InputError("workload", f"{name}: node {n.id} ({n.name!r}) depends on unknown node {d}")
            children[d].append(n.id)
        waiting[n.id] = len(deps)
    ready = [i for i, w in waiting.items() if w == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(by_id[i])
        for c in children[i]:
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, c)
    if len(order) != len(nodes):
        raise InputError("workload", f"{name}: dependencies form a cycle ({len(nodes) - len(order)} nodes never ready)")
    return order


def _is_backward(name: str) -> bool:
    return "backward" in name.lower() or name.startswith("autograd::engine")


def read_step(path: PathLike, *, default_rank: int = 0) -> Step:
    """What one rank's Chakra trace says: its compute in dependency order and collectives."""
    p = Path(path)
    _version, nodes = read_nodes(p)
    order = _topological(nodes, p.name)
    comp = [n for n in order if n.type == COMP_NODE]
    first_bwd = next((i for i, n in enumerate(order) if n.type == COMP_NODE and _is_backward(n.name)), None)
    last_comp = max((i for i, n in enumerate(order) if n.type == COMP_NODE), default=-1)
    clock = 0.0  # microseconds of compute so far, nodes run one at a time
    forward = 0.0
    pending: list[tuple[float, Node, str, str]] = []
    for i, n in enumerate(order):
        in_forward = first_bwd is not None and i < first_bwd
        if n.type == COMP_NODE:
            clock += n.duration_micros
            if in_forward:
                forward = clock
        elif n.type in (COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE):
            if n.type == COMM_COLL_NODE:
                ct = n.attrs.get("comm_type", 0)
                kind = COMM_TYPES.get(ct) if isinstance(ct, int) and not isinstance(ct, bool) else None
                if kind is None:
                    raise InputError(
                        "workload",
                        f"{p.name}: node {n.id} ({n.name!r}) has comm_type {ct!r}; "
                        "expected 0-9 (CollectiveCommType of et_def.proto)",
                    )
            else:
                kind = "send" if n.type == COMM_SEND_NODE else "recv"
            phase = "forward" if in_forward else ("after" if i > last_comp else "backward")
            pending.append((clock, n, kind, phase))
    if not pending:
        raise InputError(
            "workload",
            f"{p.name}: no communication nodes; expected COMM_COLL_NODE (7) nodes with comm_type and comm_size",
        )
    colls: list[Collective] = []
    marks: list[tuple[float, list[Collective]]] = []
    for index, (at, n, kind, phase) in enumerate(pending):
        size = n.attrs.get("comm_size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise InputError(
                "workload", f"{p.name}: node {n.id} ({n.name!r}) has no integer comm_size attribute (bytes)"
            )
        if size > U64_MAX:
            raise InputError(
                "workload", f"{p.name}: node {n.id} ({n.name!r}) has comm_size {size}; at most {U64_MAX} bytes"
            )
        c = Collective(kind, size, "bytes", at * 1e-6, at * 1e-6, (at + n.duration_micros) * 1e-6, phase, index=index)
        colls.append(c)
        if c.is_gradient:
            marks.append(((at - forward) * 1e-6, [c]))
    last_bwd = clock
    backward = last_bwd - forward
    layers = split_at_collectives(forward * 1e-6, marks, backward * 1e-6)
    return Step(
        rank=default_rank,
        step=0,
        duration_s=clock * 1e-6,
        forward_s=forward * 1e-6,
        backward_s=backward * 1e-6,
        layers=layers,
        collectives=with_owners(layers, colls),
        structure="collectives",
        notes=(f"{len(comp)} compute nodes",),
    )


def from_chakra(
    paths: Union[PathLike, Sequence[PathLike]], *, name: Optional[str] = None, batch_size: Optional[int] = None
) -> Workload:
    """A workload from one or several ranks' Chakra ET files (one file per rank).
    ``batch_size``: samples per worker and step (a Chakra trace does not say; default 1, with
    an :class:`~tensorwire.io.InputWarning`)."""
    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not files:
        raise InputError("workload", "give at least one Chakra trace file")
    steps = [read_step(f, default_rank=i) for i, f in enumerate(files)]
    stem = Path(files[0]).name.split(".")[0]
    return merge_ranks(
        steps,
        name or stem or "chakra",
        [f"Chakra execution trace {Path(f).name}" for f in files],
        "Chakra trace",
        batch_size=assumed_batch(Path(files[0]).name, "a Chakra trace records none")
        if batch_size is None
        else batch_size,
    )
