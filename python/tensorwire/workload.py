"""Workload: a model as the network sees it.

Layers in forward order, each with its forward and backward compute time (seconds, one
iteration at the workload's batch size on one device) and the gradient tensors it owns in
``module.parameters()`` order. Gradients are produced in the exact reverse of that order.

Three ways in besides the zoo (:func:`tensorwire.load_model`):

- a JSON workload file (format ``tensorwire-workload/1``, documented in docs/formats.md);
- a PyTorch profiler trace or a Chakra execution trace (docs/traces.md);
- Chang et al. 2020's five-attribute trace (event time, tensor name, size, source, destination);
- a collective microbenchmark, ``allreduce:SIZE[xCOUNT]``.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args

import pydantic

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.io import clip
from tensorwire.limits import (
    U32_MAX,
    U64_MAX,
    as_items,
    check_int,
    check_real,
    check_text,
    is_int,
    items_of,
    require_real,
    wrong_type,
)
from tensorwire.units import short_repr

_T = TypeVar("_T")

FORMAT = "tensorwire-workload/1"
#: The collectives a workload's tensors can run (docs/collectives.md; the core's
#: ``COLLECTIVE_NAMES``, checked by the tests).
CollectiveName = Literal["allreduce", "reducescatter", "allgather", "broadcast", "alltoall"]
COLLECTIVES: tuple[str, ...] = get_args(CollectiveName)


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' bus-bandwidth factor of ``collective`` on ``ranks`` ranks
    (doc/PERFORMANCE.md in NVIDIA's nccl-tests; the core's ``nccl::bus_factor``): the share of
    the buffer each rank's busiest link must carry, so that busbw = algbw x this is comparable
    with the link rate whatever the collective.

    >>> bus_factor("allreduce", 8), bus_factor("allgather", 8), bus_factor("broadcast", 8)
    (1.75, 0.875, 1.0)
    """
    n = ranks
    if collective == "allreduce":
        return 2 * (n - 1) / n
    if collective in ("reducescatter", "allgather", "alltoall"):
        return (n - 1) / n
    if collective == "broadcast":
        return 1.0
    raise InputError("collective", f"{collective!r} is not a collective; choose one of {', '.join(COLLECTIVES)}")


@dataclass(frozen=True)
class Tensor:
    """A gradient tensor: its name and size in bytes (an integer; numpy's is kept as a plain
    ``int``, so that :meth:`Workload.to_dict` stays JSON-ready)."""

    name: str
    bytes: int

    def __post_init__(self) -> None:
        check_text("tensor.name", self.name, allow="")
        object.__setattr__(self, "bytes", check_int("tensor.bytes", self.bytes, 0, U64_MAX))


@dataclass(frozen=True)
class Layer:
    """A module: compute times in seconds and the tensors it owns.

    The times are any real numbers >= 0 (numpy's too), kept as plain ``float``; ``tensors``
    is any sequence of :class:`Tensor`, kept as a tuple (a list made the layer unhashable).
    """

    name: str
    forward_s: float
    backward_s: float
    tensors: tuple[Tensor, ...] = ()

    def __post_init__(self) -> None:
        check_text("layer.name", self.name, allow="")
        for key in ("forward_s", "backward_s"):
            value = getattr(self, key)
            require_real(f"layer.{key}", value, f"a finite number of seconds >= 0 (layer {self.name!r})")
            seconds = check_real(f"layer.{key}", value)
            if not (math.isfinite(seconds) and seconds >= 0):
                raise InputError(
                    f"layer.{key}", f"{value!r} (layer {self.name!r}) must be a finite number of seconds >= 0"
                )
            object.__setattr__(self, key, seconds)
        object.__setattr__(self, "tensors", items_of("layer.tensors", self.tensors, Tensor))


