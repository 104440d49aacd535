"""PyTorch profiler traces (the Chrome/Kineto JSON of ``prof.export_chrome_trace``) as a
:class:`~tensorwire.Workload`.

One training step (a ``ProfilerStep#N`` range; by default the last complete one) of each
rank's trace is read:

- **compute**: the backward pass runs from the first to the end of the last
  ``autograd::engine::evaluate_function`` op of the step; the forward pass from the first
  ``nn.Module`` range (``with_stack=True``), else ``DistributedDataParallel.forward``, else the
  step's start, to the backward's start (so it includes the loss).
- **collectives**: the c10d ops that launch them (``c10d::allreduce_``, ...), or
  ``record_param_comms`` ranges (NCCL, functional collectives), or failing both the
  backends' own ranges (``gloo:all_reduce``, ``nccl:all_reduce``). Their execution is taken
  from the backend's range on its worker thread (Gloo) or the ``nccl...`` GPU kernel, matched
  in launch order; sizes from ``In msg nelems``/``dtype`` or the recorded shapes and types
  (record the trace with ``record_shapes=True``).
- **layers**: with module structure (``with_stack=True`` records ``nn.Module: NAME`` ranges),
  a layer is a module whose backward accumulates gradients: each backward op is mapped to
  the forward op with the same autograd ``Sequence number``, hence to the innermost module
  that ran it; ``AccumulateGrad`` follows the op before it. A layer's forward time runs from
  the end of the previous layer's forward to the end of its own; its backward time from the
  previous layer's gradients being ready to its own (as ``tensorwire profile`` measures).
  Without module structure the backward is cut after each gradient all-reduce launch (see
  :func:`tensorwire.workloads.layering.split_at_collectives`).

Times are CPU-side: for CUDA traces they are the host's view of the ops (launch, not kernel,
time), an approximation documented in docs/traces.md.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

from tensorwire._core import InputError
from tensorwire.io import TRACE_FILE_LIMIT, clip, gunzip, loads_json, read_input
from tensorwire.limits import U64_MAX, is_int
from tensorwire.workload import Layer, Workload
from tensorwire.workloads.layering import (
    Collective,
    Step,
    merge_ranks,
    owned_tensors,
    split_at_collectives,
    with_owners,
)

PathLike = Union[str, Path]

#: Bytes per element, by the names traces use: c10 ScalarType names (``record_param_comms``
#: "dtype"), the C++ type names of recorded shapes ("Input type"), torch dtype names.
DTYPE_BYTES: dict[str, int] = {
    **{
        k: 1
        for k in (
            "Byte",
            "Char",
            "Bool",
            "QInt8",
            "QUInt8",
            "Float8_e5m2",
            "Float8_e4m3fn",
            "Float8_e5m2fnuz",
            "Float8_e4m3fnuz",
        )
    },
    **{k: 2 for k in ("Short", "Half", "BFloat16", "UInt16")},
    **{k: 4 for k in ("Int", "Float", "QInt32", "ComplexHalf", "UInt32")},
    **{k: 8 for k in ("Long", "Double", "ComplexFloat", "UInt64")},
    "ComplexDouble": 16,
    **{
        k: 1
        for k in (
            "unsigned char",
            "signed char",
            "bool",
            "c10::Float8_e4m3fn",
            "c10::Float8_e5m2",
            "uint8",
            "int8",
            "float8_e4m3fn",
            "float8_e5m2",
        )
    },
    **{
        k: 2
        for k in (
            "short int",
            "short",
            "unsigned short",
            "c10::Half",
            "c10::BFloat16",
            "float16",
            "bfloat16",
            "half",
            "int16",
        )
    },
    **{k: 4 for k in ("int", "unsigned int", "float", "float32", "int32", "c10::complex<c10::Half>")},
    **{
        k: 8
        for k in (
            "long int",
            "long",
            "long long",
            "unsigned long",
            "double",
            "float64",
            "int64",
            "c10::complex<float>",
            "complex64",
        )
    },
    **{k: 16 for k in ("c10::complex<double>", "complex128")},
}

#: Collective kinds by the names c10d ops, record_param_comms and backends use.
_KINDS = {
    "allreduce": "allreduce",
    "all_reduce": "allreduce",
    "allreduce_coalesced": "allreduce",
    "allgather": "allgather",
    "all_gather": "allgather",
    "_allgather_base": "allgather",
    "allgather_into_tensor_coalesced": "allgather",
    "all_gather_into_tensor": "allgather",
    "allgather_coalesced": "allgather",
    "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter": "reduce_scatter",
    "reducescatter": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "broadcast": "broadcast",
    "alltoall": "alltoall",
    "all_to_all": "alltoall",
    "alltoall_base": "alltoall",
    "all_to_allv": "alltoall",
    "reduce": "reduce",
    "gather": "gather",
    "scatter": "scatter",
    "barrier": "barrier",
    "send": "send",
    "recv": "recv",
    "recv_any_source": "recv",
}
#: (At most 18 digits: a longer number is no step torch writes, and int() of 4,300 raises.)
_STEP = re.compile(r"ProfilerStep#([0-9]{1,18})$")  # ASCII digits, as torch writes them
_BACKWARD = "autograd::engine::evaluate_function: "
_MODULE = "nn.Module: "
_BACKEND = re.compile(r"(gloo|nccl|mpi|ucc|xccl):(\w+)$")
_C10D = re.compile(r"c10d::(\w+?)_?$")
_NCCL_KERNEL = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)", re.IGNORECASE)
#: Largest rank a trace's ``distributedInfo`` may give: torch's ranks are C ints (32 bits, signed).
RANK_MAX = 2**31 - 1


@dataclass(frozen=True)
class _Ev:
    name: str
    tid: Any
    ts: float  # microseconds, as in the trace
    dur: float
    cat: str
    args: dict[str, Any]

    @property
    def end(self) -> float:
        return self.ts + self.dur


def _kind(raw: str) -> Optional[str]:
    key = raw.lower().replace("-", "_")
    return _KINDS.get(key) or _KINDS.get(key.rstrip("_"))


def _where(name: str, e: _Ev) -> str:
    """``e`` named for an error message: the file, the event's name and its start (us)."""
    return f"{name}: event {clip(e.name)!r} at {e.ts!r} us"


