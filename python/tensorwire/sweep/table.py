"""Rows of a sweep and the files they go to: CSV, JSON or Parquet, chosen by the suffix.

One row per configuration: the configuration's columns, then the result's. The columns are
defined once, here (name, type, meaning with unit); the writers, the readers (which restore
the types of a CSV file) and docs/sweep-and-report.md follow this list. Files are written
atomically: a temporary file beside the target, then a rename.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from tensorwire._core import InputError
from tensorwire.io import decode_text, loads_json, read_input, write_atomic
from tensorwire.result import over_capacity
from tensorwire.result import speedup as result_speedup
from tensorwire.strategy import baseline_spec
from tensorwire.sweep.grid import FILE_GPU, llm_options
from tensorwire.workloads.llm import names as llm_names

Row = dict[str, Any]

FORMATS = (".csv", ".json", ".parquet")


@dataclass(frozen=True)
class Column:
    """A column of the sweep table: ``kind`` is ``str``, ``int``, ``float`` or ``bool``."""

    name: str
    kind: str
    help: str
    nullable: bool = False


CONFIG_COLUMNS: tuple[Column, ...] = (
    Column(
        "model", "str", "built-in model (zoo or LLM: `tensorwire models`), or the name of a workload file's workload"
    ),
    Column("gpu", "str", "device whose compute times were used (an LLM's GPU profile); `file` for a workload file"),
    Column("batch", "int", "per-worker batch size: samples (an LLM's micro-batch: sequences)"),
    Column(
        "seq_len",
        "int",
        "an LLM's tokens per sequence (--seq-len; default its context length); empty for a zoo model or a "
        "workload file",
        nullable=True,
    ),
    Column(
        "mfu",
        "float",
        "an LLM's model-FLOP utilisation, the fraction of the GPU's peak its compute runs at (--mfu; default "
        "0.40); empty for a zoo model or a workload file",
        nullable=True,
    ),
    Column(
        "recompute",
        "bool",
        "whether an LLM recomputes each block's forward in its backward (--recompute); empty for a zoo model or "
        "a workload file",
        nullable=True,
    ),
    Column("compute_speedup", "float", "compute times divided by this (1 = as measured)"),
    Column("topology", "str", "topology spec (star, ring, leaf-spine[:...], nodes[:...], rail[:...])"),
    Column("network", "str", "network model: flow (max-min fair sharing) or analytical"),
    Column("latency_s", "float", "latency per hop, seconds (strategies timed by NCCL's model take NCCL's own)"),
    Column("workers", "int", "number of workers"),
    Column("bandwidth", "float", "host link rate per direction (a rail's NIC rate per GPU), bytes/s"),
    Column("bandwidth_gbps", "float", "the same rate in Gbps (10^9 bit/s)"),
    Column("strategy", "str", "strategy spec NAME[:key=value,...], as the core writes it"),
    Column("strategy_name", "str", "the strategy's name without options"),
    Column("iterations", "int", "iterations simulated (the first is warm-up when there are several)"),
    Column("seed", "int", "seed of the random streams"),
)

RESULT_COLUMNS: tuple[Column, ...] = (
    Column("iteration_time_s", "float", "steady-state time of one training iteration, seconds"),
    Column(
        "throughput_samples_per_s",
        "float",
        "samples per second of the whole job; empty for a workload without compute (a collective microbenchmark)",
        nullable=True,
    ),
    Column(
        "scaling_factor",
        "float",
        "throughput over n times the throughput of one worker computing the workload alone; empty for a "
        "workload without compute",
        nullable=True,
    ),
    Column(
        "compute_time_s",
        "float",
        "the compute an iteration waits for: forward plus backward on one worker (with stragglers the slowest "
        "worker's), seconds",
    ),
    Column(
        "compute_interference_s",
        "float",
        "compute time rank 0 lost per iteration to communication kernels beside it (strategies timed by NCCL's "
        "model; 0 otherwise), seconds",
    ),
    Column("comm_time_s", "float", "time per iteration rank 0 had any message in flight, seconds"),
    Column(
        "exposed_comm_s",
        "float",
        "iteration - compute - compute lost to communication kernels: communication that did not overlap with "
        "compute and waits for other workers, seconds",
    ),
    Column(
        "max_link_utilization",
        "float",
        "utilisation of the busiest directed link: the bytes it carried over the bytes it could have carried in "
        "the steady-state window (0..1 under the flow model); empty where no link was simulated (NCCL's timing)",
        nullable=True,
    ),
    Column(
        "speedup_over_ps",
        "float",
        "speedup_over_baseline where the baseline is plain `ps`; empty where it is another strategy "
        "(kept for the files of earlier versions)",
        nullable=True,
    ),
    Column(
        "baseline",
        "str",
        "the strategy spec of the scenario whose speedups are over it, as `compare` chooses it: plain ddp for "
        "LLMs and on GPU fabrics, else plain ps; the first strategy of the scenario where the grid lacks that one",
    ),
    Column(
        "speedup_over_baseline",
        "float",
        "iteration time of the baseline with the same other columns over this row's",
    ),
)

COLUMNS: tuple[Column, ...] = CONFIG_COLUMNS + RESULT_COLUMNS

#: The configuration columns that, with the strategy, identify a scenario.
SCENARIO_KEYS: tuple[str, ...] = tuple(c.name for c in CONFIG_COLUMNS if c.name not in ("strategy", "strategy_name"))


def overloaded(rows: list[Row]) -> list[str]:
    """The strategies (each once, in row order) of the rows whose busiest link carried more
    than its capacity (:func:`tensorwire.result.over_capacity`: the analytical model's), which
    ``sweep`` and the report name under :data:`tensorwire.result.OVERLOAD`.

    >>> overloaded([{"strategy": "ps", "max_link_utilization": 0.5},
    ...             {"strategy": "butterfly", "max_link_utilization": 4.0},
    ...             {"strategy": "nccl", "max_link_utilization": None}])
    ['butterfly']
    """
    return list(dict.fromkeys(str(r["strategy"]) for r in rows if over_capacity(r["max_link_utilization"])))


#: Columns that files of an earlier version lack, read as they ran (:func:`_as_it_ran`).
DEFAULTED = ("compute_interference_s", "seq_len", "mfu", "recompute")


def _as_it_ran(row: Row) -> Row:
    """The :data:`DEFAULTED` columns of a row of an earlier version's file: no compute
    interference apart (it was in ``exposed_comm_s``), and an LLM's defaults (its context
    length, MFU 0.40, no recomputation: the LLM options could not be swept)."""
    model = str(row.get("model")) if row.get("gpu") != FILE_GPU else ""
    return {"compute_interference_s": 0.0, **dict(zip(DEFAULTED[1:], llm_options(model, None, None, False)))}


#: The columns :func:`add_speedup` derives from the others: a file of an earlier version,
#: which lacks them, gets them when it is read.
DERIVED = ("baseline", "speedup_over_baseline")


def add_speedup(rows: list[Row]) -> list[Row]:
    """Sets ``baseline``, ``speedup_over_baseline`` and ``speedup_over_ps`` on every row: the
    baseline of each scenario is the strategy ``compare`` would rank against
    (:func:`tensorwire.strategy.baseline_spec`, over the scenario's strategies in row order);
    ``speedup_over_ps`` is the speedup where that is plain ``ps``, else None. Returns ``rows``.

    >>> rows = [{"model": "m", "strategy": "ps", "iteration_time_s": 2.0}, {"model": "m", "strategy": "ring", "iteration_time_s": 1.0}]
    >>> [(r["baseline"], r["speedup_over_baseline"], r["speedup_over_ps"]) for r in add_speedup(rows)]
    [('ps', 1.0, 1.0), ('ps', 2.0, 2.0)]
    >>> llm = [{"model": "llama3_8b", "strategy": s, "iteration_time_s": t} for s, t in (("fsdp", 1.0), ("ddp", 1.5))]
    >>> [(r["baseline"], r["speedup_over_baseline"], r["speedup_over_ps"]) for r in add_speedup(llm)]
    [('ddp', 1.5, None), ('ddp', 1.0, None)]
    """
    scenarios: dict[tuple[Any, ...], list[Row]] = {}
    for r in rows:
        scenarios.setdefault(_scenario(r), []).append(r)
    for mine in scenarios.values():
        base = _baseline_row(mine)
        for r in mine:
            speedup = result_speedup(base, r)
            r["baseline"] = base["strategy"]
            r["speedup_over_baseline"] = speedup
            r["speedup_over_ps"] = speedup if base["strategy"] == "ps" else None
    return rows


def with_derived(rows: list[Row]) -> list[Row]:
    """``rows`` as given where they have the :data:`DERIVED` columns, else copies with them
    added (:func:`add_speedup`): the rows of a file, or of code, of an earlier version. Rows
    whose times are damaged (not numbers, or 0) stay as given, for the checks that read them
    (:mod:`tensorwire.report.sweep_file`) to refuse by cell."""
    if not rows or all(name in rows[0] for name in DERIVED):
        return rows
    try:
        return add_speedup([dict(r) for r in rows])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return rows


def _baseline_row(scenario: list[Row]) -> Row:
    """The row of the baseline among the rows of one scenario (:func:`add_speedup`)."""
    first = scenario[0]
    llm = first.get("model") in llm_names() and first.get("gpu") != FILE_GPU
    specs = [str(r["strategy"]) for r in scenario]
    spec = baseline_spec(specs, llms=llm, topology=str(first.get("topology", "star")))
    return scenario[specs.index(spec)]


def _scenario(row: Row) -> tuple[Any, ...]:
    return tuple(row.get(k) for k in SCENARIO_KEYS)


def check_path(path: str | Path, field: str = "out") -> Path:
    """The path, if its suffix names a format this module writes (and the library for it is here)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(field, f"{str(p)!r}: choose a file ending in {', '.join(FORMATS)}")
    if suffix == ".parquet":
        _pyarrow(field)
    return p


def write_rows(path: str | Path, rows: list[Row]) -> Path:
    """Writes ``rows`` atomically as CSV, JSON (a list of objects) or Parquet, by suffix."""
    p = check_path(path)
    writer: Callable[[list[Row]], bytes] = {".csv": _csv, ".json": _json, ".parquet": _parquet}[p.suffix.lower()]
    write_atomic(p, writer(rows))
    return p


#: Largest sweep file read, bytes (a million rows of CSV is about 300 MB; ``/dev/zero`` is refused).
SWEEP_FILE_LIMIT = 1 << 30


def read_rows(path: str | Path, field: str = "sweep") -> list[Row]:
    """Reads a file written by :func:`write_rows` (types restored for CSV)."""
    p = check_path(path, field)
    data = read_input(p, field, SWEEP_FILE_LIMIT)
    suffix = p.suffix.lower()
    try:
        if suffix == ".csv":
            reader = csv.DictReader(io.StringIO(decode_text(data, p, field)))
            rows = []
            for raw in reader:
                try:
                    rows.append(_typed(raw))
                except ValueError as e:  # a cell that is not its column's type: name the line
                    raise _CellError(f"{p.name}:{reader.line_num}: {e}") from None
        elif suffix == ".json":
            loaded = loads_json(
                data, p, field, expected="a sweep file (a JSON list of rows)", invalid="; not a sweep file"
            )
            if not isinstance(loaded, list) or not all(isinstance(r, dict) for r in loaded):
                raise ValueError("expected a list of objects")
            rows = loaded
        else:
            import pyarrow.parquet as pq  # type: ignore[import-untyped,import-not-found,unused-ignore]

            # One thread: with pyarrow's pool (pyarrow 26) about one process in four that
            # read a buffer aborted at interpreter exit ("terminate called without an
            # active exception"); a sweep file is small.
            rows = pq.read_table(io.BytesIO(data), use_threads=False).to_pylist()
    except _CellError as e:
        raise InputError(field, str(e)) from None
    except InputError:
        raise
    except (ValueError, UnicodeDecodeError, OSError, csv.Error) as e:
        raise InputError(field, f"{p.name}: not a sweep file ({e})") from None
    missing = [c.name for c in COLUMNS if rows and c.name not in rows[0] and c.name not in (*DERIVED, *DEFAULTED)]
    if missing:
        raise InputError(field, f"{p.name}: missing columns {', '.join(missing)}; write it with `tensorwire sweep`")
    if rows and not set(DEFAULTED) <= rows[0].keys():
        rows = [{**_as_it_ran(r), **r} for r in rows]
    return with_derived(rows)


# -- formats ------------------------------------------------------------------------------
def _names(rows: list[Row]) -> list[str]:
    known = [c.name for c in COLUMNS]
    extra = [k for r in rows[:1] for k in r if k not in known]
    return known + extra


def _csv(rows: list[Row]) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=_names(rows), lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)  # None is written as an empty cell, floats with repr's round-trip digits
    return buf.getvalue().encode()


