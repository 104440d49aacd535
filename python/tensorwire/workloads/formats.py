"""Which kind of workload file a path holds, by content, and loading any of them.

``tensorwire``: a ``tensorwire-workload/1`` (or zoo) JSON file, or Chang et al. 2020's five-attribute
trace text; ``kineto``: a PyTorch profiler trace (JSON or gzip-compressed JSON);
``chakra``: a Chakra execution trace (binary protobuf stream).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any, Collection, Optional, Sequence, Union

from tensorwire import io
from tensorwire._core import InputError
from tensorwire.limits import as_items, wrong_type
from tensorwire.workload import Workload
from tensorwire.workloads.five_attribute import parse_trace

FORMATS = ("tensorwire", "kineto", "chakra")
PathLike = Union[str, Path]

#: What a workload's path may be, for the refusal of another object.
PATH_KIND = "a file's path (text or a pathlib.Path)"


def check_path(value: Any) -> PathLike:
    """``value`` if it is a workload file's path (text or a :class:`~pathlib.Path`, any
    ``os.PathLike``), else :func:`wrong_type` (field ``path``): ``Workload.from_file(None)``
    said "'NoneType' object is not iterable"."""
    if not isinstance(value, (str, os.PathLike)):
        raise wrong_type("path", PATH_KIND, value)
    return value if isinstance(value, (str, Path)) else Path(value)


def name_apart(name: str, taken: Collection[str], path: PathLike) -> str:
    """The name a workload file runs under beside built-in models: its own, or, where a model
    of that name runs in the same command (``tensorwire profile resnet50`` names its file
    ``resnet50``), its own followed by the file's, so that the two never share a table, a
    row key or a report card.

    >>> name_apart("resnet50", ["resnet50", "vgg16"], "runs/r50.json")
    'resnet50 (r50.json)'
    >>> name_apart("mine", ["resnet50"], "runs/mine.json")
    'mine'
    """
    return f"{name} ({Path(path).name})" if name in taken else name


def read_head(path: PathLike, size: int = 65536) -> bytes:
    """The first ``size`` bytes of a workload file, for telling its format.

    Opened without blocking (a named pipe without a writer would wait for ever in
    ``open``). A pipe (``<(command)``, a FIFO) is refused: it can be read once, and the
    reader would then find it empty, so its format must be named instead."""
    p = Path(path)
    pipe = InputError(
        "workload_format",
        f"{p} is a pipe, which can be read only once, so its format cannot be detected first; "
        "name it with --workload-format (tensorwire, kineto or chakra)",
    )
    return io.read_start(p, "workload", size, pipe_error=pipe)


#: Control characters that text does not have (tab, newline, vertical tab, form feed and
#: carriage return are text): a file with one near its start is binary, a Chakra trace.
_BINARY = re.compile(r"[\x00-\x08\x0e-\x1f]")


def head_text(path: PathLike) -> Optional[str]:
    """The first bytes of a workload file (:func:`read_head`) as text, in the encoding
    :func:`tensorwire.io.text_encoding` tells (UTF-8, UTF-16 or UTF-32; a byte-order mark
    dropped; a character cut at the end, or a byte of another encoding such as Latin-1,
    replaced: the reader says so), or None where they are binary (a gzip or Chakra file)."""
    head = read_head(path)
    text = head.decode(io.text_encoding(head), errors="replace").removeprefix("\ufeff")
    return None if _BINARY.search(text) else text


def detect_format(path: PathLike) -> str:
    """``tensorwire``, ``kineto`` or ``chakra``, from the first bytes of the file."""
    p = Path(path)
    if read_head(p, 2) == b"\x1f\x8b":
        # Only profiler traces are read compressed: the Kineto reader says what is wrong with
        # anything else (a gzipped text file was read as a five-attribute trace, "not UTF-8").
        return "kineto"
    text = head_text(p)
    if text is None:
        return "chakra"
    if not text.strip():
        raise InputError(
            "workload", f"{p}: the file is empty; give a workload file, a profiler trace or a Chakra trace"
        )
    start = text.lstrip()
    if start.startswith(("{", "[")):
        kineto = start.startswith("[") or '"traceEvents"' in text or '"schemaVersion"' in text
        return "kineto" if kineto else "tensorwire"
    return "tensorwire"


def load_workload(
    paths: Union[PathLike, Sequence[PathLike]],
    format: Optional[str] = None,
    *,
    step: Optional[int] = None,
    name: Optional[str] = None,
    batch_size: Optional[int] = None,
) -> Workload:
    """A workload from a file (or one file per rank, for traces) of ``format``
    (default: detected from the first file's content). ``batch_size``: a trace's samples per
    worker and step, where it does not say or says wrongly (a workload file states its own)."""
    given = (
        (paths,) if isinstance(paths, (str, os.PathLike)) else as_items("path", paths, f"{PATH_KIND} or a list of them")
    )
    files = [check_path(p) for p in given]
    if not files:
        raise InputError("workload", "give at least one file")
    fmt = format or "auto"
    if fmt == "auto":
        fmt = detect_format(files[0])
    if fmt not in FORMATS:
        raise InputError("workload_format", f"{format!r} is not a workload format; choose auto, {', '.join(FORMATS)}")
    if fmt == "kineto":
        from tensorwire.workloads.kineto import from_profiler_trace

        return from_profiler_trace(files, step=step, name=name, batch_size=batch_size)
    if step is not None:
        raise InputError("step", f"only PyTorch profiler traces have steps, not {fmt} files")
    if fmt == "chakra":
        from tensorwire.workloads.chakra import from_chakra

        return from_chakra(files, name=name, batch_size=batch_size)
    if batch_size is not None:
        raise InputError("batch", "a tensorwire workload file states its own batch_size; --batch is for traces")
    if len(files) > 1:
        raise InputError("workload", "a tensorwire workload file stands alone; give one file")
    w = read_text_workload(files[0])
    if name:
        w = dataclasses.replace(w, name=name)
    return w


def read_text_workload(path: PathLike) -> Workload:
    """Reads a JSON workload file (or a zoo file), or else a five-attribute trace."""
    p = Path(check_path(path))
    # io.WORKLOAD_FILE_LIMIT is read at call time (tests lower it)
    text = io.decode_text(io.read_input(p, "workload", io.WORKLOAD_FILE_LIMIT), p, "workload")
    if text.lstrip().startswith("{"):
        return Workload.from_dict(io.loads_json(text, p, "workload", unique_keys=True))
    _refuse_other_json(text, p)
    try:
        return parse_trace(text, name=p.stem)
    except InputError as e:
        # Named as the file and what it was read as: a file of anything else lands here.
        where, message = (e.args[0], e.args[-1]) if len(e.args) >= 2 else ("", str(e))
        raise InputError(
            "workload",
            f"{p}: not JSON, so read as a five-attribute trace (docs/formats.md), and {where}: {message}",
        ) from None


def _refuse_other_json(text: str, path: Path) -> None:
    """Refuses JSON that is not an object (``null``, ``42``, a list): valid JSON, but no
    workload file; it is not read as a five-attribute trace either."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return  # not JSON: a five-attribute trace, or what its reader refuses
    if isinstance(value, list):
        what = "an array"
    elif value is None or isinstance(value, bool):
        what = json.dumps(value)
    else:
        what = "a number" if isinstance(value, (int, float)) else "a string"
    raise InputError(
        "workload",
        f'{path}: the JSON is {what}; a workload file is a JSON object with "format": "tensorwire-workload/1" '
        "(docs/formats.md)",
    )