def _shown(value: Any) -> str:
    """A value of the trace quoted in an error message, in a few characters: a container is
    named, not printed (it can be megabytes, or nested too deeply for ``repr``)."""
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "an object"
    if is_int(value) and value.bit_length() > 96:
        return f"an integer of {value.bit_length()} bits"
    return clip(repr(value))


# -- reading ------------------------------------------------------------------------------


def load_trace(path: PathLike) -> dict[str, Any]:
    """The trace's JSON (``.json`` or gzip-compressed, detected by content) as a dict with
    ``traceEvents``; :class:`InputError` naming the file and what is wrong otherwise."""
    p = Path(path)
    raw = read_input(p, "workload", TRACE_FILE_LIMIT)
    if raw[:2] == b"\x1f\x8b":
        raw = gunzip(raw, p.name, "workload", TRACE_FILE_LIMIT)
    data = loads_json(
        raw, p, "workload", expected="a Kineto JSON trace (.json or .json.gz)", invalid="; the trace may be truncated"
    )
    if isinstance(data, list):
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise InputError(
            "workload", f"{p.name}: no 'traceEvents' list; expected the JSON of torch.profiler's export_chrome_trace"
        )
    return data


def _events(data: dict[str, Any], name: str) -> list[_Ev]:
    out = []
    for e in data["traceEvents"]:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        ts, dur = e.get("ts"), e.get("dur", 0)
        times: Optional[tuple[float, float]] = None
        if isinstance(ts, (int, float)) and isinstance(dur, (int, float)) and not isinstance(ts, bool):
            try:  # (an integer past a float's range raises OverflowError)
                times = (float(ts), float(dur)) if not isinstance(dur, bool) else None
            except OverflowError:
                times = None
        # A dur of infinity (JSON's Infinity, or 1e999) ended as a generated layer's error.
        if times is None or not math.isfinite(times[0]) or not (math.isfinite(times[1]) and times[1] >= 0):
            raise InputError(
                "workload",
                f"{name}: event {clip(str(e.get('name')))!r} has a bad ts/dur ({clip(repr(ts))}, {clip(repr(dur))}); expected microseconds",
            )
        tid = e.get("tid")
        if tid is not None and (isinstance(tid, bool) or not isinstance(tid, (int, str))):
            raise InputError(
                "workload",
                f"{name}: event {clip(str(e.get('name')))!r} has tid {clip(repr(tid))}; expected a thread id (a number or a string)",
            )
        args: dict[str, Any] = e["args"] if isinstance(e.get("args"), dict) else {}
        out.append(_Ev(str(e.get("name", "")), tid, times[0], times[1], str(e.get("cat", "")), args))
    out.sort(key=lambda e: (e.ts, -e.dur))
    return out


def _rank(data: dict[str, Any], default: int, name: str) -> int:
    """The rank ``distributedInfo`` records (``default`` where it records none); anything but
    an integer from 0 to :data:`RANK_MAX` is refused (a bool is not a rank)."""
    info = data.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) else None
    if rank is None:
        return default
    if not is_int(rank) or not 0 <= rank <= RANK_MAX:
        raise InputError(
            "workload",
            f"{name}: distributedInfo.rank is {_shown(rank)}; expected an integer from 0 to {RANK_MAX} "
            "(the process's rank in torch.distributed)",
        )
    return int(rank)


