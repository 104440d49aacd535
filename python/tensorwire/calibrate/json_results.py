"""nccl-tests' JSON output (``-J FILE.json``, nccl-tests v2.17.3 on), read into the same
:class:`~tensorwire.calibrate.logs.Run` as its standard output.

The format is what NVIDIA/nccl-tests writes (``src/util.cu`` at v2.19.6, commit a0b82b22:
``jsonOutputInit``, ``writeDeviceReport``, ``writeBenchmarkLine*``, ``writeResultFooter``;
``JSON_FILE_VERSION`` 1 to 3, which differ in keys read here only by v1's spelling
``average_bus_bandwidith`` / ``bandwidith`` before February 2026): one object on one line,

- ``args``: the command line, ``args[0]`` the binary (so the collective);
- ``env``: the environment as ``NAME=VALUE``, where ``NCCL_ALGO`` and ``NCCL_PROTO`` say what
  NCCL was restricted to (taken as a standard output's ``set by environment`` lines are);
- ``nccl_version``: ``NCCL_VERSION_CODE`` of the library;
- ``config``: ``nthreads``, ``ngpus`` and ``devices``, one entry per process (``hostname``,
  ``device_info``: the GPU's name) for its first GPU: nccl-tests' ``parseRankInfo`` reads the
  first rank line of each process's report, so the ranks are the processes x ``nthreads`` x
  ``ngpus``, each process's on its host;
- ``results``: one object per size (``size``, ``count``, ``type``, ``redop``, ``root``, and
  ``out_of_place`` / ``in_place`` with ``time`` (or ``cpu_time`` under ``-C 1``), ``alg_bw``,
  ``bus_bw`` and ``nwrong``; doubles as ``%lf``, ``"nan"`` for NaN);
- ``average_bus_bandwidth``: ``{"bandwidth": ...}``.

A JSON log has no NCCL logging (the per-size choice of ``NCCL_DEBUG_SUBSYS=TUNING``, the
network): give the standard output for those. Rows are checked as a standard output's are
(size = count x element size, algbw = size / time and busbw = algbw x the bus factor to the
digits written, no wrong results, each size once); messages name a row by its position in
``results`` from 1 (``result 3``), and a row's ``line`` is that position.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn, Optional

from tensorwire._core import InputError
from tensorwire.calibrate import logs
from tensorwire.calibrate.logs import Row, Run
from tensorwire.calibrate.nccl_log import NcclLog, Setting
from tensorwire.io import clip
from tensorwire.workload import bus_factor

#: Where a JSON log's environment is named in messages (a :class:`Setting`'s ``line``).
ENV = "env"


def is_json_object(text: str) -> bool:
    """Whether ``text`` is a JSON object: what nccl-tests writes with ``-J FILE`` (v2.17.3 on).

    >>> is_json_object('{"version": 3}'), is_json_object("# nThread 1 nGpus 8"), is_json_object("{oops")
    (True, False, False)
    """
    if not text.lstrip().startswith("{"):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def _refuse(path: str, message: str) -> NoReturn:
    raise InputError("log", f"{path}: {message}")


def _load(path: str, text: str) -> dict[str, Any]:
    """The object, numbers kept as written (strings) so that the checks see the digits
    nccl-tests printed; a key given twice (an edited file) refused."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                _refuse(path, f"key {clip(key)!r} appears twice in one object: not nccl-tests' JSON")
            out[key] = value
        return out

    def constant(name: str) -> NoReturn:
        _refuse(path, f'{name} is no number nccl-tests writes (it writes NaN as "nan")')

    data = json.loads(text, parse_float=str, parse_int=str, parse_constant=constant, object_pairs_hook=unique)
    assert isinstance(data, dict), "is_json_object said so"
    return data


