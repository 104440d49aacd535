"""PyTorch profiler traces (the Chrome/Kineto JSON of ``prof.export_chrome_trace``) as a
:class:`~tensorwire.Workload`.

One training step (a ``ProfilerStep#N`` range; by default the last complete one) of each
rank's trace is read:

- **compute**: the backward pass runs from the first to the end of the last
  ``autograd::engine::evaluate_function`` op of the step; the forward pass from the first
  ``nn.Module`` range (``with_stack=True``), else ``DistributedDataParallel.forward``, else the
  step's start, to the backward's start (so it includes the loss). A step of several
  forward/backward passes (gradient accumulation) is read as its last backward pass, with
  everything before it as forward compute, and the micro-batches' batches summed.
- **collectives**: the c10d ops that launch them (``c10d::allreduce_``, ...), or
  ``record_param_comms`` ranges (NCCL, functional collectives), or failing both the
  backends' own ranges (``gloo:all_reduce``, ``nccl:all_reduce``). Their execution is taken
  from the backend's range on its worker thread (Gloo) or the ``nccl...`` GPU kernel, matched
  in launch order; sizes (the whole buffer, for all-gathers and reduce-scatters too) from
  ``In msg nelems``/``dtype`` or the recorded shapes and types (record the trace with
  ``record_shapes=True``). All-reduces and reduce-scatters (FSDP) from the backward pass on
  are the gradients.
- **layers**: with module structure (``with_stack=True`` records ``nn.Module: NAME`` ranges),
  a layer is a module whose backward accumulates gradients: each backward op is mapped to
  the forward op with the same autograd ``Sequence number``, hence to the innermost module
  that ran it; ``AccumulateGrad`` follows the op before it. A layer's forward time runs from
  the end of the previous layer's forward to the end of its own; its backward time from the
  previous layer's gradients being ready to its own (as ``tensorwire profile`` measures).
  Without module structure the backward is cut after each gradient collective's launch (see
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
    GRADIENT_KINDS,
    Collective,
    Step,
    assumed_batch,
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
    """A collective's launch: ``nelems`` is the whole buffer's elements; ``part`` the elements
    of one rank's part where the launch records both (an all-gather's input, a
    reduce-scatter's output), which is the size some backends record for its execution."""

    ev: _Ev
    kind: str
    nelems: Optional[int]
    dtype: Optional[str]
    part: Optional[int] = None
    exec_ev: Optional[_Ev] = None


#: Collectives whose ranks each hold a part of the buffer: their launches record the whole
#: buffer and one rank's part (``c10d::_allgather_base_(output, input)``,
#: ``c10d::_reduce_scatter_base_(output, input)``; In and Out msg nelems).
_SHARDED = ("allgather", "reduce_scatter")


def _whole_and_part(sizes: Sequence[Optional[int]]) -> tuple[Optional[int], Optional[int]]:
    """The whole buffer (the largest of the recorded sizes) and one rank's part (the smallest,
    None where it is the whole)."""
    known = [n for n in sizes if n is not None]
    if not known:
        return None, None
    whole, part = max(known), min(known)
    return whole, (part if part != whole else None)


def _c10d_sizes(e: _Ev, kind: str, name: str) -> tuple[Optional[int], Optional[int]]:
    """Whole and part elements of a ``c10d::`` launch, from its recorded shapes: the first
    input (the tensors), or for :data:`_SHARDED` kinds the larger of the first two."""
    dims = e.args.get("Input Dims")
    if not isinstance(dims, list):
        return None, None
    inputs = dims[:2] if kind in _SHARDED else dims[:1]
    return _whole_and_part([_nelems(d, name, e) for d in inputs])


def _param_comms(ev: _Ev, name: str) -> Optional[tuple[str, Optional[int], Optional[str], Optional[int]]]:
    """Kind, whole elements, dtype and part elements of a ``record_param_comms`` range."""
    coll = ev.args.get("Collective name")
    if not isinstance(coll, str):
        return None
    kind = _kind(coll)
    if kind is None:
        return None
    whole, part = _whole_and_part([_count(ev, "In msg nelems", name), _count(ev, "Out msg nelems", name)])
    dtype = ev.args.get("dtype")
    return kind, whole, (dtype if isinstance(dtype, str) else None), part