# -- collectives --------------------------------------------------------------------------


def _nelems(dims: Any, name: str, e: _Ev) -> Optional[int]:
    """Elements of a recorded shape (a list of sizes; ``[]``, a scalar, has one), or of a
    tensor list's shapes (a list of shapes, nested to any depth): the sum of its shapes'
    elements. None where ``dims`` is no list.

    Iterative: a shape nested as deeply as the JSON reader allows (about 1,000 levels) is
    read, not a RecursionError. :class:`InputError` naming the event ``e`` of file ``name``
    for a size that is not an integer >= 0 (a bool is not one), a list mixing sizes and
    shapes, or more than 2^64 - 1 elements in all (no message is that large; the count
    stops there, so that huge sizes cost no long products)."""
    if not isinstance(dims, list):
        return None
    total = 0
    todo: list[list[Any]] = [dims]
    while todo:
        shape = todo.pop()
        if shape and all(isinstance(d, list) for d in shape):
            todo.extend(shape)
            continue
        total += _shape_nelems(shape, name, e)
        if total > U64_MAX:
            raise _too_many(name, e, "Input Dims give")
    return total


def _too_many(name: str, e: _Ev, what: str) -> InputError:
    return InputError(
        "workload", f"{_where(name, e)}: {what} more than 2^64 - 1 elements, which are more than 2^64 bytes"
    )


def _shape_nelems(shape: list[Any], name: str, e: _Ev) -> int:
    """Elements of one shape (sizes), refused as :func:`_nelems` says past 2^64 - 1."""
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            what = "a list of shapes among sizes" if isinstance(d, list) else f"size {_shown(d)}"
            raise InputError(
                "workload",
                f"{_where(name, e)}: Input Dims has {what}; expected a shape (a list of integers >= 0) "
                "or a list of shapes",
            )
    if 0 in shape:
        return 0
    n = 1
    for d in shape:
        n *= d
        if n > U64_MAX:
            raise _too_many(name, e, "Input Dims give")
    return n


def _count(e: _Ev, key: str, name: str) -> Optional[int]:
    """The element count ``e.args[key]`` (``In msg nelems``, ``Out msg nelems``); None where
    absent. Anything but an integer from 0 to 2^64 - 1 is refused (a bool is not a count)."""
    n = e.args.get(key)
    if n is None:
        return None
    if not is_int(n) or n < 0:
        raise InputError("workload", f"{_where(name, e)}: {key!r} is {_shown(n)}; expected an integer >= 0")
    if n > U64_MAX:
        raise _too_many(name, e, f"{key!r} gives")
    return int(n)


def _dtype_bytes(dtype: str, where: str) -> int:
    size = DTYPE_BYTES.get(dtype)
    if size is None:
        raise InputError(
            "workload",
            f"{where}: unknown dtype {dtype!r}; expected one of Float, Half, BFloat16, Double, Int, Long, ... "
            "(c10 scalar type names) or float, c10::Half, c10::BFloat16, double, int, long int, ...",
        )
    return size


@dataclass
class _Launch:
    ev: _Ev
    kind: str
    nelems: Optional[int]
    dtype: Optional[str]
    exec_ev: Optional[_Ev] = None


def _param_comms(ev: _Ev, name: str) -> Optional[tuple[str, Optional[int], Optional[str]]]:
    coll = ev.args.get("Collective name")
    if not isinstance(coll, str):
        return None
    kind = _kind(coll)
    if kind is None:
        return None
    n_in, n_out = _count(ev, "In msg nelems", name), _count(ev, "Out msg nelems", name)
    sizes = [n for n in (n_in, n_out) if n is not None]
    dtype = ev.args.get("dtype")
    return kind, (max(sizes) if sizes else None), (dtype if isinstance(dtype, str) else None)


