"""Cluster files: what ``tensorwire calibrate`` measured, for ``--cluster FILE``.

A cluster file is JSON (the standard library reads and writes it on every Python tensorwire
supports, where TOML's ``tomllib`` needs 3.11 and writing TOML a dependency):

.. code-block:: json

    {"tensorwire_cluster": 1,
     "topology": "rail:node=dgx-h100,intra_efficiency=0.93,inter_efficiency=0.9,intra_latency=12000ns,inter_latency=30000ns",
     "bandwidth_bytes_per_s": null, "latency_s": 5e-06, "transport": "rdma",
     "gpus_per_node": 8, "calibration": {...}, "nccl_version_modelled": "2.30.7",
     "nccl_version_measured": "2.18.5", "sources": [{"path": ..., "collective": ..., ...}],
     "max_abs_error": 0.046, "measured_with": {"algo": null, "proto": null, "strategy": "nccl"},
     "created": "2026-01-01T00:00:00Z"}

``--cluster FILE`` on ``simulate``, ``compare``, ``sweep`` and ``jobs`` fills ``--topology``,
``--bandwidth`` and ``--latency`` from it; the same option given on the command line with
another value is refused. ``transport`` repeats the topology's ``transport=`` (NCCL's network
transport, which strategies without a ``transport=`` of their own take); the two must agree.

:class:`ClusterFile` is the format: ``calibrate`` writes what it validates (:func:`write`) and
``--cluster`` reads what it validates (:func:`parse`), so the two cannot drift apart. A file
edited by hand is read as strictly as calibrate writes it: every key, of its type and range,
and no other (a key given twice too), then what the keys say of each other (docs/calibration.md,
"Cluster files"); each refusal one line naming the key (``cluster.calibration.nvls_fill:
missing``).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import math
import re
import sys
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Callable,
    Literal,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
    get_args,
)

import click
import pydantic
from click.core import ParameterSource

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.calibrate.fit import (
    FAMILIES,
    Calibration,
    Model,
    node_gpus,
    node_of_another_gpu,
    runs_algo,
    topology_options,
)
from tensorwire.calibrate.logs import COLLECTIVES, MAX_HEADER_NUMBER, MAX_ROWS
from tensorwire.io import clip, key_given_twice, loads_json, read_input, write_atomic
from tensorwire.limits import check_text
from tensorwire.units import format_rate, format_seconds

F = TypeVar("F", bound=Callable[..., Any])

#: The format's version (the ``tensorwire_cluster`` key).
FORMAT = 1
#: A cluster file is a few hundred bytes; anything past this is not one.
MAX_BYTES = 1 << 20
#: The largest rate ``--bandwidth`` takes, bytes/s: in bits/s (x 8) a finite double (the
#: core's ``parse_rate``: ``-b 1e300Gbps`` is past it). 1e308 bytes/s printed "inf Tbps", and
#: ``sweep``, which passes rates as text, read "infbps".
MAX_RATE = sys.float_info.max / 8
#: How ``created`` is written: UTC, to the second.
CREATED_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
#: A NCCL version as the logs give it (``NCCL version 2.18.5``, ``nccl-library=21805``).
_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
#: The size at which a file's families are asked whether NCCL's model runs them (it records no
#: sizes, and whether a fabric runs an algorithm does not depend on one: :func:`runs_algo`).
_ANY_SIZE = 1 << 30


# --- the format: one definition, for the writer and the reader -------------------------


def _real(value: Any) -> float:
    """A JSON number as a finite float: not true or false (which Python counts as 1 and 0),
    not an integer past a float's range (10**400), not NaN or Infinity (which Python's JSON
    reads)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("not a number")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError("past a float's range") from None
    if not math.isfinite(number):
        raise ValueError("not finite")
    return number


def _one_of(allowed: Sequence[str]) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError("not one of them")
        return value

    return check


def _utc_time(value: str) -> str:
    datetime.datetime.strptime(value, CREATED_FORMAT)  # a ValueError where it is not one
    return value


def _measured_versions(value: Any) -> Any:
    """``nccl_version_measured``: the logs' NCCL where they say one (text), their versions where
    they say several (a list, sorted, each once), or null."""

    def one(v: Any) -> bool:
        return isinstance(v, str) and _VERSION.fullmatch(v) is not None

    several = isinstance(value, list) and len(value) >= 2 and all(map(one, value)) and len(set(value)) == len(value)
    if value is None or one(value) or several:
        return value
    raise ValueError("not a version")


