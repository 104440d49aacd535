"""Cluster files: what ``tensorwire calibrate`` measured, for ``--cluster FILE``.

A cluster file is JSON (the standard library reads and writes it on every Python tensorwire
supports, where TOML's ``tomllib`` needs 3.11 and writing TOML a dependency):

.. code-block:: json

    {"tensorwire_cluster": 1,
     "topology": "rail:node=dgx-h100,intra_efficiency=0.93,inter_efficiency=0.9,intra_latency=12000ns,inter_latency=30000ns",
     "bandwidth_bytes_per_s": null, "latency_s": 5e-06, "transport": "rdma",
     "gpus_per_node": 8, "calibration": {...}, "nccl_version_modelled": "2.30.7",
     "nccl_version_measured": "2.18.5", "sources": [{"path": ..., "collective": ..., ...}],
     "created": "2026-01-01T00:00:00Z"}

``--cluster FILE`` on ``simulate``, ``compare``, ``sweep`` and ``jobs`` fills ``--topology``,
``--bandwidth`` and ``--latency`` from it; the same option given on the command line with
another value is refused. ``transport`` repeats the topology's ``transport=`` (NCCL's network
transport, which strategies without a ``transport=`` of their own take); the two must agree.
A file edited by hand is read as strictly as calibrate writes it: a key given twice, a key
the format does not have (top level or in ``calibration``) and more ``gpus_per_node`` than
the topology's node has are refused.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

import click
from click.core import ParameterSource

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.io import clip, key_given_twice, loads_json, read_input, write_atomic
from tensorwire.limits import check_text
from tensorwire.units import format_rate, format_seconds

F = TypeVar("F", bound=Callable[..., Any])

#: The format's version (the ``tensorwire_cluster`` key).
FORMAT = 1
#: A cluster file is a few hundred bytes; anything past this is not one.
MAX_BYTES = 1 << 20
#: The keys of the cluster options (:class:`ClusterFile`'s fields), and those calibrate records
#: beside them (its ``extra``: ``cli._cluster``). A file with another key was edited by hand
#: (a misspelt ``latency``) and is refused rather than read without it.
OPTION_KEYS: tuple[str, ...] = (
    "tensorwire_cluster",
    "topology",
    "bandwidth_bytes_per_s",
    "latency_s",
    "transport",
    "gpus_per_node",
)
RECORD_KEYS: tuple[str, ...] = (
    "calibration",
    "nccl_version_modelled",
    "nccl_version_measured",
    "sources",
    "max_abs_error",
    "measured_with",
    "created",
)


@dataclass(frozen=True)
class ClusterFile:
    """The cluster options a cluster file fills, and what it records beside them."""

    topology: str
    bandwidth: Optional[float]
    latency: float
    transport: str
    gpus_per_node: int
    extra: dict[str, Any]

    def to_json(self) -> str:
        data: dict[str, Any] = {
            "tensorwire_cluster": FORMAT,
            "topology": self.topology,
            "bandwidth_bytes_per_s": self.bandwidth,
            "latency_s": self.latency,
            "transport": self.transport,
            "gpus_per_node": self.gpus_per_node,
        }
        data.update(self.extra)
        return json.dumps(data, indent=1) + "\n"


def write(path: str, cluster: ClusterFile) -> None:
    """Writes ``cluster`` to ``path`` atomically (a temporary file, then a rename), once
    :func:`parse` (what ``--cluster`` reads) takes it: a file its consumers would refuse is
    refused here, ``InputError("out", ...)``, and nothing is written."""
    text = cluster.to_json()
    try:
        parse(path, text.encode())
    except InputError as e:
        why = str(e.args[-1]).removeprefix(f"{path}: ")
        raise InputError("out", f"{path} not written: --cluster would refuse it ({why})") from None
    write_atomic(path, text, "out")


def _bad(path: str, message: str) -> InputError:
    return InputError("cluster", f"{path}: {message}")


def _is_number(value: Any) -> bool:
    """A finite JSON number (not a boolean; an integer of 400 digits is not finite as a float)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) <= sys.float_info.max