def _launches(events: Sequence[_Ev], comm_tids: set[Any], name: str) -> tuple[list[_Launch], list[_Ev]]:
    """Collective launches and the backend execution ranges, both in time order (``events``
    is; :func:`_match_executions` needs it)."""
    c10d: list[_Launch] = []
    rpc: list[_Launch] = []
    backend: list[_Ev] = []
    kernels: list[_Ev] = []
    for e in events:
        m = _C10D.match(e.name)
        kind = _kind(m.group(1)) if m else None
        if kind and e.tid not in comm_tids:
            whole, part = _c10d_sizes(e, kind, name)
            c10d.append(_Launch(e, kind, whole, None, part))
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
            if inner.nelems is not None:
                launch.nelems, launch.part = inner.nelems, inner.part
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


#: Kinds a backend runs a launch of another kind as: Gloo runs ``_reduce_scatter_base_`` as
#: an all-reduce of the whole buffer (torch 2.15's FSDP2 on Gloo: a ``gloo:all_reduce``
#: range of the reduce-scatter's input size).
_RUN_AS = {"reduce_scatter": ("reduce_scatter", "allreduce")}


def _match_executions(launches: Sequence[_Launch], executions: Sequence[_Ev], name: str) -> None:
    """Pairs each launch (in order) with the first unused execution (in list order) of its
    kind (or one it runs as, :data:`_RUN_AS`) and size (the whole buffer, or one rank's part:
    Gloo's all-gather range and NCCL's kernel record the part; either one's size unknown
    also matches) starting no earlier than 1 us before the launch: backends run a process
    group's work in order.

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
        kinds = _RUN_AS.get(launch.kind, (launch.kind,))
        if launch.nelems is None:
            queues = [by_kind.get(k) for k in kinds]
        else:
            recorded = (launch.nelems, None) if launch.part is None else (launch.nelems, launch.part, None)
            queues = [by_size.get((k, n)) for k in kinds for n in recorded]
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


@dataclass(frozen=True)
class _Pass:
    """One forward and backward pass of a step (times in us, as in the trace): the whole step,
    or one micro-batch of gradient accumulation. ``backward``: its top-level backward ops;
    ``modules``: the ``nn.Module`` ranges of its forward pass."""

    fwd_start: float
    bwd_start: float
    bwd_end: float
    backward: list[_Ev]
    modules: list[_Ev]


def _with_node_sequences(backward: Sequence[_Ev], events: Sequence[_Ev]) -> list[_Ev]:
    """``backward`` (top-level backward ops, time order), each with its autograd sequence
    number: its own, or where its ``evaluate_function`` range records none (torch 2.15 leaves
    it off a node that runs hooks first, such as FSDP2's pre-backward all-gather), that of the
    node's own op nested in it (``AddmmBackward0`` in ``evaluate_function: AddmmBackward0``).
    Without it the node's ``AccumulateGrad`` went to the op before it (a ReLU became a layer).
    ``events`` in time order; each op's nested events are looked at once."""
    starts = [e.ts for e in events]
    out = []
    for b in backward:
        if not isinstance(b.args.get("Sequence number"), int):
            node = b.name[len(_BACKWARD) :]
            i = bisect_left(starts, b.ts)
            while i < len(events) and events[i].ts <= b.end:
                e = events[i]
                seq = e.args.get("Sequence number")
                if e.name == node and e.tid == b.tid and isinstance(seq, int):
                    b = _Ev(b.name, b.tid, b.ts, b.dur, b.cat, {**b.args, "Sequence number": seq})
                    break
                i += 1
        out.append(b)
    return out


def _split_passes(backward: Sequence[_Ev], events: Sequence[_Ev], tid: Any) -> list[tuple[float, list[_Ev]]]:
    """The step's top-level backward ops (time order) as backward passes, each with the start
    (us) of the first forward op before it (-inf for the first pass): a new pass begins after
    a gap in which a forward pass ran, i.e. ops of at least two autograd sequence numbers on
    the training thread ``tid`` outside the backward ops (a forward pass numbers the ops it
    records for autograd one after another; hooks run between backward ops under no_grad
    and share one number; each thread numbers its own).
    Several passes in a step are gradient accumulation (DDP's ``no_sync()``): micro-batches."""
    numbered = [
        (e.ts, e.args["Sequence number"])
        for e in events
        if e.tid == tid
        and e.cat == "cpu_op"
        and isinstance(e.args.get("Sequence number"), int)
        and not e.name.startswith(_BACKWARD)
    ]
    starts = [t for t, _ in numbered]
    passes: list[tuple[float, list[_Ev]]] = [(-math.inf, [backward[0]])]
    reach = backward[0].end
    for b in backward[1:]:
        gap = numbered[bisect_right(starts, reach) : bisect_left(starts, b.ts)]
        if len({seq for _, seq in gap}) >= 2:
            passes.append((gap[0][0], [b]))
        else:
            passes[-1][1].append(b)
        reach = max(reach, b.end)
    return passes


def _passes(backward: Sequence[_Ev], events: Sequence[_Ev], step: _Ev) -> list[_Pass]:
    """The forward and backward passes of ``step`` (its ``ProfilerStep`` range, on the
    training thread; :func:`_split_passes`). A pass's forward runs
    from its first ``nn.Module`` range (``with_stack=True``), else
    ``DistributedDataParallel.forward``, else the step's start (the first pass) or its first
    forward op (the others), to its backward's start, so it includes the loss."""
    modules = [e for e in events if e.name.startswith(_MODULE)]
    ddp = [e.ts for e in events if e.name == "DistributedDataParallel.forward"]
    out = []
    after = step.ts
    for first_op, ops in _split_passes(backward, events, step.tid):
        bwd_start, bwd_end = ops[0].ts, max(b.end for b in ops)
        mods = [m for m in modules if after <= m.ts < bwd_start]
        fwd_start = min([m.ts for m in mods] or [t for t in ddp if after <= t < bwd_start] or [max(after, first_op)])
        out.append(_Pass(fwd_start, bwd_start, bwd_end, list(ops), mods))
        after = bwd_end
    return out


def _refuse_early_gradients(passes: Sequence[_Pass], launches: Sequence[_Launch], where: str) -> None:
    """Refuses gradient collectives (all-reduces, reduce-scatters) launched in a backward pass
    before the last one of a step (from its start to the next forward): tensorwire models
    one synchronisation a step, in its last backward pass."""
    for p, following in zip(passes, passes[1:]):
        early = [x for x in launches if x.kind in GRADIENT_KINDS and p.bwd_start <= x.ev.ts < following.fwd_start]
        if early:
            raise InputError(
                "workload",
                f"{where} has {len(passes)} forward/backward passes (gradient accumulation) and launches "
                f"{early[0].kind} in a backward pass before the last; expected gradients synchronised in the last "
                "pass only (DDP's no_sync(), FSDP2's set_requires_gradient_sync(False)): tensorwire models one "
                "synchronisation a step",
            )


@dataclass
class _Trace:
    """One rank's trace, read: its events (time order), rank, ``ProfilerStep`` ranges by
    number, the numbers of the complete ones (ascending) and the collectives' launches
    matched to their executions."""

    name: str
    events: list[_Ev]
    rank: int
    steps: dict[int, _Ev]
    complete: list[int]
    launches: list[_Launch]


def _read_trace(path: PathLike, default_rank: int) -> _Trace:
    """Reads one rank's trace (:class:`InputError` where it is no trace of training steps)."""
    p = Path(path)
    data = load_trace(p)
    events = _events(data, p.name)
    rank = _rank(data, default_rank, p.name)
    steps = [e for e in events if _STEP.match(e.name)]
    if not steps:
        # torch.profiler records ProfilerStep#N only under a schedule (torch 2.15): prof.step()
        # alone marks nothing.
        raise InputError(
            "workload",
            f"{p.name}: no ProfilerStep#N range; torch.profiler records them only with a schedule: pass "
            "schedule=torch.profiler.schedule(wait=1, warmup=1, active=2) to profile() and call prof.step() "
            "after each iteration (docs/traces.md)",
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
    done = [n for n in sorted(numbers) if complete(numbers[n])]
    return _Trace(p.name, events, rank, numbers, done, launches)


def read_step(path: PathLike, *, step: Optional[int] = None, default_rank: int = 0) -> Step:
    """What one rank's trace says about step ``step`` (default: its last complete step)."""
    return _read_step(_read_trace(path, default_rank), step)


def _read_step(t: _Trace, step: Optional[int]) -> Step:
    if step is None:
        if not t.complete:
            raise InputError(
                "workload", f"{t.name}: no complete ProfilerStep (with a backward pass and finished collectives)"
            )
        step = t.complete[-1]
    elif step not in t.steps:
        raise InputError("step", f"{t.name} has no ProfilerStep#{step}; it has {', '.join(map(str, sorted(t.steps)))}")
    elif step not in t.complete:
        raise InputError(
            "step", f"ProfilerStep#{step} of {t.name} is incomplete (no backward pass, or collectives unfinished)"
        )
    s = t.steps[step]
    here = [e for e in t.events if _within(e, s.ts, s.end)]
    backward = _with_node_sequences(_top_level([e for e in here if e.name.startswith(_BACKWARD)]), here)
    passes = _passes(backward, here, s)
    last = passes[-1]
    bwd_start, bwd_end = last.bwd_start, last.bwd_end
    step_launches = [x for x in t.launches if s.ts <= x.ev.ts <= s.end]
    if not step_launches:
        raise InputError(
            "workload",
            f"{t.name}: ProfilerStep#{step} launched no collectives; expected a data-parallel job's trace "
            "(DDP, FSDP or torch.distributed collectives, recorded with record_shapes=True); for a model run in "
            "one process, `tensorwire profile` measures its workload (docs/runtime.md)",
        )
    _refuse_early_gradients(passes, step_launches, f"{t.name}: ProfilerStep#{step}")
    compute = [(b.ts, b.end) for b in backward] + [(p.fwd_start, p.bwd_start) for p in passes]
    # Everything before the last backward pass: its forward, and earlier micro-batches' passes.
    forward_us = math.fsum(p.bwd_start - p.fwd_start for p in passes) + math.fsum(
        p.bwd_end - p.bwd_start for p in passes[:-1]
    )

    def us(at: float) -> float:
        return (at - s.ts) * 1e-6

    colls: list[Collective] = []
    for i, x in enumerate(step_launches):
        where = f"{t.name}: {x.ev.name} at {us(x.ev.ts):.6f} s into ProfilerStep#{step}"
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
    structures = [_module_layers(here, p.modules, p.backward, p.fwd_start, p.bwd_start) for p in passes if p.modules]
    found = [st for st in structures if st is not None]
    if len(found) == len(passes) and found[-1][0]:
        layers, colls = _layers_from_modules(found, passes, colls, s.ts)
        kind = "modules"
    else:
        marks = [((x.ev.ts - bwd_start) * 1e-6, [c]) for x, c in zip(step_launches, colls) if c.is_gradient]
        layers = split_at_collectives(forward_us * 1e-6, marks, (bwd_end - bwd_start) * 1e-6)
        colls = list(with_owners(layers, colls))
        kind = "collectives"
    starts = [e.ts for e in here]
    params = _parameter_shapes(here)
    batches = [_batch_size(here, starts, p.fwd_start, p.bwd_start, t.name, params) for p in passes]
    return Step(
        rank=t.rank,
        step=step,
        duration_s=s.dur * 1e-6,
        forward_s=forward_us * 1e-6,
        backward_s=(bwd_end - bwd_start) * 1e-6,
        layers=layers,
        collectives=tuple(colls),
        batch_size=None if None in batches else sum(b for b in batches if b is not None),
        structure=kind,
        passes=len(passes),
    )


def _with_layer(c: Collective, layer: Optional[str]) -> Collective:
    return Collective(c.kind, c.bytes, c.dtype, c.launch_s, c.start_s, c.end_s, c.phase, layer, c.overlap_s, c.index)


def _layer_times(
    names: Sequence[str], fwd_end: dict[str, float], ready: dict[str, float], p: _Pass
) -> tuple[list[float], list[float], list[float]]:
    """Per layer of ``names`` (forward order) in pass ``p``, in us: forward time (from the end
    of the previous layer's forward to the end of its own; the last also gets the loss),
    backward time (from the later layers' gradients being ready to its own) and the time its
    gradients were ready (monotone in reverse forward order)."""
    forward: list[float] = []
    mark = p.fwd_start
    for i, n in enumerate(names):
        end = p.bwd_start if i == len(names) - 1 else max(mark, fwd_end.get(n, mark))
        forward.append(end - mark)
        mark = end
    backward = [0.0] * len(names)
    ready_at = [0.0] * len(names)
    latest = p.bwd_start
    for i in reversed(range(len(names))):
        r = ready.get(names[i], latest)
        backward[i] = max(0.0, r - latest)
        latest = max(latest, r)
        ready_at[i] = latest
    return forward, backward, ready_at


def _layers_from_modules(
    structures: Sequence[tuple[list[str], dict[str, float], dict[str, float], Any]],
    passes: Sequence[_Pass],
    colls: list[Collective],
    step_ts: float,
) -> tuple[tuple[Layer, ...], list[Collective]]:
    """Layers (those of the last pass) from each pass's :func:`_module_layers`: a layer's
    backward is its backward in the last pass, and its forward its forward in every pass plus
    its backward in the passes before the last (the micro-batches of gradient accumulation,
    whose gradients are not synchronised: to the simulator, compute before the last backward).
    A gradient collective belongs to the first layer, in backward order, whose gradients were
    ready (in the last pass) when it was launched."""
    names = structures[-1][0]
    forward = [0.0] * len(names)
    backward = ready_at = [0.0] * len(names)
    for k, (p, (_names, fwd_end, ready, _owner)) in enumerate(zip(passes, structures)):
        f, backward, ready_at = _layer_times(names, fwd_end, ready, p)
        earlier = backward if k < len(passes) - 1 else [0.0] * len(names)
        forward = [a + b + c for a, b, c in zip(forward, f, earlier)]
    owned: dict[int, list[Collective]] = {i: [] for i in range(len(names))}
    out = []
    for c in colls:
        layer = None
        if c.is_gradient:
            at = step_ts + c.launch_s * 1e6
            i = next((i for i in reversed(range(len(names))) if ready_at[i] >= at - 1e-3), 0)
            owned[i].append(c)
            layer = names[i]
        out.append(_with_layer(c, layer))
    layers = tuple(
        Layer(n, forward[i] * 1e-6, backward[i] * 1e-6, owned_tensors(n, owned[i])) for i, n in enumerate(names)
    )
    return layers, out


_ACCUMULATE_OP = "torch::autograd::AccumulateGrad"
#: Why a trace's batch is unknown.
_NO_SHAPES = "no forward op recorded its input's shape; record the trace with record_shapes=True"


def _is_shape(dims: Any) -> bool:
    """A tensor's recorded shape with a leading dimension: a non-empty list of integers."""
    return isinstance(dims, list) and bool(dims) and all(is_int(d) for d in dims)


def _parameter_shapes(events: Iterable[_Ev]) -> set[tuple[int, ...]]:
    """Shapes of the parameters that got gradients: the recorded input of each
    ``AccumulateGrad`` op (the gradient, of its parameter's shape)."""
    shapes = set()
    for e in events:
        dims = e.args.get("Input Dims") if e.name == _ACCUMULATE_OP else None
        if isinstance(dims, list) and dims and _is_shape(dims[0]):
            shapes.add(tuple(dims[0]))
    return shapes


def _batch_size(
    events: Sequence[_Ev], starts: Sequence[float], start: float, end: float, name: str, params: set[tuple[int, ...]]
) -> Optional[int]:
    """The batch of the forward pass from ``start`` to ``end`` (us; ``starts``: the events'):
    the leading dimension of the first input, of its forward ops (those with an autograd
    sequence number) in order, that is a tensor's shape but not a parameter's (``params``,
    :func:`_parameter_shapes`): the model's input, not an Embedding's weight (its first
    input; the indices follow). None where no forward op recorded one (the trace was
    recorded without ``record_shapes=True``). A bad shape on the way is refused, as
    :func:`_nelems` says."""
    for i in range(bisect_left(starts, start), len(events)):
        e = events[i]
        if e.ts >= end:
            break
        dims = e.args.get("Input Dims")
        if e.cat != "cpu_op" or not isinstance(e.args.get("Sequence number"), int) or not isinstance(dims, list):
            continue
        for shape in dims:
            _nelems(shape, name, e)
            if _is_shape(shape) and tuple(shape) not in params:
                return max(1, int(shape[0]))
    return None


def _element_bytes(colls: Iterable[Collective]) -> Optional[int]:
    """Bytes per element of the gradients: the size of the dtype that carries the most of
    the gradient collectives' bytes (None where there are none)."""
    by_size: dict[int, int] = {}
    for c in colls:
        size = DTYPE_BYTES.get(c.dtype)
        if c.is_gradient and size in (1, 2, 4, 8):
            by_size[size] = by_size.get(size, 0) + c.bytes
    return max(by_size, key=lambda k: by_size[k]) if by_size else None


def read_steps(paths: Union[PathLike, Sequence[PathLike]], *, step: Optional[int] = None) -> list[Step]:
    """Each rank's step: ``step``, or the last step complete in every trace (:class:`InputError`
    for the same file given twice, or two files of the same rank, or traces sharing no
    complete step)."""
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
    traces = [_read_trace(f, i) for i, f in enumerate(files)]
    if step is None and len(traces) > 1:
        step = _last_common_step(traces)
    steps = [_read_step(t, step) for t in traces]
    seen: dict[int, PathLike] = {}
    for s, f in zip(steps, files):
        if s.rank in seen:
            raise InputError(
                "workload", f"rank {s.rank} is in two files, {seen[s.rank]} and {f}; give one trace per rank"
            )
        seen[s.rank] = f
    return steps


def _last_common_step(traces: Sequence[_Trace]) -> Optional[int]:
    """The last step number complete in every trace; None where one has no complete step (its
    own reading says so). :class:`InputError` where they share none: the traces are not of
    the same steps (different schedules or jobs), which no ``--step`` mends."""
    if not all(t.complete for t in traces):
        return None
    common = set(traces[0].complete).intersection(*(t.complete for t in traces[1:]))
    if not common:
        have = "; ".join(f"{t.name} has {_numbers(t.complete)}" for t in traces)
        raise InputError(
            "workload",
            f"the traces share no complete ProfilerStep ({have}); expected one trace per rank of the same job, "
            "profiled over the same steps (the same schedule on every rank)",
        )
    return max(common)


def _numbers(steps: Sequence[int], shown: int = 6) -> str:
    """Step numbers for a message: a few, then how many more."""
    more = f" and {len(steps) - shown} more" if len(steps) > shown else ""
    return ", ".join(map(str, steps[:shown])) + more


def _batch_of(step: Step, name: str) -> int:
    """The batch ``step`` read (1 with a warning where it could not: :func:`assumed_batch`)."""
    return step.batch_size if step.batch_size is not None else assumed_batch(name, _NO_SHAPES)


def from_profiler_trace(
    paths: Union[PathLike, Sequence[PathLike]],
    *,
    step: Optional[int] = None,
    name: Optional[str] = None,
    batch_size: Optional[int] = None,
) -> Workload:
    """A workload from one or several ranks' PyTorch profiler traces (``.json``/``.json.gz``).

    ``step``: the ``ProfilerStep#N`` to use (default: the last complete one in every trace).
    ``name``: the workload's name (default: the first file's name without extensions).
    ``batch_size``: the samples per worker and step (default: the model's input's leading
    dimension, summed over the micro-batches of gradient accumulation; 1 with an
    :class:`~tensorwire.io.InputWarning` where the trace recorded no shapes).
    Several ranks: median per-layer times; the ranks must have launched the same collectives.
    """
    steps = read_steps(paths, step=step)
    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    first = Path(files[0]).name
    stem = re.sub(r"(\.pt)?\.trace|\.json(\.gz)?$", "", first).removesuffix(".json")
    w = merge_ranks(
        steps,
        name or stem or "trace",
        [f"PyTorch profiler trace {Path(f).name}" for f in files],
        "profiler trace",
        batch_size=_batch_of(steps[0], first) if batch_size is None else batch_size,
        dtype_bytes=_element_bytes(steps[0].collectives),
    )
    # The simulator would refuse it later, naming a layer the trace never named.
    w.refuse_compute_past_horizon(
        "workload",
        ", ".join(Path(f).name for f in files),
        "expected ts and dur in microseconds, as torch.profiler writes them",
        f" (ProfilerStep#{steps[0].step}'s forward and backward passes)",
    )
    return w