Real = Annotated[float, pydantic.BeforeValidator(_real)]
#: A number the logs' header prints from a C ``int`` (nodes, GPUs per node).
HeaderCount = Annotated[int, pydantic.Field(ge=1, le=MAX_HEADER_NUMBER)]
_HEADER_COUNT = f"a whole number from 1 to {MAX_HEADER_NUMBER}"


class _Strict(pydantic.BaseModel):
    """An object of the format: every key given (none has a default), of its type (strict: no
    text read as a number), and no other key."""

    model_config = pydantic.ConfigDict(extra="forbid", strict=True, frozen=True)


def _calibration_block() -> type[pydantic.BaseModel]:
    """The ``calibration`` object: the fields of :class:`~tensorwire.calibrate.fit.Calibration`
    (what the fit gives, :meth:`~tensorwire.calibrate.fit.Calibration.as_dict`), each a number."""
    fields: dict[str, Any] = {
        f.name: (Real, pydantic.Field(description="a number")) for f in dataclasses.fields(Calibration)
    }
    return pydantic.create_model("CalibrationBlock", __base__=_Strict, **fields)


if TYPE_CHECKING:
    CalibrationBlock = pydantic.BaseModel
else:
    CalibrationBlock = _calibration_block()


class Source(_Strict):
    """One log calibrate read."""

    path: str = pydantic.Field(description="text (the log's path)")
    sha256: str = pydantic.Field(pattern=r"^[0-9a-f]{64}$", description="the log's SHA-256 in 64 hex digits (0-9, a-f)")
    collective: Annotated[str, pydantic.AfterValidator(_one_of(COLLECTIVES))] = pydantic.Field(
        description=f"one of {', '.join(COLLECTIVES)}"
    )
    nodes: HeaderCount = pydantic.Field(description=_HEADER_COUNT)
    gpus_per_node: HeaderCount = pydantic.Field(description=_HEADER_COUNT)
    gpu: str = pydantic.Field(description="text (the GPU the log names)")
    rows: Annotated[int, pydantic.Field(ge=1, le=MAX_ROWS)] = pydantic.Field(
        description=f"a whole number from 1 to {MAX_ROWS:,} (the rows fitted)"
    )


class MeasuredWith(_Strict):
    """NCCL_ALGO / NCCL_PROTO the logs were measured with, and the ``nccl`` strategy with them."""

    algo: Optional[str] = pydantic.Field(description="text (NCCL_ALGO as the nccl strategy's algo= takes it) or null")
    proto: Optional[str] = pydantic.Field(
        description="text (NCCL_PROTO as the nccl strategy's proto= takes it) or null"
    )
    strategy: str = pydantic.Field(description="text (the nccl strategy with algo and proto, e.g. nccl:algo=ring)")


class _Options(_Strict):
    """The keys ``--cluster`` applies or checks the command's options against."""

    tensorwire_cluster: int = pydantic.Field(description=f"{FORMAT} (the format's version)")
    topology: str = pydantic.Field(description="a topology spec (text), e.g. rail:node=dgx-h100")
    bandwidth_bytes_per_s: Optional[Annotated[Real, pydantic.Field(gt=0, le=MAX_RATE)]] = pydantic.Field(
        description="a number > 0 and at most 2.2e307 (bytes/s, the most --bandwidth takes: in bits/s a finite "
        "number) or null (the fabric's own NICs)"
    )
    latency_s: Annotated[Real, pydantic.Field(ge=0, lt=_core.HORIZON_S)] = pydantic.Field(
        description=f"a number >= 0 and below {_core.HORIZON_S:.0f} (seconds; the simulation horizon)"
    )
    transport: Literal["rdma", "tcp"] = pydantic.Field(description="rdma or tcp")
    gpus_per_node: HeaderCount = pydantic.Field(description=_HEADER_COUNT)


