"""A sweep file read for the report, and refused at its first damaged cell.

``tensorwire report --sweep FILE`` plots what ``tensorwire sweep`` wrote. A file that was
cut off, edited by hand or written by another tool can hold cells no sweep writes: empty,
not a number, NaN or infinite, a time below zero. The figure code trusts its rows, so such
a cell crashed deep inside it or drew a wrong page. :func:`read_sweep` checks every row
once, as the file is read, and refuses the first bad one as one :class:`InputError` naming
the file, the row (``FILE:LINE`` for CSV; ``FILE[INDEX]``, from 0, for JSON and Parquet),
the column and what the column allows.

What is checked, for every column of :data:`tensorwire.sweep.table.COLUMNS`:

- a CSV row has as many cells as the header (a cut-off last row has fewer);
- text columns hold non-empty, valid Unicode text;
- integer columns hold integers (not ``true``): workers, batch, seq_len and iterations
  from 1 to the core's 32-bit bound, the seed from 0 to its 64-bit bound;
- number columns hold finite numbers, greater than 0 for rates, MFU, iteration times,
  throughput and speedups, at least 0 for the rest (latency, the parts of an iteration,
  scaling factor, link utilisation);
- ``recompute`` holds true or false;
- only the nullable columns may be empty: ``speedup_over_ps`` (the baseline is not plain
  ``ps``), ``max_link_utilization`` (no link simulated), an LLM's ``seq_len``, ``mfu`` and
  ``recompute`` (a zoo model or a workload file), and ``throughput_samples_per_s`` and
  ``scaling_factor`` where ``compute_time_s`` is 0 (a workload without compute).

A file of an earlier version, without ``baseline`` and ``speedup_over_baseline``, gets them
as it is read (:func:`tensorwire.sweep.table.with_derived`).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from tensorwire._core import InputError
from tensorwire.limits import U32_MAX, U64_MAX, is_int
from tensorwire.result import SAMPLE_METRICS
from tensorwire.sweep.table import COLUMNS, Column, Row, read_rows

#: Number columns that must be greater than 0 (the others must be at least 0).
_POSITIVE = frozenset(
    {
        "compute_speedup",
        "mfu",
        "bandwidth",
        "bandwidth_gbps",
        "iteration_time_s",
        "throughput_samples_per_s",
        "speedup_over_ps",
        "speedup_over_baseline",
    }
)
#: The range of each integer column.
_INT_RANGE = {
    "batch": (1, U32_MAX),
    "seq_len": (1, U32_MAX),
    "workers": (1, U32_MAX),
    "iterations": (1, U32_MAX),
    "seed": (0, U64_MAX),
}


def read_sweep(path: str | Path, field: str = "sweep") -> list[Row]:
    """The rows of a sweep file (:func:`tensorwire.sweep.table.read_rows`), each checked as
    the module describes; raises :class:`InputError` on ``field`` naming the first bad cell."""
    p = Path(path)
    is_csv = p.suffix.lower() == ".csv"
    try:
        rows = read_rows(p, field)
        # Lines and cell counts of the CSV rows; not for a pipe, which cannot be read twice.
        records = _csv_records(p) if is_csv and p.is_file() else None
    except csv.Error as e:  # a cell past the csv module's size limit
        raise InputError(field, f"{path}: not a sweep file ({e})") from None
    for i, row in enumerate(rows):
        line, cells, header = records[i] if records else (0, 0, 0)
        where = f"{path}:{line}" if line else f"{path}: row {i + 1}" if is_csv else f"{path}[{i}]"
        if cells != header:
            raise InputError(
                field, f"{where}: {cells} cells where the header has {header}; the row is cut off or damaged"
            )
        problem = _problem(row, is_csv)
        if problem is not None:
            raise InputError(field, f"{where}: {problem}")
    return rows


def _csv_records(path: Path) -> list[tuple[int, int, int]]:
    """(line, cells, cells of the header) of each row, as ``read_rows`` reads them (empty lines skipped)."""
    reader = csv.reader(io.StringIO(path.read_bytes().decode()))
    header = len(next(reader, []))
    return [(reader.line_num, len(cells), header) for cells in reader if cells]


def _problem(row: Row, is_csv: bool) -> Optional[str]:
    """What is wrong with the first bad cell of ``row`` (``workers 'x' is not allowed; need ...``), or None."""
    for column in COLUMNS:
        name = column.name
        allowed = _allowed(_as_in(column, row), row.get(name))
        if allowed is not None:
            what = f"{name} is missing" if name not in row else f"{name} {_shown(row[name], is_csv)} is not allowed"
            return f"{what}; need {allowed}"
    return None


def _as_in(column: Column, row: Row) -> Column:
    """``column`` as ``row`` may hold it: the sample metrics empty only where its workload
    has no compute (:data:`tensorwire.result.SAMPLE_METRICS`)."""
    if column.name in SAMPLE_METRICS and row.get("compute_time_s") != 0:
        return replace(column, nullable=False)
    return column


def _allowed(column: Column, value: Any) -> Optional[str]:
    """None if ``value`` is one a sweep writes in ``column``, else what the column allows."""
    if value is None and column.nullable:
        return None
    if column.kind == "int":
        low, high = _INT_RANGE.get(column.name, (0, U64_MAX))
        return None if is_int(value) and low <= value <= high else f"an integer from {low} to {high}"
    if column.kind == "float":
        positive = column.name in _POSITIVE
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and _finite(value)
        if number and (value > 0 if positive else value >= 0):
            return None
        return f"a finite number {'> 0' if positive else '>= 0'}" + (" or an empty cell" if column.nullable else "")
    if column.kind == "bool":
        return None if isinstance(value, bool) else "true or false" + (" or an empty cell" if column.nullable else "")
    if column.kind == "str":
        return None if isinstance(value, str) and value and _unicode(value) else "text (not empty, valid Unicode)"
    return None


def _shown(value: Any, is_csv: bool) -> str:
    """``value`` as a message shows it: an empty CSV cell as ``''``, JSON's null as ``null``,
    anything else as its ``repr`` cut to 40 characters."""
    if value is None:
        return "''" if is_csv else "null"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        return False


def _unicode(text: str) -> bool:
    """Whether ``text`` can be written to the page (JSON can hold lone surrogates such as ``"\\ud800"``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