def _launches(events: Sequence[_Ev], comm_tids: set[Any], name: str) -> tuple[list[_Launch], list[_Ev]]:
    """Collective launches and the backend execution ranges, both in time order (``events``
    is; :func:`_match_executions` needs it)."""
    c10d: list[_Launch] = []
    rpc: list[_Launch] = []
    backend: list[_Ev] = []
    kernels: list[_Ev] = []
    for e in events:
        m = _C10D.match(e.name)
        if m and e.tid not in comm_tids and _kind(m.group(1)):
            dims = e.args.get("Input Dims")
            n = _nelems(dims[0], name, e) if isinstance(dims, list) and dims else None
            c10d.append(_Launch(e, _kind(m.group(1)) or "", n, None))
        elif e.name == "record_param_comms":
            pc = _param_comms(e, name)
            if pc:
                rpc.append(_Launch(e, *pc))
        elif _BACKEND.match(e.name):
            backend.append(e)
        elif e.cat == "kernel" and (_NCCL_KERNEL.match(e.name) or "Collective name" in e.args):
            kernels.append(e)
    launches = c10d
    if c10d and rpc:
        outside = _describe_c10d(c10d, rpc)
        launches = sorted(c10d + outside, key=lambda x: x.ev.ts)
    elif rpc:
        launches = rpc
    executions = kernels if kernels else backend
    if not launches and backend:
        for e in backend:
            kind = _kind(_BACKEND.match(e.name).group(2))  # type: ignore[union-attr]
            if kind:
                dims = e.args.get("Input Dims")
                n = _nelems(dims[0], name, e) if isinstance(dims, list) and dims else None
                launches.append(_Launch(e, kind, n, None))
        executions = kernels
    return launches, executions


def _describe_c10d(c10d: Sequence[_Launch], rpc: Sequence[_Launch]) -> list[_Launch]:
    """Gives each c10d launch the size and dtype of the first ``record_param_comms`` range
    nested in it (same thread, starting within it), which describes it; returns the ranges
    nested in none, launches of their own. Both lists in time order.

    By bisection on each thread's start times, O(n log n) (a scan of one list per item of the
    other took quadratic time): the first range starting at or after a launch's start is the
    first nested in it, if any is; a range is nested in some launch exactly when the latest
    end among the launches that started no later than it reaches it."""
    rpc_on: dict[Any, list[_Launch]] = {}
    for r in rpc:
        rpc_on.setdefault(r.ev.tid, []).append(r)
    rpc_starts = {tid: [r.ev.ts for r in rs] for tid, rs in rpc_on.items()}
    for launch in c10d:
        tid = launch.ev.tid
        if tid not in rpc_on:
            continue
        i = bisect_left(rpc_starts[tid], launch.ev.ts)
        if i < len(rpc_on[tid]) and rpc_on[tid][i].ev.ts <= launch.ev.end:
            inner = rpc_on[tid][i]
            launch.nelems = inner.nelems if inner.nelems is not None else launch.nelems
            launch.dtype = inner.dtype
    c10d_starts: dict[Any, list[float]] = {}
    reach: dict[Any, list[float]] = {}  # the latest end of the launches so far, per thread
    for c in c10d:
        c10d_starts.setdefault(c.ev.tid, []).append(c.ev.ts)
        ends = reach.setdefault(c.ev.tid, [])
        ends.append(max(ends[-1], c.ev.end) if ends else c.ev.end)
    outside = []
    for r in rpc:
        i = bisect_right(c10d_starts.get(r.ev.tid, []), r.ev.ts) - 1
        if i < 0 or reach[r.ev.tid][i] < r.ev.ts:
            outside.append(r)
    return outside


def _exec_kind(e: _Ev) -> Optional[str]:
    if isinstance(e.args.get("Collective name"), str):
        return _kind(e.args["Collective name"])
    m = _BACKEND.match(e.name)
    if m:
        return _kind(m.group(2))
    m = _NCCL_KERNEL.match(e.name)
    if m:
        return _kind(re.sub(r"(?<!^)(?=[A-Z])", "_", m.group(1)).lower()) or _kind(m.group(1))
    return None


def _exec_nelems(e: _Ev, name: str) -> Optional[int]:
    for key in ("In msg nelems", "Out msg nelems"):
        n = _count(e, key, name)
        if n is not None:
            return n
    dims = e.args.get("Input Dims")
    return _nelems(dims[0], name, e) if isinstance(dims, list) and dims else None


def _exec_dtype(e: _Ev) -> Optional[str]:
    if isinstance(e.args.get("dtype"), str):
        return str(e.args["dtype"])
    types = e.args.get("Input type")
    return types[0] if isinstance(types, list) and types and isinstance(types[0], str) and types[0] else None


