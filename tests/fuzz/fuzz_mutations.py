"""Mutations of input files for the fuzz tests: JSON trees (workload files, Kineto traces),
raw bytes (any file), and Chakra traces built from drawn parameters.

Every mutation is a pure function of its input and a ``random.Random``, so a hypothesis
example (which draws the seed) reproduces exactly.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Union

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "workloads"))
import chakra_writer as cw  # noqa: E402
from tensorwire.calibrate.cluster_file import OPTION_KEYS  # noqa: E402

Json = Any
PathKey = tuple[Union[str, int], ...]

U64 = 2**64 - 1

EXTREME_NUMBERS: tuple[Json, ...] = (
    0,
    -1,
    1,
    -(2**63),
    2**63 - 1,
    2**63,
    U64,
    2**64,
    2**64 + 1,
    10**30,
    2**1000,
    0.0,
    -0.0,
    1e-300,
    5e-324,
    1e300,
    1e308,
    -1e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    1.5,
    1e20,
    4294967297,
)
"""Numbers at the edges of u32/i64/u64/f64 and past them (JSON's NaN and Infinity
extensions included: Python's json writes and reads them)."""

OTHER_VALUES: tuple[Json, ...] = (
    None,
    True,
    False,
    "",
    "x",
    "1e308",
    "\ud800",
    "é" * 3,
    "\x00",
    [],
    {},
    [1, 2],
    {"a": 1},
    "9" * 400,
)
"""Values of the wrong type: null, booleans, strings (a lone surrogate, NUL), containers."""


def all_paths(obj: Json, prefix: PathKey = ()) -> list[PathKey]:
    """Every node of a JSON tree, root first, as key/index paths."""
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(all_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(all_paths(v, (*prefix, i)))
    return out


def get(obj: Json, path: PathKey) -> Json:
    for k in path:
        obj = obj[k]
    return obj


def replace(obj: Json, path: PathKey, value: Json) -> Json:
    """A copy of obj with the node at path replaced (the root when path is empty)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        return {k: (replace(v, rest, value) if k == head else v) for k, v in obj.items()}
    return [replace(v, rest, value) if i == head else v for i, v in enumerate(obj)]


def delete(obj: Json, path: PathKey) -> Json:
    """A copy of obj without the node at path (its parent loses the key or element)."""
    parent, last = path[:-1], path[-1]
    container = get(obj, parent)
    if isinstance(container, dict):
        new: Json = {k: v for k, v in container.items() if k != last}
    else:
        new = [v for i, v in enumerate(container) if i != last]
    return replace(obj, parent, new)


class Raw(str):
    """JSON text that ``dumps`` writes as it is (a leaf for the mutations)."""


def nested(depth: int, leaf: Json = 1) -> Raw:
    """``depth`` arrays around leaf, as text (Python's json and recursion stop far earlier)."""
    return Raw("[" * depth + json.dumps(leaf) + "]" * depth)


class Duplicated(dict):  # type: ignore[type-arg]
    """A dict whose one key is written twice by ``dumps`` (JSON allows it; the last wins)."""

    def __init__(self, base: dict[str, Json], key: str, first: Json) -> None:
        super().__init__(base)
        self.key, self.first = key, first


def dumps(obj: Json) -> str:
    """json.dumps that writes a Duplicated dict's key twice, first with the decoy value."""
    if isinstance(obj, Raw):
        return str(obj)
    if isinstance(obj, Duplicated):
        items = [f"{json.dumps(obj.key)}: {dumps(obj.first)}"]
        items += [f"{json.dumps(k)}: {dumps(v)}" for k, v in obj.items()]
        return "{" + ", ".join(items) + "}"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {dumps(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ", ".join(dumps(v) for v in obj) + "]"
    return json.dumps(obj)


def mutate_json(obj: Json, rng: random.Random, focus: Optional[Callable[[PathKey], bool]] = None) -> tuple[Json, str]:
    """One mutation of a JSON tree and a short description of it.

    With ``focus``, 70% of the time the node is chosen among the paths it accepts (the
    fields the reader uses), else among all nodes.
    """
    paths = all_paths(obj)
    if focus is not None and rng.random() < 0.7:
        focused = [p for p in paths if focus(p)]
        paths = focused or paths
    path = rng.choice(paths)
    node = get(obj, path)
    op = rng.choice(("number", "number", "number", "other", "delete", "duplicate", "nest", "scale", "grow"))
    where = "/".join(map(str, path)) or "(root)"
    if op == "delete" and path:
        return delete(obj, path), f"delete {where}"
    if op == "duplicate" and path and isinstance(get(obj, path[:-1]), dict):
        parent = get(obj, path[:-1])
        decoy = rng.choice(EXTREME_NUMBERS + OTHER_VALUES)
        return replace(obj, path[:-1], Duplicated(parent, str(path[-1]), decoy)), f"duplicate {where} (first {decoy!r})"
    if op == "duplicate" and isinstance(node, list) and node:
        i = rng.randrange(len(node))
        times = rng.choice((2, 100))
        return replace(
            obj, path, node[: i + 1] + [node[i]] * (times - 1) + node[i + 1 :]
        ), f"repeat {where}/{i} x{times}"
    if op == "nest":
        depth = rng.choice((64, 1000, 50_000))
        return replace(
            obj, path, nested(depth, node if not isinstance(node, (dict, list)) else 1)
        ), f"nest {where} {depth} deep"
    if op == "scale" and isinstance(node, (int, float)) and not isinstance(node, bool):
        factor = rng.choice((1e9, 1e18, 1e300, -1.0, 1e-9, 0.0))
        return replace(obj, path, node * factor), f"scale {where} by {factor!r}"
    if op == "grow" and isinstance(node, str):
        return replace(obj, path, node * rng.choice((1000, 100_000))), f"grow string {where}"
    if op == "other":
        v = rng.choice(OTHER_VALUES)
        return replace(obj, path, v), f"set {where} = {v!r:.40}"
    v = rng.choice(EXTREME_NUMBERS)
    return replace(obj, path, v), f"set {where} = {v!r}"


def mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One byte-level mutation: truncate, flip bytes, insert non-UTF-8, zero a range."""
    if not data:
        return b"\xff", "non-UTF-8 byte"
    op = rng.choice(("truncate", "flip", "flip", "insert", "zero", "append"))
    i = rng.randrange(len(data))
    if op == "truncate":
        return data[:i], f"truncate at {i}/{len(data)}"
    if op == "flip":
        n = rng.choice((1, 4, 32))
        b = bytearray(data)
        for _ in range(n):
            j = rng.randrange(len(b))
            b[j] ^= 1 << rng.randrange(8)
        return bytes(b), f"flip {n} bits"
    if op == "insert":
        junk = rng.choice((b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x00", b"\x80" * 9 + b"\x01"))
        return data[:i] + junk + data[i:], f"insert {junk!r} at {i}"
    if op == "zero":
        n = rng.choice((1, 16, 1024))
        return data[:i] + b"\x00" * n + data[i + n :], f"zero {n} bytes at {i}"
    junk = rng.choice((b"\xff\xfe", b"{", b"\n" * 3, b"\x00"))
    return data + junk, f"append {junk!r}"


# -- fixtures -------------------------------------------------------------------------------

DATA = Path(__file__).resolve().parents[1] / "unit" / "workloads" / "data"
KINETO_RANKS = (DATA / "ddp_tiny_rank0.json.gz", DATA / "ddp_tiny_rank1.json.gz")


def kineto_trace(rank: int = 0) -> Json:
    return json.loads(gzip.decompress(KINETO_RANKS[rank].read_bytes()))


KINETO_FIELDS = {
    "ts",
    "dur",
    "args",
    "Input Dims",
    "name",
    "cat",
    "ph",
    "traceEvents",
    "schemaVersion",
    "distributedInfo",
}


def kineto_focus(trace: Json) -> Callable[[PathKey], bool]:
    """Paths the importer reads: steps, backward ops and collectives, their times and shapes."""
    interesting = set()
    for i, e in enumerate(trace.get("traceEvents", [])):
        name = str(e.get("name", ""))
        if (
            "ProfilerStep" in name
            or e.get("ph") == "X"
            and "Optimizer" in name
            or "allreduce" in name.lower()
            or "Backward" in name
            or e.get("cat") == "user_annotation"
        ):
            interesting.add(i)

    def focus(p: PathKey) -> bool:
        if len(p) >= 2 and p[0] == "traceEvents" and p[1] in interesting:
            return len(p) == 2 or (len(p) == 3 and str(p[2]) in KINETO_FIELDS) or (len(p) >= 4 and p[3] == "Input Dims")
        return len(p) == 1

    return focus


def workload_focus(p: PathKey) -> bool:
    """Fields of a tensorwire-workload/1 file."""
    return bool(p) and str(p[-1]) in {
        "bytes",
        "forward_s",
        "backward_s",
        "batch_size",
        "dtype_bytes",
        "collective",
        "format",
        "layers",
        "tensors",
        "name",
    }


def five_attribute(rng: random.Random) -> tuple[str, str]:
    """A five-attribute trace with drawn header values, times and sizes (some extreme)."""

    def pick() -> str:
        return rng.choice(("0", "0.001", "1e308", "1e-300", "nan", "inf", "-1", "18446744073709551616", "1e23", "0.5"))

    lines = []
    what = []
    for key in ("forward_s", "first_backward_s", "batch_size"):
        if rng.random() < 0.4:
            v = pick()
            lines.append(f"# {key}: {v}")
            what.append(f"{key}={v}")
    t = 0.0
    for i in range(rng.choice((1, 3, 10))):
        t += rng.choice((0.001, 0.01))
        time_s = pick() if rng.random() < 0.2 else f"{t:.3f}"
        size = pick() if rng.random() < 0.2 else str(rng.choice((4, 4096, 411041792)))
        sep = rng.choice((" ", ","))
        lines.append(sep.join((time_s, f"t{i}/weights", size, "worker0", "ps0")))
        if time_s != f"{t:.3f}" or not size.isdigit():
            what.append(f"event {i}: time {time_s} size {size}")
    return "\n".join(lines) + "\n", "; ".join(what) or "plain"


# -- Chakra ---------------------------------------------------------------------------------

COMP_NODE, COMM_COLL_NODE = 4, 7  # et_def.proto NodeType
CHAKRA_INTS = (0, 1, 40, 100, 2600, 2**31, 2**32 + 1, 2**62, 2**63, U64, 10**15)


def chakra_trace(rng: random.Random) -> tuple[bytes, str]:
    """A DDP-like Chakra trace (forward ops, then a backward op and its all-reduce per layer)
    with zero to three anomalies: an extreme duration or size, another collective type, a
    dangling or self dependency, missing or mistyped attributes, a repeated node."""
    layers = rng.choice((1, 3, 8, 40))
    n_nodes = 3 * layers
    anomalies: dict[int, str] = {}
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        anomalies[rng.randrange(n_nodes)] = rng.choice(("duration", "duration", "size", "size", "type", "dep", "attrs"))
    what = [f"{layers} layers"]
    nodes: list[bytes] = []
    nid, prev = 1, 0

    def dur(i: int, normal: int) -> int:
        if anomalies.get(i) == "duration":
            v = rng.choice(CHAKRA_INTS)
            what.append(f"node {i + 1} duration {v}")
            return v
        return normal

    for i in range(layers):
        nodes.append(cw.node(nid, f"aten::linear_{i}", COMP_NODE, dur(nid - 1, 50), ctrl_deps=[prev] if prev else []))
        prev, nid = nid, nid + 1
    for _ in range(layers):
        nodes.append(cw.node(nid, "AddmmBackward0", COMP_NODE, dur(nid - 1, rng.choice((100, 300))), data_deps=[prev]))
        prev, nid = nid, nid + 1
        kind = anomalies.get(nid - 1)
        size = rng.choice((2600, 16640, 8448))
        attrs: dict[str, Union[int, str, bool]] = {"comm_type": 0, "comm_size": size}
        deps = [prev]
        if kind == "size":
            attrs["comm_size"] = rng.choice(CHAKRA_INTS)
        elif kind == "type":
            attrs["comm_type"] = rng.choice((1, 2, 3, 42, 2**31, U64))
        elif kind == "dep":
            deps = [rng.choice((nid, nid + 1000, U64))]  # self, dangling, huge
        elif kind == "attrs":
            attrs = rng.choice(({}, {"comm_type": 0}, {"comm_size": size}, {"comm_type": "x", "comm_size": True}))
        if kind in ("size", "type", "attrs"):
            what.append(f"node {nid} attrs {attrs}")
        elif kind == "dep":
            what.append(f"node {nid} ctrl_deps {deps}")
        nodes.append(cw.node(nid, "ALL_REDUCE", COMM_COLL_NODE, dur(nid - 1, 40), ctrl_deps=deps, attrs=attrs))
        nid += 1
    if rng.random() < 0.05:
        nodes.append(nodes[rng.randrange(len(nodes))])
        what.append("a node repeated")
    meta = cw.length_delimited(1, b"0.0.4") + cw.length_delimited(2, cw.attribute("schema", "1.0.2-chakra.0.0.4"))
    data = b"".join(cw.varint(len(m)) + m for m in [meta, *nodes])
    return data, ", ".join(what)


# -- nccl-tests logs ------------------------------------------------------------------------

NCCL_TESTS = Path(__file__).resolve().parents[1] / "fixtures" / "nccl-tests"
NCCL_LOGS = (NCCL_TESTS / "azure-nd-h100-v5-allreduce.log", NCCL_TESTS / "gcp-a3-mega-2x8-allreduce.log")
LOG_NUMBERS = (
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-1",
    "-0",
    "0",
    "0.00",
    "1e999",
    "1e-320",
    "5e-324",
    "1e308",
    "18446744073709551616",
    "9" * 40,
    "0x10",
    "1_0",
    "",
    "é",
    "N/A",
    "1.2.3",
)
"""What a corrupted number column of an nccl-tests row may hold."""


def _is_row(line: str) -> bool:
    f = line.split()
    return len(f) >= 2 and f[0].isdigit() and f[1].isdigit()


def mutate_log(text: str, rng: random.Random) -> tuple[Union[str, bytes], str]:
    """One mutation of an nccl-tests log: truncate, duplicate or drop lines (the header,
    rank lines, rows), corrupt or swap a row's numbers, huge sizes and counts, other ranks,
    hosts, thread counts, binaries and types, very long or very many lines, binary garbage.
    Bytes come back where the mutation is not text (non-UTF-8, NUL)."""
    lines = text.splitlines()
    rows = [i for i, line in enumerate(lines) if _is_row(line)]
    ranks = [i for i, line in enumerate(lines) if line.lstrip("# ").startswith("Rank")]
    op = rng.choice(
        (
            "number",
            "number",
            "number",
            "swap",
            "size",
            "truncate",
            "duplicate",
            "drop",
            "rank",
            "host",
            "threads",
            "binary",
            "type",
            "long",
            "many",
            "garbage",
            "empty",
            "fields",
        )
    )

    def join(ls: list[str]) -> str:
        return "\n".join(ls) + "\n"

    if op == "number" and rows:
        i = rng.choice(rows)
        f = lines[i].split()
        j = rng.randrange(len(f))
        v = rng.choice(LOG_NUMBERS)
        f[j] = v
        return join(lines[:i] + ["  ".join(f)] + lines[i + 1 :]), f"line {i + 1} field {j} = {v!r}"
    if op == "swap" and rows:
        i = rng.choice(rows + [i for i, line in enumerate(lines) if "busbw" in line])
        f = lines[i].split()
        a, b = rng.randrange(len(f)), rng.randrange(len(f))
        f[a], f[b] = f[b], f[a]
        return join(lines[:i] + ["  ".join(f)] + lines[i + 1 :]), f"line {i + 1} swap fields {a}, {b}"
    if op == "size" and rows:
        i = rng.choice(rows)
        f = lines[i].split()
        v = rng.choice(("0", "1", str(2**63), str(2**64), str(10**30), "9" * 400))
        f[rng.choice((0, 1))] = v
        return join(lines[:i] + ["  ".join(f)] + lines[i + 1 :]), f"line {i + 1} size/count {v[:30]}"
    if op == "truncate":
        cut = rng.randrange(len(text) + 1)
        return text[:cut], f"truncate at {cut}/{len(text)}"
    if op == "duplicate":
        i = rng.choice(rows + ranks + list(range(len(lines))))
        times = rng.choice((2, 2, 1000))
        return join(lines[: i + 1] + [lines[i]] * (times - 1) + lines[i + 1 :]), f"line {i + 1} x{times}"
    if op == "drop":
        i = rng.choice(ranks + list(range(len(lines))))
        return join(lines[:i] + lines[i + 1 :]), f"drop line {i + 1}"
    if op == "rank" and ranks:
        i = rng.choice(ranks)
        v = rng.choice(("0", "99", str(2**64), "-1", "1000000"))
        new = re.sub(r"Rank\s+\d+", f"Rank {v}", lines[i])
        return join(lines[:i] + [new] + lines[i + 1 :]), f"line {i + 1} rank {v}"
    if op == "host" and ranks:
        i = rng.choice(ranks)
        new = re.sub(r" on\s+\S+", rng.choice((" on other", " on é", " on " + "h" * 5000)), lines[i])
        return join(lines[:i] + [new] + lines[i + 1 :]), f"line {i + 1} host changed"
    if op == "threads":
        v = rng.choice(("0", "3", "1000000", str(2**64)))
        new = (
            re.sub(r"nGpus\s+\d+", f"nGpus {v}", text)
            if rng.random() < 0.5
            else re.sub(r"nThread\s+\d+", f"nThread {v}", text)
        )
        return new, f"nThread/nGpus {v}"
    if op == "binary":
        v = rng.choice(("all_gather_perf", "alltoall_perf", "sendrecv_perf", "x", "/a/b/reduce_scatter_perf", ""))
        return text.replace("all_reduce_perf", v), f"binary {v!r}"
    if op == "type" and rows:
        i = rng.choice(rows)
        f = lines[i].split()
        f[2], f[3] = rng.choice((("x", "sum"), ("float", "none"), ("int8", "max"), ("double", "sum"))), "sum"
        f[2] = f[2] if isinstance(f[2], str) else f[2][0]
        return join(lines[:i] + ["  ".join(f)] + lines[i + 1 :]), f"line {i + 1} type {f[2]}"
    if op == "long":
        i = rng.randrange(len(lines))
        return join(lines[:i] + [lines[i] + " 1" * 500_000] + lines[i + 1 :]), f"line {i + 1} 1 MB long"
    if op == "many" and rows:
        i = rng.choice(rows)
        f = lines[i].split()
        extra = []
        for k in range(rng.choice((100, 5000))):
            g = list(f)
            g[0] = str(int(f[0]) + 4 * (k + 1))
            g[1] = str(int(g[0]) // 4)
            extra.append("  ".join(g))
        return join(lines[: i + 1] + extra + lines[i + 1 :]), f"{len(extra)} more rows after line {i + 1}"
    if op == "garbage":
        i = rng.randrange(len(text) + 1)
        junk = rng.choice((b"\xff\xfe", b"\x00\x01\x02", bytes(range(256)), b"\xed\xa0\x80"))
        raw = text.encode()
        return raw[:i] + junk + raw[i:], f"insert {len(junk)} garbage bytes at {i}"
    if op == "empty":
        return rng.choice(("", "\n\n", "   \n", "#\n")), "empty"
    if op == "fields" and rows:
        i = rng.choice(rows)
        f = lines[i].split()
        k = rng.choice((3, 8, 9, 12, 20))
        f = (f + ["0"] * k)[:k]
        return join(lines[:i] + ["  ".join(f)] + lines[i + 1 :]), f"line {i + 1} has {k} fields"
    return text, "unchanged"


# -- cluster files --------------------------------------------------------------------------

#: The keys ``--cluster`` reads: the cluster options and the fitted numbers.
CLUSTER_KEYS = {*OPTION_KEYS, "calibration"}


def cluster_focus(p: PathKey) -> bool:
    """The fields ``--cluster`` reads."""
    return len(p) == 1 and str(p[0]) in CLUSTER_KEYS


TOPOLOGY_TEXTS = (
    "rail",
    "rail:node=hgx-h200",
    "rail:node=a3-mega,sharp=true,nvls=false",
    "rail:intra_efficiency=0",
    "rail:inter_efficiency=1e308",
    "rail:inter_latency=1e300s",
    "rail:intra_fill=11",
    "rail:inter_step=2ms",
    "nodes:machine=dgx-h100",
    "star",
    "",
    "rail:node=\ud800",
    "rail:" + "x=1," * 10_000,
)
"""Topology specs a mutated cluster file may carry."""