def _no_key_twice(path: str, text: bytes) -> None:
    """Refuses a key given twice in one JSON object of ``text`` (valid JSON): a parser keeps
    one (Python's the last), so the other, edited in, would be read as if it were not there."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        key = key_given_twice(items)
        if key is not None:
            raise _bad(path, f"the key {clip(json.dumps(key))} is given twice in one object; give it once")
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)


def _check_keys(path: str, data: dict[str, Any]) -> None:
    """Refuses a key the format does not have (:data:`OPTION_KEYS`, :data:`RECORD_KEYS`),
    naming it and those it has."""
    unknown = next((key for key in data if key not in OPTION_KEYS + RECORD_KEYS), None)
    if unknown is not None:
        raise _bad(
            path,
            f"{clip(json.dumps(unknown))} is not a key of a cluster file; its keys are "
            f"{', '.join(OPTION_KEYS + RECORD_KEYS)}",
        )


def read(path: str) -> ClusterFile:
    """Reads and checks a cluster file; anything wrong is ``InputError("cluster", ...)``."""
    try:
        text = read_input(path, "cluster", MAX_BYTES)
    except InputError as e:
        raise InputError("cluster", str(e.args[1]) if len(e.args) > 1 else str(e)) from None
    return parse(path, text)


def parse(path: str, text: bytes) -> ClusterFile:
    """Checks the cluster file ``text`` (read from ``path``, which messages name); anything
    wrong is ``InputError("cluster", ...)``."""
    try:
        data = loads_json(text, path, "cluster")
    except InputError as e:
        raise InputError("cluster", str(e.args[1]) if len(e.args) > 1 else str(e)) from None
    if not isinstance(data, dict) or "tensorwire_cluster" not in data:
        raise _bad(path, f'not a tensorwire cluster file (a JSON object with "tensorwire_cluster": {FORMAT})')
    _no_key_twice(path, text)
    version = data["tensorwire_cluster"]
    if type(version) is not int or version != FORMAT:  # JSON true is not version 1
        raise _bad(
            path,
            f'"tensorwire_cluster" {clip(json.dumps(version))} is not a format this tensorwire reads: it reads '
            f"version {FORMAT} (write the file again with this tensorwire's `calibrate`)",
        )
    _check_keys(path, data)
    topology = data.get("topology")
    if not isinstance(topology, str):
        raise _bad(path, '"topology" must be a topology spec (text)')
    try:
        check_text("topology", topology)  # JSON's "\ud800" is a lone surrogate the core cannot take
    except InputError as e:
        raise _bad(path, f'"topology" {e.args[-1]}') from None
    try:
        _core.check_topology(topology)
    except InputError as e:
        raise _bad(path, f"topology {clip(topology)!r}: {clip(str(e.args[-1]), 300)}") from None
    bandwidth = data.get("bandwidth_bytes_per_s")
    # In bits/s it must stay a number too (1e308 bytes/s printed "inf Tbps", and `sweep`,
    # which passes rates as text, read "infbps").
    if bandwidth is not None and not (_is_number(bandwidth) and bandwidth > 0 and math.isfinite(bandwidth * 8)):
        raise _bad(
            path, '"bandwidth_bytes_per_s" must be a number > 0 (bytes/s, below 2.2e307) or null (the fabric\'s own)'
        )
    latency = data.get("latency_s")
    if not (isinstance(latency, (int, float)) and _is_number(latency) and 0 <= latency < _core.HORIZON_S):
        raise _bad(
            path, f'"latency_s" must be a number >= 0 and below {_core.HORIZON_S:.0f} (seconds; the simulation horizon)'
        )
    transport = data.get("transport", "rdma")
    if transport not in ("rdma", "tcp"):
        raise _bad(path, '"transport" must be rdma or tcp')
    _check_transport(path, transport, topology)
    gpus = data.get("gpus_per_node", 1)
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise _bad(path, '"gpus_per_node" must be an integer >= 1')
    _check_gpus(path, gpus, topology)
    if "calibration" in data:
        _check_calibration(path, data["calibration"], topology)
    if bandwidth is None and _own_rate(topology) is None:
        # `simulate` refused such a file and `sweep` ran it at its default 25 Gbit/s.
        raise _bad(
            path,
            f'"bandwidth_bytes_per_s" is null (the fabric\'s own rate) but {clip(topology)!r} has none of its own '
            "(only rail fabrics do); give the host link rate in bytes/s",
        )
    extra = {k: v for k, v in data.items() if k not in OPTION_KEYS}
    return ClusterFile(
        topology, None if bandwidth is None else float(bandwidth), float(latency), transport, gpus, extra
    )


def _check_gpus(path: str, gpus: int, topology: str) -> None:
    """Refuses more ``gpus_per_node`` than the topology's node has (a ``rail`` preset's, a
    ``nodes`` machine's): calibrate writes the logs' GPUs per node, which are the node's across
    nodes and at most the node's on one."""
    from tensorwire.calibrate.fit import node_gpus  # as _check_calibration

    node = node_gpus(topology)
    if node is not None and gpus > node:
        raise _bad(
            path,
            f'"gpus_per_node" {gpus} is more than the {node} GPUs of the node of {clip(topology)!r}; '
            "give the logs' GPUs per node, at most the node's",
        )


def _check_transport(path: str, transport: str, topology: str) -> None:
    """Refuses a ``transport`` that the topology does not carry: the topology's
    ``transport=`` (default ``rdma``) is what strategies run with ``--cluster`` take."""
    from tensorwire.calibrate.fit import topology_options  # as _check_calibration

    carried = topology_options(topology).get("transport", "rdma")
    if transport != carried:
        raise _bad(
            path,
            f'"transport" {transport} differs from the topology\'s transport={clip(carried)}; the topology is what '
            "--cluster applies: make them agree",
        )


#: Relative tolerance between a ``calibration`` value and the topology's: calibrate writes the
#: same rounded numbers to both, efficiencies to 6 significant digits and durations in ns.
_TOLERANCE = 1e-6


def _check_calibration(path: str, block: Any, topology: str) -> None:
    """Refuses a ``calibration`` block that is not what ``topology`` carries (the topology is
    what ``--cluster`` applies; a block that says otherwise was edited by hand, or the
    topology was): each key of :meth:`Calibration.as_dict` against the topology's option of
    that name (``*_s`` keys: the ``*`` duration, in seconds), or its default where the
    topology has none (``nvls_efficiency``/``nvls_fill`` are written only where not 1)."""
    from tensorwire.calibrate.fit import Calibration, topology_options  # only for a file that has one

    if not isinstance(block, dict):
        raise _bad(path, '"calibration" must be a JSON object of the fitted numbers')
    options = topology_options(topology)
    keys = Calibration().as_dict()
    unknown = next((key for key in block if key not in keys), None)
    if unknown is not None:
        raise _bad(path, f'"calibration" has {clip(json.dumps(unknown))}, which is none of its keys: {", ".join(keys)}')
    defaults = {k: v for k, v in keys.items() if k in block}
    for key in defaults:
        value = block[key]
        if not _is_number(value):
            raise _bad(path, f'"calibration" {key} must be a number, not {clip(json.dumps(value))}')
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
            raise _bad(
                path,
                f'"calibration" {key} {clip(json.dumps(value))} differs from the topology\'s {carried:.6g} '
                f"({given}); the topology is what --cluster applies: make them agree",
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