class _Queue:
    """Some executions (their positions in the time-ordered list), in time order; finds the
    first one not yet taken that starts at a given time or later.

    Bisection finds the first starting late enough; slots found taken are linked past (a
    union-find with path halving), so each is stepped over O(1) times amortized: O(log n) a
    query, and an execution may sit in several queues (it is marked taken once, in
    ``taken``, and each queue notices when it meets it)."""

    def __init__(self) -> None:
        self.index: list[int] = []
        self.starts: list[float] = []  # us, non-decreasing
        self._next: list[int] = [0]  # slot -> itself while not known taken, else a later slot

    def append(self, index: int, start: float) -> None:
        self.index.append(index)
        self.starts.append(start)
        self._next.append(len(self.index))  # the sentinel past the end

    def first(self, start: float, taken: Sequence[bool]) -> Optional[int]:
        """Position of the first execution starting at ``start`` or later not ``taken``."""
        slot = self._find(bisect_left(self.starts, start))
        while slot < len(self.index) and taken[self.index[slot]]:
            self._next[slot] = slot + 1
            slot = self._find(slot + 1)
        return self.index[slot] if slot < len(self.index) else None

    def _find(self, slot: int) -> int:
        nxt = self._next
        while nxt[slot] != slot:
            nxt[slot] = nxt[nxt[slot]]
            slot = nxt[slot]
        return slot


def _match_executions(launches: Sequence[_Launch], executions: Sequence[_Ev], name: str) -> None:
    """Pairs each launch (in order) with the first unused execution (in list order) of its
    kind and size (either one's size unknown also matches) starting no earlier than 1 us
    before the launch: backends run a process group's work in order.

    ``executions`` is in time order (as :func:`_launches` gives it), so list order is time
    order, and the candidates of a launch are the untaken ones at the end of two queues, those
    of its kind and size and those of its kind and unknown size (or, for a launch of unknown
    size, of one queue: all of its kind); the first of the two wins. Each execution's kind
    and size is read once: O(n log n) in all (scanning the whole list for each launch took
    quadratic time, for ever on a trace of 20,000 launches that matched nothing)."""
    by_size: dict[tuple[str, Optional[int]], _Queue] = {}
    by_kind: dict[str, _Queue] = {}
    sizes: list[Optional[int]] = [None] * len(executions)
    for i, e in enumerate(executions):
        kind = _exec_kind(e)
        if kind is not None:
            sizes[i] = _exec_nelems(e, name)
            by_size.setdefault((kind, sizes[i]), _Queue()).append(i, e.ts)
            by_kind.setdefault(kind, _Queue()).append(i, e.ts)
    taken = [False] * len(executions)
    for launch in launches:
        if launch.nelems is None:
            queues = [by_kind.get(launch.kind)]
        else:
            queues = [by_size.get((launch.kind, launch.nelems)), by_size.get((launch.kind, None))]
        found = [i for i in (q.first(launch.ev.ts - 1.0, taken) for q in queues if q is not None) if i is not None]
        if not found:
            continue
        i = min(found)
        taken[i] = True
        e = executions[i]
        launch.exec_ev = e
        if launch.nelems is None:
            launch.nelems = sizes[i]
        if launch.dtype is None:
            launch.dtype = _exec_dtype(e)


# -- one step -----------------------------------------------------------------------------


def _within(e: _Ev, start: float, end: float) -> bool:
    return start <= e.ts and e.end <= end + 1e-3


class _Spans:
    """Events, to ask in O(log n) whether one lies within a range (as :func:`_within` says):
    the first starting at or after the range's start that ends earliest does if any does."""

    def __init__(self, events: Iterable[_Ev]) -> None:
        ordered = sorted(events, key=lambda e: e.ts)
        self.starts = [e.ts for e in ordered]
        self.earliest_end = [e.end for e in ordered]  # from each position on
        for i in reversed(range(len(ordered) - 1)):
            self.earliest_end[i] = min(self.earliest_end[i], self.earliest_end[i + 1])

    def any_within(self, start: float, end: float) -> bool:
        i = bisect_left(self.starts, start)
        return i < len(self.starts) and self.earliest_end[i] <= end + 1e-3


def _top_level(events: Sequence[_Ev]) -> list[_Ev]:
    """Events not nested in another of the list on the same thread."""
    out: list[_Ev] = []
    open_end: dict[Any, float] = {}
    for e in events:
        if e.ts < open_end.get(e.tid, -math.inf):
            continue
        out.append(e)
        open_end[e.tid] = e.end
    return out


def _overlap(a0: float, a1: float, spans: Sequence[tuple[float, float]]) -> float:
    return math.fsum(max(0.0, min(a1, b1) - max(a0, b0)) for b0, b1 in spans)