def _json(rows: list[Row]) -> bytes:
    clean = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()} for r in rows]
    return (json.dumps(clean, indent=1) + "\n").encode()


def _pyarrow(field: str) -> None:
    try:
        import pyarrow  # noqa: F401  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        raise InputError(
            field,
            "Parquet needs pyarrow: pip install pyarrow (in a checkout: pip install -e '.[report]'), or write .csv or .json",
        ) from None


def _parquet(rows: list[Row]) -> bytes:
    import pyarrow as pa  # type: ignore[import-untyped,import-not-found,unused-ignore]
    import pyarrow.parquet as pq  # type: ignore[import-untyped,import-not-found,unused-ignore]

    types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    fields = [pa.field(c.name, types[c.kind], nullable=c.nullable) for c in COLUMNS]
    schema = pa.schema(fields)
    table = pa.Table.from_pylist([{c.name: r.get(c.name) for c in COLUMNS} for r in rows], schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _bool(text: str) -> bool:
    """A CSV cell of a ``bool`` column (the writer's ``True``/``False``, or ``true``, ``1``, ...)."""
    cell = text.strip().lower()
    if cell not in ("true", "1", "false", "0"):
        raise ValueError(cell)
    return cell in ("true", "1")


_PARSE: dict[str, Callable[[str], Any]] = {"str": str, "int": int, "float": float, "bool": _bool}
_NOT = {"int": "an integer", "float": "a number", "bool": "true or false"}


class _CellError(Exception):
    """A CSV cell that is not its column's type (the message names line, column and cell)."""


def _typed(raw: dict[str, Optional[str]]) -> Row:
    """A CSV row with each cell of its column's type; ``ValueError`` naming the column and
    the cell where one is not."""
    kinds = {c.name: c.kind for c in COLUMNS}
    row: Row = {}
    for k, v in raw.items():
        kind = kinds.get(k, "str")
        if v is None or (v == "" and kind != "str"):
            row[k] = None
            continue
        try:
            row[k] = _PARSE[kind](v)
        except ValueError:
            raise ValueError(f"{k} {v[:40]!r} is not {_NOT[kind]}") from None
    return row