class ClusterFile(_Options):
    """A cluster file (format :data:`FORMAT`): the cluster options (:data:`OPTION_KEYS`) and what
    calibrate records beside them (:data:`RECORD_KEYS`). ``calibrate`` writes one
    (:func:`write`) and ``--cluster`` reads one (:func:`read`) through this model, every key
    required."""

    calibration: CalibrationBlock = pydantic.Field(description="an object of the fitted numbers")
    nccl_version_modelled: str = pydantic.Field(description=f"text, the NCCL the model follows ({_core.NCCL_VERSION})")
    nccl_version_measured: Annotated[Any, pydantic.AfterValidator(_measured_versions)] = pydantic.Field(
        description='a NCCL version (text, e.g. "2.18.5"), a list of two or more, or null'
    )
    sources: list[Source] = pydantic.Field(
        min_length=1,
        max_length=MAX_ROWS,
        description=f"a list of the logs calibrate read, 1 to {MAX_ROWS:,} objects",
    )
    max_abs_error: Annotated[Real, pydantic.Field(ge=0)] = pydantic.Field(description="a number >= 0")
    measured_with: MeasuredWith = pydantic.Field(description="an object with algo, proto and strategy")
    created: Annotated[str, pydantic.AfterValidator(_utc_time)] = pydantic.Field(
        description="a UTC time as calibrate writes it, e.g. 2026-01-01T00:00:00Z"
    )

    @property
    def bandwidth(self) -> Optional[float]:
        """``bandwidth_bytes_per_s``: the host link rate, or None (the fabric's own NICs)."""
        return self.bandwidth_bytes_per_s

    @property
    def latency(self) -> float:
        """``latency_s``: the latency per hop, seconds."""
        return self.latency_s

    def to_json(self) -> str:
        return json.dumps(self.model_dump(), indent=1) + "\n"


#: The keys of the cluster options, and those calibrate records beside them: the format's
#: keys (:class:`ClusterFile`'s fields), in the order it writes them.
OPTION_KEYS: tuple[str, ...] = tuple(_Options.model_fields)
RECORD_KEYS: tuple[str, ...] = tuple(k for k in ClusterFile.model_fields if k not in OPTION_KEYS)


def logs_gpus_per_node(sources: Sequence[tuple[int, int]]) -> int:
    """The ``gpus_per_node`` of a file whose logs ran on ``sources`` (nodes, GPUs per node):
    a multi-node first log's (the node's), else the most any log ran on one node.

    >>> logs_gpus_per_node([(1, 4), (1, 8)]), logs_gpus_per_node([(2, 8), (1, 4)])
    (8, 8)
    """
    return sources[0][1] if sources[0][0] > 1 else max(gpus for _, gpus in sources)


def measured_strategy(algo: Optional[str], proto: Optional[str]) -> str:
    """The ``nccl`` strategy as the logs were measured: with their NCCL_ALGO / NCCL_PROTO
    restriction (``algo=``/``proto=`` syntax).

    >>> measured_strategy("ring+tree", None), measured_strategy(None, None)
    ('nccl:algo=ring+tree', 'nccl')
    """
    options = [f"{k}={v}" for k, v in (("algo", algo), ("proto", proto)) if v]
    return "nccl" + (":" + ",".join(options) if options else "")


def write(path: str, cluster: Union[ClusterFile, Mapping[str, Any]]) -> None:
    """Writes ``cluster`` (a :class:`ClusterFile`, or its keys) to ``path`` atomically (a
    temporary file, then a rename), once :func:`parse` (what ``--cluster`` reads) takes it: a
    file its consumers would refuse is refused here, ``InputError("out", ...)``, and nothing
    is written."""
    try:
        model = cluster if isinstance(cluster, ClusterFile) else ClusterFile.model_validate(dict(cluster))
        text = model.to_json()
        parse(path, text.encode())
    except pydantic.ValidationError as e:
        key, message = _validation_error(e)
        raise InputError("out", f"{path} not written: --cluster would refuse it (cluster.{key}: {message})") from None
    except InputError as e:
        why = str(e.args[-1]).removeprefix(f"{path}: ")
        raise InputError("out", f"{path} not written: --cluster would refuse it ({why})") from None
    write_atomic(path, text, "out")


# --- reading ---------------------------------------------------------------------------


def _bad(path: str, message: str) -> InputError:
    return InputError("cluster", f"{path}: {message}")


def _bad_key(path: str, key: str, message: str) -> InputError:
    """A refusal naming the key (``calibration.nvls_fill``) as ``cluster.calibration.nvls_fill``."""
    return _bad(path, f"cluster.{key}: {message}")