def _innermost(mods: Sequence[_Ev], ops: Sequence[_Ev]) -> list[Optional[_Ev]]:
    """For each op, the module of ``mods`` that contains it (``m.ts <= op.ts`` and ``op.end
    <= m.end + 1e-3`` us) with the least ``dur``, the last in ``mods``' order among equals:
    what a scan of every module per op gives, in O((ops + modules) log modules). The modules
    are taken in order of start as the ops are (a min-tree over the modules by end answers
    "the shortest started module ending late enough"); the scan took 20 s for 8,000 modules.
    """
    m = len(mods)
    by_end = sorted(range(m), key=lambda i: mods[i].end)
    ends = [mods[i].end for i in by_end]
    slot = [0] * m
    for k, i in enumerate(by_end):
        slot[i] = k
    size = 1
    while size < max(m, 1):
        size *= 2
    none = (math.inf, 0)
    tree: list[tuple[float, int]] = [none] * (2 * size)  # (dur, -index), min at the root
    by_start = sorted(range(m), key=lambda i: mods[i].ts)
    out: list[Optional[_Ev]] = [None] * len(ops)
    started = 0
    for q in sorted(range(len(ops)), key=lambda q: ops[q].ts):
        op = ops[q]
        while started < m and mods[by_start[started]].ts <= op.ts:
            i = by_start[started]
            k = slot[i] + size
            tree[k] = (mods[i].dur, -i)
            k //= 2
            while k:
                tree[k] = min(tree[2 * k], tree[2 * k + 1])
                k //= 2
            started += 1
        # The first module (by end) with op.end <= end + 1e-3: ends + 1e-3 are sorted too.
        lo, hi = 0, m
        while lo < hi:
            mid = (lo + hi) // 2
            if op.end <= ends[mid] + 1e-3:
                hi = mid
            else:
                lo = mid + 1
        best = none
        left, right = lo + size, m + size  # min over [lo, m)
        while left < right:
            if left & 1:
                best = min(best, tree[left])
                left += 1
            if right & 1:
                right -= 1
                best = min(best, tree[right])
            left //= 2
            right //= 2
        out[q] = None if best[0] == math.inf else mods[-best[1]]
    return out


def _module_layers(
    events: Sequence[_Ev], modules: Sequence[_Ev], backward: Sequence[_Ev], fwd_start: float, bwd_start: float
) -> Optional[tuple[list[str], dict[str, float], dict[str, float], list[tuple[float, float, str]]]]:
    """Layers from nn.Module ranges: names (forward order), forward end and gradient-ready
    times (us), and each backward op's (start, end, layer)."""
    fwd_tid = modules[0].tid
    mods = [m for m in modules if m.tid == fwd_tid]
    forward_ops = [
        e
        for e in events
        if e.tid == fwd_tid and fwd_start <= e.ts < bwd_start and isinstance(e.args.get("Sequence number"), int)
    ]
    seq_module: dict[int, str] = {}
    for e, m in zip(forward_ops, _innermost(mods, forward_ops)):
        seq = e.args["Sequence number"]
        if seq not in seq_module and m is not None:
            seq_module[seq] = m.name[len(_MODULE) :]
    owner: list[tuple[float, float, str]] = []
    current: Optional[str] = None
    accumulates: dict[str, int] = {}
    for b in backward:
        seq = b.args.get("Sequence number")
        if isinstance(seq, int) and seq in seq_module:
            current = seq_module[seq]
        if current is None:
            continue
        owner.append((b.ts, b.end, current))
        if "AccumulateGrad" in b.name:
            accumulates[current] = accumulates.get(current, 0) + 1
    if not owner:
        return None
    fwd_end: dict[str, float] = {}  # (insertion order: the modules' first appearance)
    for m in mods:
        name = m.name[len(_MODULE) :]
        fwd_end[name] = max(fwd_end.get(name, 0.0), m.end)
    order = list(fwd_end)
    owners = {o[2] for o in owner}
    keep = [n for n in order if accumulates.get(n)] or [n for n in order if n in owners]
    ready: dict[str, float] = {}
    for _s, end, name in owner:
        ready[name] = max(ready.get(name, bwd_start), end)
    return keep, fwd_end, ready, owner


