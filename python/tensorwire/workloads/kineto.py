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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

from tensorwire._core import InputError
from tensorwire.io import TRACE_FILE_LIMIT, clip, gunzip, loads_json, read_input
from tensorwire.limits import U64_MAX
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
_STEP = re.compile(r"ProfilerStep#(\d{1,18})$")
_BACKWARD = "autograd::engine::evaluate_function: "
_MODULE = "nn.Module: "
_BACKEND = re.compile(r"(gloo|nccl|mpi|ucc|xccl):(\w+)$")
_C10D = re.compile(r"c10d::(\w+?)_?$")
_NCCL_KERNEL = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)", re.IGNORECASE)


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
        if times is None or not math.isfinite(times[0]) or not times[1] >= 0:
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


def _rank(data: dict[str, Any], default: int) -> int:
    info = data.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return int(info["rank"])
    return default


# -- collectives --------------------------------------------------------------------------


def _nelems(dims: Any) -> Optional[int]:
    """Elements of a recorded shape, or of a tensor list's shapes."""
    if not isinstance(dims, list):
        return None
    if all(isinstance(d, int) for d in dims):
        return math.prod(dims)
    parts = [_nelems(d) for d in dims]
    return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)


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


def _param_comms(ev: _Ev) -> Optional[tuple[str, Optional[int], Optional[str]]]:
    coll = ev.args.get("Collective name")
    if not isinstance(coll, str):
        return None
    kind = _kind(coll)
    if kind is None:
        return None
    n_in, n_out = ev.args.get("In msg nelems"), ev.args.get("Out msg nelems")
    sizes = [n for n in (n_in, n_out) if isinstance(n, int)]
    dtype = ev.args.get("dtype")
    return kind, (max(sizes) if sizes else None), (dtype if isinstance(dtype, str) else None)


def _launches(events: Sequence[_Ev], comm_tids: set[Any]) -> tuple[list[_Launch], list[_Ev]]:
    """Collective launches (in time order) and the backend execution ranges."""
    c10d: list[_Launch] = []
    rpc: list[_Launch] = []
    backend: list[_Ev] = []
    kernels: list[_Ev] = []
    for e in events:
        m = _C10D.match(e.name)
        if m and e.tid not in comm_tids and _kind(m.group(1)):
            dims = e.args.get("Input Dims")
            n = _nelems(dims[0]) if isinstance(dims, list) and dims else None
            c10d.append(_Launch(e, _kind(m.group(1)) or "", n, None))
        elif e.name == "record_param_comms":
            pc = _param_comms(e)
            if pc:
                rpc.append(_Launch(e, *pc))
        elif _BACKEND.match(e.name):
            backend.append(e)
        elif e.cat == "kernel" and (_NCCL_KERNEL.match(e.name) or "Collective name" in e.args):
            kernels.append(e)
    launches = c10d
    if c10d and rpc:
        # record_param_comms nested in a c10d op describes it: take its size and dtype.
        for launch in c10d:
            inner = next(
                (r for r in rpc if r.ev.tid == launch.ev.tid and launch.ev.ts <= r.ev.ts <= launch.ev.end), None
            )
            if inner is not None:
                launch.nelems = inner.nelems if inner.nelems is not None else launch.nelems
                launch.dtype = inner.dtype
        outside = [r for r in rpc if not any(c.ev.tid == r.ev.tid and c.ev.ts <= r.ev.ts <= c.ev.end for c in c10d)]
        launches = sorted(c10d + outside, key=lambda x: x.ev.ts)
    elif rpc:
        launches = rpc
    executions = kernels if kernels else backend
    if not launches and backend:
        for e in backend:
            kind = _kind(_BACKEND.match(e.name).group(2))  # type: ignore[union-attr]
            if kind:
                dims = e.args.get("Input Dims")
                launches.append(_Launch(e, kind, _nelems(dims[0]) if isinstance(dims, list) and dims else None, None))
        executions = kernels
    return launches, executions


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


def _exec_nelems(e: _Ev) -> Optional[int]:
    for key in ("In msg nelems", "Out msg nelems"):
        if isinstance(e.args.get(key), int):
            return int(e.args[key])
    dims = e.args.get("Input Dims")
    return _nelems(dims[0]) if isinstance(dims, list) and dims else None


def _exec_dtype(e: _Ev) -> Optional[str]:
    if isinstance(e.args.get("dtype"), str):
        return str(e.args["dtype"])
    types = e.args.get("Input type")
    return types[0] if isinstance(types, list) and types and isinstance(types[0], str) and types[0] else None