def _quoted(value: Any) -> str:
    """A JSON value as a message quotes it, cut short (a 400-digit number, a megabyte of text)."""
    return clip(json.dumps(value))


def _key_path(loc: Sequence[Union[int, str]]) -> str:
    """A pydantic error's location as a key path, ``sources.0.gpus_per_node``; a key that is
    no plain name quoted (and cut short)."""
    return ".".join(
        str(part) if isinstance(part, int) or re.fullmatch(r"[A-Za-z0-9_]{1,60}", part) else _quoted(part)
        for part in loc
    )


def _models_along(loc: Sequence[Union[int, str]]) -> tuple[type[pydantic.BaseModel], Optional[Any]]:
    """The model of the object holding the last key of ``loc``, and that key's field (None: a
    key the model does not have, or a list's item)."""
    model: type[pydantic.BaseModel] = ClusterFile
    field = None
    for i, part in enumerate(loc):
        if isinstance(part, int):
            field = None
            continue
        field = model.model_fields.get(part)
        if field is None or i == len(loc) - 1:
            break
        annotation = field.annotation
        for inner in (*get_args(annotation), annotation):
            if isinstance(inner, type) and issubclass(inner, pydantic.BaseModel):
                model = inner
                break
    return model, field


def _validation_error(e: pydantic.ValidationError) -> tuple[str, str]:
    """The first of a validation's errors as (key path, what is wrong and what is allowed)."""
    err = e.errors()[0]
    loc = tuple(err["loc"])
    key = _key_path(loc)
    if err["type"] == "missing":
        return key, 'missing; calibrate writes every key of the format (docs/calibration.md, "Cluster files")'
    model, field = _models_along(loc)
    if err["type"] == "extra_forbidden":
        where = "a cluster file" if len(loc) == 1 else f'"{_key_path(loc[:-1])}"'
        return key, f"not a key of {where}; its keys are {', '.join(model.model_fields)}"
    if field is None:  # a list's item: an object of the model's keys
        allowed = f"an object with the keys {', '.join(model.model_fields)}"
    else:
        allowed = field.description or "as calibrate writes it"
    return key, f"must be {allowed}, not {_quoted(err['input'])}"


