"""A minimal Chakra ET writer for tests: protobuf wire format of et_def.proto's
GlobalMetadata and Node (fields used by tensorwire.workloads.chakra), length-delimited."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Union


def varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def length_delimited(number: int, payload: bytes) -> bytes:
    return key(number, 2) + varint(len(payload)) + payload


def attribute(name: str, value: Union[int, str, bool]) -> bytes:
    body = length_delimited(1, name.encode())
    if isinstance(value, bool):
        body += key(27, 0) + varint(int(value))
    elif isinstance(value, int):
        body += key(9, 0) + varint(value)  # int64_val
    else:
        body += length_delimited(29, value.encode())
    return body


def node(
    id: int,
    name: str,
    type: int,
    duration_micros: int = 0,
    ctrl_deps: Iterable[int] = (),
    data_deps: Iterable[int] = (),
    attrs: Any = (),
) -> bytes:
    body = key(1, 0) + varint(id) + length_delimited(2, name.encode()) + key(3, 0) + varint(type)
    ctrl, data = list(ctrl_deps), list(data_deps)
    if ctrl:
        body += length_delimited(4, b"".join(varint(d) for d in ctrl))  # packed
    for d in data:
        body += key(5, 0) + varint(d)  # unpacked, also valid protobuf
    body += key(7, 0) + varint(duration_micros)
    for k, v in dict(attrs).items():
        body += length_delimited(10, attribute(k, v))
    return body


def write(path: Path, nodes: Iterable[bytes], version: str = "0.0.4") -> Path:
    """GlobalMetadata, then the nodes, each preceded by its varint length."""
    meta = length_delimited(1, version.encode()) + length_delimited(2, attribute("schema", "1.0.2-chakra.0.0.4"))
    data = b"".join(varint(len(m)) + m for m in [meta, *nodes])
    path.write_bytes(data)
    return path