def read_step(path: PathLike, *, step: Optional[int] = None, default_rank: int = 0) -> Step:
    """What one rank's trace says about step ``step`` (default: its last complete step)."""
    p = Path(path)
    data = load_trace(p)
    events = _events(data, p.name)
    rank = _rank(data, default_rank, p.name)
    steps = [e for e in events if _STEP.match(e.name)]
    if not steps:
        raise InputError(
            "workload",
            f"{p.name}: no ProfilerStep#N range; expected a torch.profiler trace of training steps "
            "(call prof.step() after each iteration)",
        )
    trace_end = max(e.end for e in events)
    comm_tids = {e.tid for e in events if _BACKEND.match(e.name)} - {s.tid for s in steps}
    launches, executions = _launches(events, comm_tids, p.name)
    _match_executions(launches, executions, p.name)
    # (Per step in O(log n): a scan of the trace per step took quadratic time.)
    backward_ops = _Spans(e for e in events if e.name.startswith(_BACKWARD))
    unfinished = _Spans(x.ev for x in launches if x.exec_ev is None)

    def complete(s: _Ev) -> bool:
        has_bwd = backward_ops.any_within(s.ts, s.end)
        return has_bwd and s.end <= trace_end and (not executions or not unfinished.any_within(s.ts, s.end))

    numbers = {int(_STEP.match(s.name).group(1)): s for s in steps}  # type: ignore[union-attr]
    if step is None:
        done = [n for n in sorted(numbers) if complete(numbers[n])]
        if not done:
            raise InputError(
                "workload", f"{p.name}: no complete ProfilerStep (with a backward pass and finished collectives)"
            )
        step = done[-1]
    elif step not in numbers:
        raise InputError("step", f"{p.name} has no ProfilerStep#{step}; it has {', '.join(map(str, sorted(numbers)))}")
    elif not complete(numbers[step]):
        raise InputError(
            "step", f"ProfilerStep#{step} of {p.name} is incomplete (no backward pass, or collectives unfinished)"
        )
    s = numbers[step]
    here = [e for e in events if _within(e, s.ts, s.end)]
    backward = _top_level([e for e in here if e.name.startswith(_BACKWARD)])
    bwd_start, bwd_end = backward[0].ts, max(b.end for b in backward)
    modules = [e for e in here if e.name.startswith(_MODULE) and e.ts < bwd_start]
    ddp = [e for e in here if e.name == "DistributedDataParallel.forward"]
    fwd_start = min([m.ts for m in modules] or [e.ts for e in ddp] or [s.ts])
    step_launches = [x for x in launches if s.ts <= x.ev.ts <= s.end]
    if not step_launches:
        raise InputError(
            "workload",
            f"{p.name}: ProfilerStep#{step} launched no collectives; expected a data-parallel job's trace "
            "(DDP or torch.distributed collectives, recorded with record_shapes=True)",
        )
    compute = [(b.ts, b.end) for b in backward] + [(fwd_start, bwd_start)]

    def us(t: float) -> float:
        return (t - s.ts) * 1e-6

    colls: list[Collective] = []
    for i, x in enumerate(step_launches):
        where = f"{p.name}: {x.ev.name} at {us(x.ev.ts):.6f} s into ProfilerStep#{step}"
        if x.nelems is None:
            raise InputError("workload", f"{where}: message size unknown; record the trace with record_shapes=True")
        if x.dtype is None:
            raise InputError(
                "workload", f"{where}: dtype unknown; expected a dtype or Input type argument (record_shapes=True)"
            )
        size = x.nelems * _dtype_bytes(x.dtype, where)
        if size > U64_MAX:  # (it failed later as tensor.bytes, naming neither file nor event)
            raise InputError(
                "workload", f"{where}: {clip(str(x.nelems))} elements of {x.dtype} are more than 2^64 bytes"
            )
        ex = x.exec_ev or x.ev
        phase = "forward" if x.ev.ts < bwd_start else ("backward" if x.ev.ts <= bwd_end else "after")
        colls.append(
            Collective(
                kind=x.kind,
                bytes=size,
                dtype=x.dtype,
                launch_s=us(x.ev.ts),
                start_s=us(ex.ts),
                end_s=us(ex.end),
                phase=phase,
                overlap_s=_overlap(ex.ts, ex.end, compute) * 1e-6,
                index=i,
            )
        )
    structure = _module_layers(here, modules, backward, fwd_start, bwd_start) if modules else None
    if structure is not None and structure[0]:
        names, fwd_end, ready, _owner = structure
        layers, colls = _layers_from_modules(names, fwd_end, ready, colls, s.ts, fwd_start, bwd_start, bwd_end)
        kind = "modules"
    else:
        marks = [((x.ev.ts - bwd_start) * 1e-6, [c]) for x, c in zip(step_launches, colls) if c.is_gradient]
        layers = split_at_collectives(us(bwd_start) - us(fwd_start), marks, (bwd_end - bwd_start) * 1e-6)
        colls = list(with_owners(layers, colls))
        kind = "collectives"
    return Step(
        rank=rank,
        step=step,
        duration_s=s.dur * 1e-6,
        forward_s=(bwd_start - fwd_start) * 1e-6,
        backward_s=(bwd_end - bwd_start) * 1e-6,
        layers=layers,
        collectives=tuple(colls),
        batch_size=_batch_size(here, fwd_start, bwd_start, p.name),
        structure=kind,
    )


def _with_layer(c: Collective, layer: Optional[str]) -> Collective:
    return Collective(c.kind, c.bytes, c.dtype, c.launch_s, c.start_s, c.end_s, c.phase, layer, c.overlap_s, c.index)