def _field(path: str, obj: Any, key: str, kind: type, where: str) -> Any:
    """``obj[key]`` of JSON ``kind`` (str for numbers, read as written), refused naming it."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind):
        what = "a list" if kind is list else "an object" if kind is dict else "a number or text"
        _refuse(path, f"{where}{key} is missing or not {what}: not nccl-tests' JSON output (nccl-tests -J FILE.json)")
    return value


def _count(path: str, text: str, what: str, limit: int) -> int:
    """A whole number written as ``text`` (ASCII digits), at most ``limit``."""
    if not (text.isascii() and text.isdigit()):
        _refuse(path, f"{what} {clip(text)!r} is not a whole number")
    value = logs._whole(text, limit)
    if value > limit:
        _refuse(path, f"{what} {clip(text)} is past {limit:,}: not a run")
    return value


def _ranks(path: str, config: dict[str, Any]) -> tuple[int, dict[str, int], str]:
    """Ranks, ranks per host (in order) and the GPU, from ``config``: the processes listed in
    ``devices``, each driving ``nthreads x ngpus`` GPUs (:mod:`module doc <.json_results>`)."""
    per_process = 1
    for key in ("nthreads", "ngpus"):
        per_process *= _count(path, _field(path, config, key, str, "config."), f"config.{key}", logs.MAX_HEADER_NUMBER)
    devices = _field(path, config, "devices", list, "config.")
    if not devices or per_process < 1:
        _refuse(path, "config.devices lists no process, or nthreads x ngpus is 0: cannot tell ranks and nodes")
    hosts: dict[str, int] = {}
    gpus: set[str] = set()
    for i, device in enumerate(devices):
        host = _field(path, device, "hostname", str, f"config.devices[{i}].")
        gpus.add(_field(path, device, "device_info", str, f"config.devices[{i}]."))
        hosts[host] = hosts.get(host, 0) + per_process
    if len(set(hosts.values())) != 1:
        counts = clip(", ".join(f"{clip(h, 30)} {c}" for h, c in hosts.items()), 200)
        _refuse(path, f"hosts have different numbers of ranks ({counts}); calibration needs equal nodes")
    if len(gpus) != 1:
        _refuse(
            path,
            f"ranks on different GPUs ({', '.join(clip(g) for g in sorted(gpus)[:3])}); calibrate one kind at a time",
        )
    return len(devices) * per_process, hosts, gpus.pop()


def _measured(path: str, result: dict[str, Any], key: str, where: str) -> Optional[dict[str, Any]]:
    """``result[key]`` (``out_of_place``, ``in_place``): None where absent or null."""
    value = result.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        _refuse(path, f"{where}: {key} is not an object")
    return value


def _triple(
    path: str, size: int, m: dict[str, Any], where: str, factor: float, what: str
) -> tuple[float, float, float]:
    """(seconds, algbw, busbw in bytes/s) of one ``out_of_place`` / ``in_place`` object,
    checked as a standard output's row is (:func:`~tensorwire.calibrate.logs.disagreements`)."""
    cpu = "cpu_time" in m and "time" not in m
    texts = [_field(path, m, k, str, f"{where}: ") for k in ("cpu_time" if cpu else "time", "alg_bw", "bus_bw")]
    for name, text in zip(("time", "alg_bw", "bus_bw"), texts):
        value = logs.printed_number(text)
        if value is None or value < 0:
            _refuse(path, f"{where}: {name} {clip(text)!r} is not a number >= 0 as nccl-tests writes one")
    wrong = m.get("nwrong")
    if wrong is not None and (logs.printed_number(str(wrong)) or 0) > 0:
        _refuse(
            path,
            f"{where}: nwrong {clip(str(wrong))}: nccl-tests found wrong results; the run is not a valid measurement",
        )
    time, algbw, busbw = texts
    if not cpu and float(time) <= 0:
        _refuse(path, f"{where}: time {clip(time)}: a row needs a positive time")
    problems = logs.disagreements(size, None if cpu else time, algbw, busbw, factor, what)
    if problems:
        _refuse(path, f"{where}: {'; '.join(problems)} (to the digits written)")
    a = float(algbw)
    if cpu:
        if a <= 0:
            _refuse(path, f"{where}: alg_bw 0 with cpu_time (nccl-tests -C 1): no GPU time to read; run without -C 1")
        seconds = size / (a * 1e9)
    else:
        seconds = float(time) * 1e-6
    logs._check_time(path, where, "time", f"{seconds * 1e6:.4g}", seconds)
    return seconds, a * 1e9, float(busbw) * 1e9