@dataclass(frozen=True)
class Workload:
    """A model as the network sees it.

    ``batch_size`` (samples per worker and iteration) and ``dtype_bytes`` are integers
    (numpy's too, kept as plain ``int``); ``layers`` and ``sources`` are sequences, kept as
    tuples so that a workload is hashable (``sources`` is a sequence of texts, not one text).

    >>> w = Workload("toy", 8, (Layer("fc", 0.001, 0.002, (Tensor("fc.weight", 4000),)),))
    >>> w.total_bytes, w.compute_time_s
    (4000, 0.003)
    """

    name: str
    batch_size: int
    layers: tuple[Layer, ...]
    description: str = ""
    sources: tuple[str, ...] = field(default=())
    #: Bytes per element of the listed tensor sizes: 4 (fp32, the CNN zoo), 2 (bf16, the
    #: LLMs); strategies' ``param_dtype``/``reduce_dtype`` rescale from it.
    dtype_bytes: int = 4
    #: What all-reduce strategies run on every tensor: ``allreduce`` (gradient
    #: synchronisation), or for microbenchmarks ``reducescatter``, ``allgather``,
    #: ``broadcast``, ``alltoall`` (docs/collectives.md).
    collective_kind: str = "allreduce"

    def __post_init__(self) -> None:
        if not isinstance(self.collective_kind, str):
            raise wrong_type("workload.collective", f"text: one of {', '.join(COLLECTIVES)}", self.collective_kind)
        if self.collective_kind not in COLLECTIVES:
            raise InputError(
                "workload.collective",
                f"{self.collective_kind!r} is not a collective; choose one of {', '.join(COLLECTIVES)}",
            )
        # An integer only: 2.0 passed `in (1, 2, 4, 8)` and failed in the core as a bare TypeError.
        require_real("workload.dtype_bytes", self.dtype_bytes, "an element size: 1, 2, 4 or 8")
        if not is_int(self.dtype_bytes) or self.dtype_bytes not in (1, 2, 4, 8):
            raise InputError(
                "workload.dtype_bytes", f"{self.dtype_bytes!r} is not an element size; choose 1, 2, 4 or 8"
            )
        object.__setattr__(self, "dtype_bytes", int(self.dtype_bytes))
        object.__setattr__(self, "batch_size", check_int("workload.batch_size", self.batch_size, 1, U32_MAX))
        object.__setattr__(self, "layers", items_of("workload.layers", self.layers, Layer))
        if not self.layers:
            raise InputError("workload.layers", "a workload needs at least one layer")
        check_text("workload.name", self.name, allow="")
        if not self.name.strip():
            # An empty name titled tables ": ring, 4 workers" and named sweep rows "".
            raise InputError("workload.name", f"{self.name!r} is empty; give the workload a name")
        check_text("workload.description", self.description)
        # One text is not a list of them: "abc" became the sources 'a', 'b', 'c'.
        if isinstance(self.sources, (str, bytes)):
            raise wrong_type("workload.sources", f"a list of sources, e.g. [{self.sources!r:.60}]", self.sources)
        object.__setattr__(self, "sources", as_items("workload.sources", self.sources, "a list of sources (texts)"))
        for source in self.sources:
            check_text("workload.sources", source)
        lost = _compute_below_resolution(self.layers)
        if lost is not None:
            # Computed as 0 ns, it ran as a collective microbenchmark: no samples/s, no
            # scaling factor, and no word of why.
            i, key, seconds = lost
            raise InputError(
                f"workload.layers[{i}].{key}",
                f"{seconds!r} s: the compute is {COMPUTE_BELOW_RESOLUTION}; give compute times of at least 1 ns (or 0 for a "
                "collective microbenchmark, which has no compute)",
            )
        total = self.total_bytes  # one pass over every tensor serves both checks below
        if total == 0 and not self.has_compute:
            # An iteration of no time: the results' throughput was infinite and the
            # comparisons divided by zero after the run.
            raise InputError(
                "workload.layers",
                "no compute (every forward_s and backward_s 0) and no gradient bytes: nothing to "
                "simulate; give a layer a compute time or a tensor of at least one byte",
            )
        if total > U64_MAX:
            raise InputError("workload.tensors", f"{total} bytes in all is more than the core's limit of {U64_MAX}")

    def __repr__(self) -> str:
        """The fields, with the layers and sources as their counts (``layers=<35 layers>``):
        an LLM's layers printed 60 kB."""
        return short_repr(self, {"layers": "layer", "sources": "source"})

    # -- derived quantities -------------------------------------------------------------
    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """All tensors in ``parameters()`` order."""
        return tuple(t for layer in self.layers for t in layer.tensors)

    @property
    def total_bytes(self) -> int:
        """Gradient bytes per iteration."""
        return sum(t.bytes for t in self.tensors)

    @property
    def compute_time_s(self) -> float:
        """Forward plus backward compute per iteration on one worker, seconds."""
        return math.fsum(layer.forward_s + layer.backward_s for layer in self.layers)

    @property
    def has_compute(self) -> bool:
        """Whether an iteration computes: some layer's forward or backward time is 1 ns or
        more as the engine counts it (whole nanoseconds, rounded to the nearest; forward and
        backward each). A collective microbenchmark does not; its result has no samples
        (:class:`~tensorwire.Result`). A workload whose times are all above 0 but below that
        is refused (:data:`COMPUTE_BELOW_RESOLUTION`).

        >>> Workload.collective("allreduce:1MiB").has_compute
        False
        """
        return any(_whole_ns(layer.forward_s) or _whole_ns(layer.backward_s) for layer in self.layers)

    def with_compute_speedup(self, speedup: float) -> Workload:
        """The same model on a device ``speedup`` times faster (Chang et al. 2020, seed 000 section 8.6).
        A speedup that leaves a workload with compute below 1 ns in every layer is refused
        (:data:`COMPUTE_BELOW_RESOLUTION`), as one past the simulation horizon is."""
        if not check_real("compute_speedup", speedup) > 0 or speedup == float("inf"):
            raise InputError("compute_speedup", f"{speedup!r} must be a number > 0")
        layers = tuple(
            Layer(layer.name, layer.forward_s / speedup, layer.backward_s / speedup, layer.tensors)
            for layer in self.layers
        )
        if _compute_below_resolution(layers) is not None:
            longest = max(max(layer.forward_s, layer.backward_s) for layer in self.layers)
            raise InputError(
                "compute_speedup",
                f"{speedup!r} makes the compute {COMPUTE_BELOW_RESOLUTION}; use a speedup below "
                f"{longest / 0.5e-9:.3g} (the longest layer's time over half a nanosecond)",
            )
        w = dataclasses.replace(self, layers=layers)
        w.refuse_compute_past_horizon("compute_speedup", speedup, "use a speedup that keeps it far below")
        return w

    def refuse_compute_past_horizon(self, field: str, value: Any, fix: str, detail: str = "") -> None:
        """:class:`InputError` naming ``field`` (set to ``value``, which made it so) where an
        iteration's compute reaches the simulation horizon; ``detail`` and ``fix`` go in the
        message. The engine would refuse it later, naming a layer the user never gave."""
        if self.compute_time_s >= _core.HORIZON_S:
            raise InputError(
                field,
                f"{value!r} makes an iteration's compute {self.compute_time_s:.3g} s{detail}, past the simulation"
                f" horizon of {_core.HORIZON_S:.0f} s (2^53 ns, 104 days); {fix}",
            )

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def collective(cls, spec: str) -> Workload:
        """``COLLECTIVE:SIZE[xCOUNT]``: COUNT back-to-back collectives of SIZE bytes (the full
        buffer), no compute; COLLECTIVE is ``allreduce``, ``reducescatter``, ``allgather``,
        ``broadcast`` or ``alltoall``.

        >>> Workload.collective("allreduce:1MiBx50").total_bytes == 50 * 2**20
        True
        >>> Workload.collective("allgather:64MiB").collective_kind
        'allgather'
        """
        if not isinstance(spec, str):
            raise wrong_type("collective", "text such as 'allreduce:64MiB'", spec)
        name, batch, layers, tensors, dtype_bytes, kind = _core.collective(spec)
        w = cls._from_core(name, batch, layers, tensors, f"{spec}: collective microbenchmark", dtype_bytes, kind)
        # The core's own workload from the same tuples, so that a run converts nothing again.
        w.__dict__["core"] = _core.Workload(name, batch, layers, tensors, dtype_bytes, kind)
        return w

    @classmethod
    def from_file(cls, path: str | Path, format: str | None = None) -> Workload:
        """Reads a workload file of ``format`` (default: detected from its content): a JSON
        workload (or zoo) file or a five-attribute trace (``tensorwire``), a PyTorch profiler
        trace (``kineto``, .json or .json.gz) or a Chakra execution trace (``chakra``).

        Kept for users of the class; the readers live in :mod:`tensorwire.workloads.formats`
        (:func:`~tensorwire.workloads.formats.load_workload`), imported when called so that this
        module imports nothing from ``tensorwire.workloads``."""
        from tensorwire.workloads.formats import load_workload

        return load_workload(path, format)

    @classmethod
    def from_text_file(cls, path: str | Path) -> Workload:
        """Reads a JSON workload file (or a zoo file), or else a five-attribute trace (see
        :func:`tensorwire.workloads.formats.read_text_workload`)."""
        from tensorwire.workloads.formats import read_text_workload

        return read_text_workload(path)

    @classmethod
    def from_dict(cls, data: Any) -> Workload:
        """Builds a workload from the ``tensorwire-workload/1`` (or ``tensorwire-zoo/1``) dict."""
        layers_given = data.get("layers") if isinstance(data, dict) else None
        if isinstance(layers_given, list) and len(layers_given) > _core.MAX_LAYERS:
            # Counted before each layer is validated: 1.5 million took 18 s and 1.5 GB first.
            raise InputError(
                "workload.layers",
                f"{len(layers_given):,} layers is more than the {_core.MAX_LAYERS:,} a run can hold",
            )
        file_model = _file_model(data)
        try:
            model = file_model.model_validate(data)
        except pydantic.ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            message = err["msg"]
            if err["type"] == "extra_forbidden":
                message = _not_a_field(file_model, err["loc"])
            elif err["type"] in ("less_than_equal", "greater_than_equal") and err.get("ctx"):
                # pydantic prints its bound as a float (U64_MAX read 18446744073709552000).
                bound = next(iter(err["ctx"].values()))
                side = "at most" if err["type"] == "less_than_equal" else "at least"
                message = f"{clip(str(err['input']), 40)} is not allowed; need {side} {bound}"
            elif where == "format" and err["type"] == "missing":
                # No "format" at all: likely not a workload file; say what the readers expect.
                message = (
                    'missing: a workload file is JSON with "format": "tensorwire-workload/1" (docs/formats.md); '
                    'a torch.profiler trace has "traceEvents"'
                )
            elif err["type"] == "missing":
                message = "missing; a workload file gives it (docs/formats.md lists the fields)"
            raise InputError(f"workload.{where}" if where else "workload", message) from None
        layers = tuple(
            Layer(
                layer.name,
                layer.forward_s,
                layer.backward_s,
                tuple(Tensor(t.name, t.bytes) for t in layer.tensors),
            )
            for layer in model.layers
        )
        return cls(
            model.name,
            model.batch_size,
            layers,
            model.description,
            tuple(model.sources),
            model.dtype_bytes,
            model.collective,
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``tensorwire-workload/1`` form, for saving."""
        return {
            "format": FORMAT,
            "name": self.name,
            "description": self.description,
            "batch_size": self.batch_size,
            "dtype_bytes": self.dtype_bytes,
            "collective": self.collective_kind,
            "sources": list(self.sources),
            "layers": [
                {
                    "name": layer.name,
                    "forward_s": layer.forward_s,
                    "backward_s": layer.backward_s,
                    "tensors": [{"name": t.name, "bytes": t.bytes} for t in layer.tensors],
                }
                for layer in self.layers
            ],
        }

    def save(self, path: str | Path) -> None:
        """Writes the JSON form atomically (temporary file, then rename)."""
        from tensorwire.io import write_atomic

        write_atomic(Path(path), json.dumps(self.to_dict(), indent=1) + "\n")

    # -- bindings -----------------------------------------------------------------------
    @functools.cached_property
    def core(self) -> _core.Workload:
        """The whole workload as the core runs it (element size and collective included),
        converted and validated once, on first use, and then taken as is by
        :func:`tensorwire.simulate` and :func:`tensorwire.simulate_jobs`. Not a field: kept
        out of equality, hashing, ``repr`` and pickling (see :meth:`__getstate__`)."""
        layers = [(layer.name, layer.forward_s, layer.backward_s) for layer in self.layers]
        tensors = [(t.name, t.bytes, i) for i, layer in enumerate(self.layers) for t in layer.tensors]
        return _core.Workload(self.name, self.batch_size, layers, tensors, self.dtype_bytes, self.collective_kind)

    def __getstate__(self) -> dict[str, Any]:
        """The fields without the core's object (it does not pickle; rebuilt on first use)."""
        return {k: v for k, v in self.__dict__.items() if k != "core"}

    @classmethod
    def _from_core(
        cls,
        name: str,
        batch: int,
        layers: list[tuple[str, float, float]],
        tensors: list[tuple[str, int, int]],
        description: str = "",
        dtype_bytes: int = 4,
        collective_kind: str = "allreduce",
    ) -> Workload:
        """The workload the core built and checked, unchecked here, and built with the cyclic
        garbage collector paused (its objects hold no cycles): the checks and the collector's
        passes over two million new objects took 11 s of the 12 s that ``simulate --collective
        allreduce:1GiBx1000000 -s ring`` took to be refused over the flow budget."""
        paused = gc.isenabled()
        gc.disable()
        try:
            owned: list[list[Tensor]] = [[] for _ in layers]
            for tname, size, layer in tensors:
                owned[layer].append(_unchecked(Tensor, name=tname, bytes=size))
            layer_objects = tuple(
                _unchecked(Layer, name=n, forward_s=f, backward_s=b, tensors=tuple(owned[i]))
                for i, (n, f, b) in enumerate(layers)
            )
        finally:
            if paused:
                gc.enable()
        return _unchecked(
            cls,
            name=name,
            batch_size=batch,
            layers=layer_objects,
            description=description,
            sources=(),
            dtype_bytes=dtype_bytes,
            collective_kind=collective_kind,
        )


#: Why a workload whose compute is above 0 s but rounds to 0 ns is refused (naming the layer
#: time, or ``compute_speedup``): it ran as a collective microbenchmark, without a word.
COMPUTE_BELOW_RESOLUTION = (
    "below 1 ns per layer (forward and backward each; the simulation counts whole nanoseconds): it would compute "
    "nothing and run as a collective microbenchmark, without samples/s or scaling factor"
)


def _whole_ns(seconds: float) -> bool:
    """Whether ``seconds`` is 1 ns or more as the core counts it: to the nearest nanosecond,
    half away from zero (``units::seconds_to_nanos``), from the same product."""
    return seconds * 1e9 >= 0.5


def _compute_below_resolution(layers: tuple[Layer, ...]) -> tuple[int, str, float] | None:
    """Where ``layers`` compute (some time above 0 s) but none a nanosecond as the core counts
    it (:func:`_whole_ns`): the first layer time above 0, as (layer index, ``forward_s`` or
    ``backward_s``, seconds); else None (a workload that computes, or a microbenchmark, all 0)."""
    first = None
    for i, layer in enumerate(layers):
        for key in ("forward_s", "backward_s"):
            seconds: float = getattr(layer, key)
            if _whole_ns(seconds):
                return None
            if seconds > 0 and first is None:
                first = (i, key, seconds)
    return first


def _unchecked(cls: type[_T], **fields: Any) -> _T:
    """An instance of the frozen dataclass ``cls`` with ``fields`` (every one of them), without
    its ``__post_init__`` checks: for values the core has built and checked."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


def _not_bool(value: Any) -> Any:
    """JSON's true and false are not numbers here (pydantic would read true as 1 byte)."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true or false")
    return value


class _TensorModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", strict=True)
    name: str
    bytes: Annotated[int, pydantic.BeforeValidator(_not_bool), pydantic.Field(ge=0, le=U64_MAX)]


class _LayerModel(pydantic.BaseModel):
    # A key the format does not have is refused: a misspelt "tensors" lost the layer's gradients.
    model_config = pydantic.ConfigDict(extra="forbid", strict=True)
    name: str
    forward_s: pydantic.NonNegativeFloat
    backward_s: pydantic.NonNegativeFloat
    tensors: list[_TensorModel] = []

    @pydantic.field_validator("forward_s", "backward_s", mode="before")
    @classmethod
    def _finite(cls, v: Any) -> Any:
        # Before the bound (NaN failed it as "greater than or equal to 0").
        _not_bool(v)
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("must be a finite number of seconds")
        return v


class _ZooLayerModel(_LayerModel):
    """A zoo file's layer: also its forward FLOPs per sample (workloads/zoo/README.md)."""

    forward_flops: Annotated[int, pydantic.BeforeValidator(_not_bool), pydantic.Field(ge=0)] = 0


class _FileModel(pydantic.BaseModel):
    """The fields a workload file and a zoo file share (docs/formats.md); a key neither
    format has is refused (``dtype_byte`` was ignored, and the element size silently 4)."""

    model_config = pydantic.ConfigDict(extra="forbid", strict=True)
    format: Literal["tensorwire-workload/1", "tensorwire-zoo/1"]
    name: str
    description: str = ""
    # Zoo files give it per device (filled in by `_ZooFile._zoo_batch`); a workload file must give it.
    batch_size: Annotated[int, pydantic.BeforeValidator(_not_bool), pydantic.Field(ge=1, le=U32_MAX)]
    dtype_bytes: Literal[1, 2, 4, 8] = 4
    collective: CollectiveName = "allreduce"
    sources: list[str] = []


class _WorkloadFile(_FileModel):
    """A ``tensorwire-workload/1`` file."""

    layers: list[_LayerModel] = pydantic.Field(min_length=1)


class _ZooFile(_FileModel):
    """A ``tensorwire-zoo/1`` file: the workload fields and the zoo's own
    (workloads/zoo/README.md), which describe the model and are not read further."""

    layers: list[_ZooLayerModel] = pydantic.Field(min_length=1)
    display_name: str = ""
    family: str = ""
    sample: str = ""
    parameters: Annotated[int, pydantic.BeforeValidator(_not_bool), pydantic.Field(ge=0)] = 0
    architecture_source: str = ""
    devices: dict[str, dict[str, Any]] = {}
    default_device: str = ""

    @pydantic.model_validator(mode="before")
    @classmethod
    def _zoo_batch(cls, data: Any) -> Any:
        # Zoo files give the batch per device; the default device's is the workload's.
        if isinstance(data, dict) and "batch_size" not in data:
            # Malformed `devices`/`default_device` are left to the fields' own checks, which
            # name them (a list or a number here raised AttributeError).
            devices, default = data.get("devices", {}), data.get("default_device", "")
            device = devices.get(default, {}) if isinstance(devices, dict) and isinstance(default, str) else {}
            data = {**data, "batch_size": device.get("batch_size", 1) if isinstance(device, dict) else 1}
        return data


def _file_model(data: Any) -> type[_WorkloadFile] | type[_ZooFile]:
    """The model of the file ``data`` says it is (a zoo file, else a workload file)."""
    return _ZooFile if isinstance(data, dict) and data.get("format") == "tensorwire-zoo/1" else _WorkloadFile


def _model_at(model: type[pydantic.BaseModel], loc: tuple[int | str, ...]) -> type[pydantic.BaseModel]:
    """The model of the object at ``loc`` (a pydantic error's location, ``("layers", 1)``)
    in a file of ``model``."""
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        inner = get_args(field.annotation) if field is not None else ()
        nested = inner[0] if inner else field.annotation if field is not None else None
        if isinstance(nested, type) and issubclass(nested, pydantic.BaseModel):
            model = nested
    return model


def _not_a_field(model: type[pydantic.BaseModel], loc: tuple[int | str, ...]) -> str:
    """What is wrong with the key at ``loc`` that its object's model does not have."""
    fields = ", ".join(_model_at(model, loc[:-1]).model_fields)
    return f"not a field; fields are {fields} (docs/formats.md)"