def _match_executions(launches: Sequence[_Launch], executions: Sequence[_Ev]) -> None:
    """Pairs each launch with the first unused execution of its kind and size starting no
    earlier than the launch (backends run a process group's work in order)."""
    used: set[int] = set()
    for launch in launches:
        for i, e in enumerate(executions):
            if i in used or e.ts < launch.ev.ts - 1.0 or _exec_kind(e) != launch.kind:
                continue
            n = _exec_nelems(e)
            if launch.nelems is not None and n is not None and n != launch.nelems:
                continue
            used.add(i)
            launch.exec_ev = e
            if launch.nelems is None:
                launch.nelems = n
            if launch.dtype is None:
                launch.dtype = _exec_dtype(e)
            break


# -- one step -----------------------------------------------------------------------------


def _within(e: _Ev, start: float, end: float) -> bool:
    return start <= e.ts and e.end <= end + 1e-3


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


def _module_layers(
    events: Sequence[_Ev], modules: Sequence[_Ev], backward: Sequence[_Ev], fwd_start: float, bwd_start: float
) -> Optional[tuple[list[str], dict[str, float], dict[str, float], list[tuple[float, float, str]]]]:
    """Layers from nn.Module ranges: names (forward order), forward end and gradient-ready
    times (us), and each backward op's (start, end, layer)."""
    fwd_tid = modules[0].tid
    mods = [m for m in modules if m.tid == fwd_tid]

    def innermost(e: _Ev) -> Optional[_Ev]:
        best = None
        for m in mods:
            if m.ts <= e.ts and e.end <= m.end + 1e-3 and (best is None or m.dur <= best.dur):
                best = m
        return best

    seq_module: dict[int, str] = {}
    for e in events:
        seq = e.args.get("Sequence number")
        if e.tid == fwd_tid and fwd_start <= e.ts < bwd_start and isinstance(seq, int) and seq not in seq_module:
            m = innermost(e)
            if m is not None:
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
    order: list[str] = []
    fwd_end: dict[str, float] = {}
    for m in mods:
        name = m.name[len(_MODULE) :]
        if name not in order:
            order.append(name)
        fwd_end[name] = max(fwd_end.get(name, 0.0), m.end)
    keep = [n for n in order if accumulates.get(n)] or [n for n in order if any(o[2] == n for o in owner)]
    ready: dict[str, float] = {}
    for _s, end, name in owner:
        ready[name] = max(ready.get(name, bwd_start), end)
    return keep, fwd_end, ready, owner


def read_step(path: PathLike, *, step: Optional[int] = None, default_rank: int = 0) -> Step:
    """What one rank's trace says about step ``step`` (default: its last complete step)."""
    p = Path(path)
    data = load_trace(p)
    events = _events(data, p.name)
    rank = _rank(data, default_rank)
    steps = [e for e in events if _STEP.match(e.name)]
    if not steps:
        raise InputError(
            "workload",
            f"{p.name}: no ProfilerStep#N range; expected a torch.profiler trace of training steps "
            "(call prof.step() after each iteration)",
        )
    trace_end = max(e.end for e in events)
    comm_tids = {e.tid for e in events if _BACKEND.match(e.name)} - {s.tid for s in steps}
    launches, executions = _launches(events, comm_tids)
    _match_executions(launches, executions)

    def complete(s: _Ev) -> bool:
        ls = [x for x in launches if _within(x.ev, s.ts, s.end)]
        has_bwd = any(e.name.startswith(_BACKWARD) and _within(e, s.ts, s.end) for e in events)
        return has_bwd and s.end <= trace_end and (not executions or all(x.exec_ev is not None for x in ls))

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
        batch_size=_batch_size(here, fwd_start, bwd_start),
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


def _batch_size(events: Iterable[_Ev], start: float, end: float) -> int:
    """Leading dimension of the first forward op's first input: the batch size, usually."""
    for e in events:
        if start <= e.ts < end and e.cat == "cpu_op" and isinstance(e.args.get("Sequence number"), int):
            dims = e.args.get("Input Dims")
            if (
                isinstance(dims, list)
                and dims
                and isinstance(dims[0], list)
                and dims[0]
                and isinstance(dims[0][0], int)
            ):
                return max(1, int(dims[0][0]))
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
    return merge_ranks(
        steps, name or stem or "trace", [f"PyTorch profiler trace {Path(f).name}" for f in files], "profiler trace"
    )