def _no_key_twice(path: str, text: bytes) -> None:
    """Refuses a key given twice in one JSON object of ``text`` (valid JSON): a parser keeps
    one (Python's the last), so the other, edited in, would be read as if it were not there."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        key = key_given_twice(items)
        if key is not None:
            raise _bad(path, f"the key {clip(json.dumps(key))} is given twice in one object; give it once")
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)


def read(path: str) -> ClusterFile:
    """Reads and checks a cluster file; anything wrong is ``InputError("cluster", ...)``."""
    try:
        text = read_input(path, "cluster", MAX_BYTES)
    except InputError as e:
        raise InputError("cluster", str(e.args[1]) if len(e.args) > 1 else str(e)) from None
    return parse(path, text)


def parse(path: str, text: bytes) -> ClusterFile:
    """Checks the cluster file ``text`` (read from ``path``, which messages name): JSON, a key
    once per object, the format's version and the model's NCCL version, every key of its type
    and range (:class:`ClusterFile`), then what the keys say of each other. Anything wrong is
    ``InputError("cluster", "FILE: cluster.KEY: ...")``."""
    try:
        data = loads_json(text, path, "cluster")
    except InputError as e:
        raise InputError("cluster", str(e.args[1]) if len(e.args) > 1 else str(e)) from None
    if not isinstance(data, dict) or "tensorwire_cluster" not in data:
        raise _bad(path, f'not a tensorwire cluster file (a JSON object with "tensorwire_cluster": {FORMAT})')
    _no_key_twice(path, text)
    version = data["tensorwire_cluster"]
    if type(version) is not int or version != FORMAT:  # JSON true is not version 1
        raise _bad_key(
            path,
            "tensorwire_cluster",
            f"{_quoted(version)} is not a format this tensorwire reads: it reads version {FORMAT} (write the file "
            "again with this tensorwire's `calibrate`)",
        )
    modelled = data.get("nccl_version_modelled")
    if isinstance(modelled, str) and modelled != _core.NCCL_VERSION:
        # Before the other keys: a file fitted to another model has other keys and numbers too.
        raise _bad_key(
            path,
            "nccl_version_modelled",
            f"{_quoted(modelled)}: the file was fitted to NCCL {clip(modelled)}'s model, and this tensorwire models "
            f"NCCL {_core.NCCL_VERSION}'s; calibrate the logs again with this tensorwire",
        )
    try:
        cluster = ClusterFile.model_validate(data)
    except pydantic.ValidationError as e:
        raise _bad_key(path, *_validation_error(e)) from None
    topology = cluster.topology
    try:
        check_text("topology", topology)  # JSON's "\ud800" is a lone surrogate the core cannot take
    except InputError as e:
        raise _bad_key(path, "topology", str(e.args[-1])) from None
    try:
        _core.check_topology(topology)
    except InputError as e:
        raise _bad_key(path, "topology", f"{clip(topology)!r}: {clip(str(e.args[-1]), 300)}") from None
    _check_transport(path, cluster.transport, topology)
    _check_calibration(path, cluster.calibration.model_dump(), topology)
    if cluster.bandwidth is None and _own_rate(topology) is None:
        # `simulate` refused such a file and `sweep` ran it at its default 25 Gbit/s.
        raise _bad_key(
            path,
            "bandwidth_bytes_per_s",
            f"null (the fabric's own rate), but {clip(topology)!r} has none of its own (only rail fabrics do); give "
            "the host link rate in bytes/s",
        )
    _check_gpus(path, cluster)
    _check_measured_with(path, cluster.measured_with)
    _check_families(path, cluster)
    return cluster


def _check_gpus(path: str, cluster: ClusterFile) -> None:
    """Refuses GPUs per node that are not the logs' (``sources``) or that the topology's node
    (a ``rail`` preset's, a ``nodes`` machine's) cannot hold, and logs of another GPU than the
    node's: calibrate writes the logs' GPUs per node, which are the node's across nodes and at
    most the node's on one, of logs of one GPU on a node of that GPU. The field applies to no
    run (the topology's node places the ranks); it records what was measured, and one that
    says otherwise was edited."""
    topology, gpus, sources = cluster.topology, cluster.gpus_per_node, cluster.sources
    node = node_gpus(topology)
    if node is not None and gpus > node:
        raise _bad_key(
            path,
            "gpus_per_node",
            f"{gpus} is more than the {node} GPUs of the node of {clip(topology)!r}; give the logs' GPUs per node, "
            "at most the node's",
        )
    for i, s in enumerate(sources):
        if node is not None and (s.gpus_per_node > node or (s.nodes > 1 and s.gpus_per_node != node)):
            raise _bad_key(
                path,
                f"sources.{i}.gpus_per_node",
                f"{s.gpus_per_node} on {s.nodes} node{'s' * (s.nodes > 1)}, where the node of {clip(topology)!r} has "
                f"{node}: calibrate fits logs of at most the node's GPUs on one node, and of the node's across nodes",
            )
        if s.gpu != sources[0].gpu:
            raise _bad_key(
                path,
                f"sources.{i}.gpu",
                f"{clip(s.gpu)!r} differs from sources.0.gpu {clip(sources[0].gpu)!r}: calibrate fits logs of one GPU",
            )
    logs = logs_gpus_per_node([(s.nodes, s.gpus_per_node) for s in sources])
    if gpus != logs:
        raise _bad_key(
            path,
            "gpus_per_node",
            f"{gpus} is not the GPUs per node of its sources, {logs} (a multi-node first log's, else the most of "
            "any log); calibrate writes theirs",
        )
    conflict = node_of_another_gpu(sources[0].gpu, topology)
    if conflict is not None:
        node_family, preset, family, matching = conflict
        raise _bad_key(
            path,
            "topology",
            f"{clip(topology)!r} has {node_family} nodes ({preset}), but its logs ran on {clip(sources[0].gpu)!r} "
            f"({family}; sources.0.gpu), and calibrate fits only a node of the logs' GPU "
            f"({' or '.join(f'rail:node={n}' for n in matching)}): the topology or the sources were edited",
        )


def _check_measured_with(path: str, measured: MeasuredWith) -> None:
    """Refuses a ``measured_with.strategy`` that is not the ``nccl`` strategy of its ``algo``
    and ``proto``, or that the ``nccl`` strategy does not take (an unknown algorithm)."""
    expected = measured_strategy(measured.algo, measured.proto)
    if measured.strategy != expected:
        raise _bad_key(
            path,
            "measured_with.strategy",
            f"{_quoted(measured.strategy)} is not the nccl strategy of its algo and proto, {_quoted(expected)}; "
            "calibrate writes it from them",
        )
    from tensorwire.strategy import Strategy  # the strategies' module: only for a file's check

    try:
        Strategy(expected)
    except InputError as e:
        raise _bad_key(path, "measured_with", f"{_quoted(expected)}: {clip(str(e.args[-1]), 300)}") from None


def _check_families(path: str, cluster: ClusterFile) -> None:
    """Refuses NVLS's (or NVLS tree's) own efficiency or fill other than 1 where NCCL's model
    runs NVLS (NVLS tree) on the topology for none of the file's single-node (multi-node)
    logs, within ``measured_with``'s restriction: calibrate fits a family's pair only on rows
    that ran it and leaves it at NCCL's 1 elsewhere (docs/calibration.md, "What it fits"), so
    such a pair was edited in, or the topology was (an A100 node, ``nvls=false``)."""
    block = cluster.calibration.model_dump()
    model = Model(
        cluster.topology,
        cluster.bandwidth,
        cluster.transport,
        True,
        cluster.measured_with.algo,
        cluster.measured_with.proto,
    )
    for regime, families in FAMILIES.items():
        family, efficiency, fill = families[1]
        if block[efficiency] == 1.0 and block[fill] == 1.0:
            continue
        multi = regime == "inter"
        runs = {(s.nodes * s.gpus_per_node, s.collective) for s in cluster.sources if (s.nodes > 1) == multi}
        if any(runs_algo(model, ranks, collective, _ANY_SIZE, family) for ranks, collective in sorted(runs)):
            continue
        key = efficiency if block[efficiency] != 1.0 else fill
        name, logs = ("NVLS tree", "multi-node") if multi else ("NVLS", "single-node")
        restricted = cluster.measured_with.strategy
        within = f" within {restricted}" if restricted != "nccl" else ""
        ran = f"for the file's {logs} logs{within}" if runs else f"(the file has no {logs} log)"
        raise _bad_key(
            path,
            f"calibration.{key}",
            f"{block[key]:.6g}, but NCCL's model runs no {name} on {clip(cluster.topology)!r} {ran}: calibrate fits "
            f"{efficiency} and {fill} only on rows that ran {name}, and leaves them at 1 elsewhere; the topology or "
            "the calibration was edited",
        )


def _check_transport(path: str, transport: str, topology: str) -> None:
    """Refuses a ``transport`` that the topology does not carry: the topology's
    ``transport=`` (default ``rdma``) is what strategies run with ``--cluster`` take."""
    carried = topology_options(topology).get("transport", "rdma")
    if transport != carried:
        raise _bad_key(
            path,
            "transport",
            f"{transport} differs from the topology's transport={clip(carried)}; the topology is what --cluster "
            "applies: make them agree",
        )


#: Relative tolerance between a ``calibration`` value and the topology's: calibrate writes the
#: same rounded numbers to both, efficiencies to 6 significant digits and durations in ns.
_TOLERANCE = 1e-6


def _check_calibration(path: str, block: dict[str, float], topology: str) -> None:
    """Refuses a ``calibration`` block that is not what ``topology`` carries (the topology is
    what ``--cluster`` applies; a block that says otherwise was edited by hand, or the
    topology was): each key against the topology's option of that name (``*_s`` keys: the
    ``*`` duration, in seconds), or its default where the topology has none
    (``nvls_efficiency``/``nvls_fill`` are written only where not 1)."""
    options = topology_options(topology)
    defaults = Calibration().as_dict()
    for key, default in defaults.items():
        value = block[key]
        option = key[:-2] if key.endswith("_s") else key
        text = options.get(option)
        try:
            carried = default if text is None else _core.parse_duration(option, text) if option != key else float(text)
        except (InputError, ValueError):
            continue  # the core took it, but not as we read it: nothing to compare
        if not math.isclose(value, carried, rel_tol=_TOLERANCE, abs_tol=1e-12):
            given = f"{option}={clip(text)}" if text is not None else f"no {option}=: the default"
            raise _bad_key(
                path,
                f"calibration.{key}",
                f"{value:.6g} differs from the topology's {carried:.6g} ({given}); the topology is what --cluster "
                "applies: make them agree",
            )


def _fill(ctx: click.Context, kwargs: dict[str, Any], path: str, names: dict[str, str], lists: bool) -> None:
    """Puts the file's topology, bandwidth and latency into the command's ``kwargs`` (under
    ``names``: the command's parameter names), refusing one given on the command line with
    another value. ``lists``: the command takes them as comma-separated text (``sweep``)."""
    c = read(path)
    ctx.meta[_META_FILE] = path
    values: dict[str, Any] = {
        "topology": c.topology,
        "bandwidth": c.bandwidth,
        "latency": c.latency,
    }
    if lists:
        values = {
            "topology": c.topology,
            "bandwidth": None if c.bandwidth is None else f"{c.bandwidth * 8}bps",
            "latency": f"{c.latency * 1e9:.0f}ns",
        }
    for key, param in names.items():
        value = values[key]
        if ctx.get_parameter_source(param) is ParameterSource.COMMANDLINE:
            given = kwargs[param]
            same = given == value or (lists and key != "topology" and _same_list(key, given, value))
            # No bandwidth in the file is the fabric's own NIC rate: that rate given is the same.
            own = _own_rate(c.topology) if key == "bandwidth" and value is None else None
            if own is not None and not same:
                same = given == own or (lists and _same_list(key, given, f"{own * 8}bps"))
            if not same:
                raise InputError(
                    "cluster",
                    f"--{key} {_shown(key, given)} differs from --cluster {path}, which gives "
                    f"{_shown(key, value)}; give one of them, or the file's value",
                )
            continue
        if value is None:
            if not lists:
                kwargs[param] = None
            continue
        kwargs[param] = value
    if lists and c.bandwidth is None:
        ctx.meta["tensorwire.cluster_own_rates"] = True
    elif lists:
        ctx.meta["tensorwire.cluster_own_rates"] = False


#: Where ``_fill`` leaves the path of the cluster file it read, for :func:`given_files`.
_META_FILE = "tensorwire.cluster_file"


def given_files(ctx: click.Context) -> list[str]:
    """The cluster file the command was given with ``--cluster`` (none or one), for outputs
    that must not be written over it."""
    path = ctx.meta.get(_META_FILE)
    return [path] if path is not None else []


def _own_rate(topology: str) -> Optional[float]:
    """The fabric's own host rate (a ``rail`` node's NICs), bytes/s; None where it has none."""
    try:
        return _core.host_rate(topology)
    except InputError:
        return None


def _shown(key: str, value: Any) -> str:
    """A value of ``--topology``/``--bandwidth``/``--latency`` as a user reads it: text as
    written, numbers in units (``100 Gbps``, ``10 us``), no bandwidth as the fabric's own.

    >>> _shown("bandwidth", 12.5e9), _shown("latency", 1e-05), _shown("bandwidth", None)
    ('100 Gbps', '10 us', "none (the fabric's own NIC rate)")
    """
    if value is None:
        return "none (the fabric's own NIC rate)"
    if isinstance(value, str):
        return clip(repr(value))
    return format_rate(value) if key == "bandwidth" else format_seconds(value)


def _same_list(key: str, given: Any, value: Any) -> bool:
    parse = _core.parse_rate if key == "bandwidth" else _core.parse_duration
    try:
        return value is not None and parse(key, str(given)) == parse(key, str(value))
    except InputError:
        return False


def cluster_option(
    topology: str = "topology", bandwidth: str = "bandwidth", latency: str = "latency", lists: bool = False
) -> Callable[[F], F]:
    """``--cluster FILE`` for a command whose cluster parameters have these names: the
    command runs with them taken from the file (see :func:`_fill`)."""
    names = {"topology": topology, "bandwidth": bandwidth, "latency": latency}

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            path = kwargs.pop("cluster_file", None)
            if path is not None:
                _fill(click.get_current_context(), kwargs, path, names, lists)
            return f(*args, **kwargs)

        option = click.option(
            "--cluster",
            "cluster_file",
            default=None,
            metavar="FILE",
            help="Cluster file written by `tensorwire calibrate` (docs/calibration.md): fills --topology, "
            "--bandwidth and --latency.",
        )
        return option(wrapper)  # type: ignore[return-value]

    return decorate