def _layers_from_modules(
    names: list[str],
    fwd_end: dict[str, float],
    ready: dict[str, float],
    colls: list[Collective],
    step_ts: float,
    fwd_start: float,
    bwd_start: float,
    bwd_end: float,
) -> tuple[tuple[Layer, ...], list[Collective]]:
    # Forward: from the previous layer's end to this one's; the last also gets the loss.
    forward: list[float] = []
    mark = fwd_start
    for i, n in enumerate(names):
        end = bwd_start if i == len(names) - 1 else max(mark, fwd_end[n])
        forward.append(end - mark)
        mark = end
    # Backward: gradient-ready times, monotone in reverse forward order.
    backward = [0.0] * len(names)
    ready_at = [0.0] * len(names)
    latest = bwd_start
    for i in reversed(range(len(names))):
        r = ready.get(names[i], latest)
        backward[i] = max(0.0, r - latest)
        latest = max(latest, r)
        ready_at[i] = latest
    # Owner: the first layer (backward order) whose gradients were ready at or after the launch.
    owned: dict[int, list[Collective]] = {i: [] for i in range(len(names))}
    out = []
    for c in colls:
        layer = None
        if c.is_gradient:
            t = step_ts + c.launch_s * 1e6
            i = next((i for i in reversed(range(len(names))) if ready_at[i] >= t - 1e-3), 0)
            owned[i].append(c)
            layer = names[i]
        out.append(_with_layer(c, layer))
    layers = tuple(
        Layer(n, forward[i] * 1e-6, backward[i] * 1e-6, owned_tensors(n, owned[i])) for i, n in enumerate(names)
    )
    return layers, out


def _batch_size(events: Iterable[_Ev], start: float, end: float, name: str) -> int:
    """Leading dimension of the first forward op's first input: the batch size, usually (a
    bad shape there is refused, as :func:`_nelems` says)."""
    for e in events:
        if start <= e.ts < end and e.cat == "cpu_op" and isinstance(e.args.get("Sequence number"), int):
            dims = e.args.get("Input Dims")
            first = dims[0] if isinstance(dims, list) and dims else None
            _nelems(first, name, e)
            if isinstance(first, list) and first and is_int(first[0]):
                return max(1, int(first[0]))
            break
    return 1


def read_steps(paths: Union[PathLike, Sequence[PathLike]], *, step: Optional[int] = None) -> list[Step]:
    """Each rank's step: ``step``, or the last step complete in every trace (:class:`InputError`
    for the same file given twice, or two files of the same rank)."""
    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not files:
        raise InputError("workload", "give at least one trace file")
    # The same file twice, whether or not it records its rank (one without gets its position).
    first: dict[Path, PathLike] = {}
    for f in files:
        key = Path(f).resolve()
        if key in first:
            raise InputError("workload", f"{first[key]} and {f} are the same file; give one trace per rank")
        first[key] = f
    if step is None and len(files) > 1:
        # The last step number complete in every rank's trace.
        lasts = [read_step(f, default_rank=i) for i, f in enumerate(files)]
        common = min(s.step for s in lasts)
        steps = [
            s if s.step == common else read_step(f, step=common, default_rank=i)
            for i, (s, f) in enumerate(zip(lasts, files))
        ]
    else:
        steps = [read_step(f, step=step, default_rank=i) for i, f in enumerate(files)]
    seen: dict[int, PathLike] = {}
    for s, f in zip(steps, files):
        if s.rank in seen:
            raise InputError(
                "workload", f"rank {s.rank} is in two files, {seen[s.rank]} and {f}; give one trace per rank"
            )
        seen[s.rank] = f
    return steps


def from_profiler_trace(
    paths: Union[PathLike, Sequence[PathLike]], *, step: Optional[int] = None, name: Optional[str] = None
) -> Workload:
    """A workload from one or several ranks' PyTorch profiler traces (``.json``/``.json.gz``).

    ``step``: the ``ProfilerStep#N`` to use (default: the last complete one in every trace).
    ``name``: the workload's name (default: the first file's name without extensions).
    Several ranks: median per-layer times; the ranks must have launched the same collectives.
    """
    steps = read_steps(paths, step=step)
    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    first = Path(files[0]).name
    stem = re.sub(r"(\.pt)?\.trace|\.json(\.gz)?$", "", first).removesuffix(".json")
    w = merge_ranks(
        steps, name or stem or "trace", [f"PyTorch profiler trace {Path(f).name}" for f in files], "profiler trace"
    )
    # The simulator would refuse it later, naming a layer the trace never named.
    w.refuse_compute_past_horizon(
        "workload",
        ", ".join(Path(f).name for f in files),
        "expected ts and dur in microseconds, as torch.profiler writes them",
        f" (ProfilerStep#{steps[0].step}'s forward and backward passes)",
    )
    return w