def parse_json(path: str, text: str, digest: str, collective: Optional[str] = None) -> Run:
    """Reads nccl-tests' JSON output ``text`` (from ``path``; ``digest``: its bytes' SHA-256).
    ``collective`` is used where ``args[0]`` names no nccl-tests binary; a binary it names must
    agree with it. Bad input raises ``InputError("log", "FILE: what is wrong")``."""
    logs.check_collective(collective)
    data = _load(path, text)
    args = data.get("args")
    program = args[0] if isinstance(args, list) and args and isinstance(args[0], str) else None
    binary = logs._binary_of(program) if program is not None else None
    if binary in logs.NCCL_TESTS_BINARIES:
        chosen = logs._collective_of_binary(path, None, binary)
        if collective is not None and collective != chosen:
            raise InputError("collective", f"{path} is {binary} ({chosen}), not {collective}")
    elif collective is not None:
        chosen, binary = collective, None
    else:
        named = f"args[0] is {clip(program)!r}, no nccl-tests binary" if program else "no args[0] names the binary"
        _refuse(path, f"cannot tell the collective: {named}; give --collective {' | '.join(logs.COLLECTIVES)}")
    ranks, hosts, gpu = _ranks(path, _field(path, data, "config", dict, ""))
    factor, what = bus_factor(chosen, ranks), f"{chosen} on {ranks} ranks"
    results = _field(path, data, "results", list, "")
    if len(results) > logs.MAX_ROWS:
        _refuse(path, f"{len(results):,} results: a log may hold {logs.MAX_ROWS:,} rows at most (a sweep has about 30)")
    rows: list[Row] = []
    zero: list[int] = []
    printed: dict[tuple[int, str, str, Optional[str]], int] = {}
    for i, result in enumerate(results, start=1):
        where = f"result {i}"
        if not isinstance(result, dict):
            _refuse(path, f"{where} is not an object")
        size = _count(path, _field(path, result, "size", str, f"{where}: "), f"{where}: size", logs.MAX_SIZE)
        count = _count(path, _field(path, result, "count", str, f"{where}: "), f"{where}: count", logs.MAX_SIZE)
        if size == 0:
            zero.append(i)
            continue
        out = _measured(path, result, "out_of_place", where)
        if out is None:
            _refuse(path, f"{where} (size {size}) has no out_of_place figures: calibration fits those")
        seconds, algbw, busbw = _triple(path, size, out, f"{where} (size {size}) out_of_place", factor, what)
        inside = _measured(path, result, "in_place", where)
        in_place = (
            None if inside is None else _triple(path, size, inside, f"{where} (size {size}) in_place", factor, what)
        )
        root = result.get("root")
        row = Row(
            line=i,
            size=size,
            count=count,
            dtype=str(result.get("type") or ""),
            redop=str(result.get("redop") or ""),
            seconds=seconds,
            algbw=algbw,
            busbw=busbw,
            in_place_seconds=in_place[0] if in_place else None,
            in_place_busbw=in_place[2] if in_place else None,
            root=None if root is None else str(root).strip(),
        )
        logs.check_row(path, row, chosen, ranks, printed, "result")
        rows.append(row)
    if not rows:
        _refuse(path, "no result times anything (every size is 0, or results is empty)")
    nccl = NcclLog(path)
    for entry in _field(path, data, "env", list, "") if "env" in data else []:
        name, eq, value = str(entry).partition("=")
        if eq and name in ("NCCL_ALGO", "NCCL_PROTO") and value.strip():
            nccl.settings[name] = Setting(value.strip(), ENV)
    version = data.get("nccl_version")
    code = None
    if isinstance(version, str) and version.isascii() and version.isdigit():
        code = logs._whole(version, logs.MAX_HEADER_NUMBER)
    average = _average(data)
    return Run(
        path=path,
        collective=chosen,
        binary=binary,
        ranks=ranks,
        nodes=len(hosts),
        gpus_per_node=ranks // len(hosts),
        hosts=tuple(hosts),
        gpu=gpu,
        nccl_version=logs._nccl_version(code) if code else None,
        rows=tuple(rows),
        avg_busbw=average,
        skipped=tuple(zero),
        sha256=digest,
        nccl_algo=nccl.setting("NCCL_ALGO", chosen),
        nccl_proto=nccl.setting("NCCL_PROTO", chosen),
    )


def _average(data: dict[str, Any]) -> Optional[float]:
    """``average_bus_bandwidth.bandwidth`` (v1 before February 2026: ``average_bus_bandwidith``
    / ``bandwidith``), bytes/s, where written as a number."""
    for outer, inner in (("average_bus_bandwidth", "bandwidth"), ("average_bus_bandwidith", "bandwidith")):
        block = data.get(outer)
        value = (
            logs.printed_number(block.get(inner, ""))
            if isinstance(block, dict) and isinstance(block.get(inner), str)
            else None
        )
        if value is not None:
            return value * 1e9
    return None
