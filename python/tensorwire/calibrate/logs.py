"""nccl-tests' standard output, read.

The format is what NVIDIA/nccl-tests prints (``src/util.cu`` at v2.19.6, commit a0b82b22:
``writeDeviceReport``, ``writeResultHeader``, ``writeBenchmarkLine*``, ``writeResultFooter``;
older releases print the same table, with the columns their header names): a header of
``#`` lines (``# nThread 1 nGpus 8 minBytes ...``, ``# Collective test starting:
all_reduce_perf``), one ``#  Rank  0 Group  0 Pid 1234 on HOST device  0 [0000:18:00] NVIDIA
H100 80GB HBM3`` line per rank, the column header (``size count type redop root`` then ``time
algbw busbw #wrong`` out of place and again in place, ``(us)`` and ``(GB/s)``), one row per
size and ``# Avg bus bandwidth``. A row's fields are read by the column header
(:func:`_row_fields`): before v2.13, all_gather_perf and sendrecv_perf print no ``redop``
column, and up to v2.13.3 all-gather and all-to-all leave it blank.
Bandwidths are nccl-tests' (doc/PERFORMANCE.md): ``algbw = size / time`` in GB/s (1e9
bytes/s) and ``busbw = algbw x`` the collective's bus factor. NCCL's own logging
(``HOST:PID:TID [DEV] NCCL INFO ...``) is read for the NCCL_ALGO / NCCL_PROTO the run was
measured with and the algorithm NCCL ran for each size (:mod:`~tensorwire.calibrate.nccl_log`);
other lines that are neither (mpirun's warnings) are skipped; a line that starts
like a row and is not one is refused, naming the file and the line. The text may be UTF-8
(a byte-order mark dropped) or UTF-16 with its byte-order mark (Windows PowerShell 5.1's
``>``).

Rows of size 0 (nccl-tests prints them for ``-b 0``) time nothing: they are skipped and
counted (:attr:`Run.skipped`), and a log of nothing else is refused. A row whose columns
contradict each other is refused naming the file, the line and the columns (see
:func:`disagreements`): ``algbw`` must be ``size / time`` and ``busbw`` ``algbw x`` the
collective's bus factor for the run's ranks, each to the digits nccl-tests printed; so is a
row whose size is not its count x its type's element size (x the ranks where nccl-tests
prints the count per rank: :func:`_check_count`), and a size the table printed before in the
same type and reduction (it would count twice in the fit: :func:`_check_printed_once`). A row
whose ``#wrong`` (out of place or in place) is not 0 is refused naming the file, the line
and the count: nccl-tests found wrong results, the run is corrupt and its times are no
measurement; ``N/A`` (a run with ``-c 0``, unchecked) reads. A ``cputime`` column (``-C 1``)
holds the CPU's time, not the collective's: each row's time is then read from its algbw.
"""

from __future__ import annotations

import codecs
import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from tensorwire._core import HORIZON_S, InputError
from tensorwire.calibrate.nccl_log import Choice, NcclLog, Setting
from tensorwire.io import clip, read_input
from tensorwire.workload import bus_factor

#: The nccl-tests binaries calibration reads, and the collective each one measures.
BINARIES: dict[str, str] = {
    "all_reduce_perf": "allreduce",
    "all_gather_perf": "allgather",
    "reduce_scatter_perf": "reducescatter",
    "alltoall_perf": "alltoall",
}
#: The collectives ``--collective`` takes (tensorwire's names, as ``nccl_predict`` takes them).
COLLECTIVES: tuple[str, ...] = tuple(BINARIES.values())
#: Every binary nccl-tests builds (``BIN_FILES_LIST`` in src/Makefile). A log naming one that
#: calibration does not read is refused; a ``*_perf`` word that is none of them (a job called
#: ``nccl_perf``) names no nccl-tests binary and says nothing of the run.
NCCL_TESTS_BINARIES: frozenset[str] = frozenset(BINARIES) | {
    "broadcast_perf",
    "reduce_perf",
    "alltoallv_perf",
    "scatter_perf",
    "gather_perf",
    "sendrecv_perf",
    "hypercube_perf",
}
#: The reductions nccl-tests prints in the ``redop`` column (``test_opnames``, src/common.cu). A
#: collective without one prints ``none`` there (v2.13.4 on) or leaves it blank (v2.13.0-2.13.3,
#: and alltoall_perf before); all_gather_perf and sendrecv_perf before v2.13 print no ``redop``
#: column at all.
REDUCTIONS: frozenset[str] = frozenset({"sum", "prod", "max", "min", "avg", "mulsum"})
#: The collectives calibration reads that reduce (their tables print a name of :data:`REDUCTIONS`).
REDUCING: frozenset[str] = frozenset({"allreduce", "reducescatter"})
#: Element sizes of nccl-tests' ``type`` column (``test_typenames`` in src/common.cu).
TYPE_BYTES: dict[str, int] = {
    "int8": 1,
    "uint8": 1,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "half": 2,
    "float": 4,
    "double": 8,
    "bfloat16": 2,
    "f8e4m3": 1,
    "f8e5m2": 1,
}
#: A log larger than this is not nccl-tests' output of one run (a run of 8 B..16 GiB is ~5 KB).
MAX_LOG_BYTES = 16 << 20
#: The largest size a row may have: the core's bound on the bytes of a run (``limits::MAX_BYTES``,
#: 2^53, 8 PiB), past which ``nccl_predict`` refuses it.
MAX_SIZE = 1 << 53
#: The largest number a header may give (nThread, nGpus, a rank, ``nccl-library=``): nccl-tests
#: prints them from C ``int``s. Past it a log is refused, naming the line, before Python's
#: ``int()`` (which refuses 4,300 digits and is quadratic below that) sees the digits.
MAX_HEADER_NUMBER = (1 << 31) - 1
#: The table rows a log may hold, and the logs of one calibration together (rows of size 0
#: included): a nccl-tests sweep prints about 30 a run (8 B..16 GiB by factors of 2), and the
#: fit predicts every row a few times a round for up to :data:`~tensorwire.calibrate.fit.MAX_ITERATIONS`
#: rounds (about a millisecond a row in all, on one core: 10,000 rows take about 12 s), so
#: past this a log is no sweep and its fit would run for minutes.
MAX_ROWS = 10_000
#: The largest decimal exponent of a number in a log: ``%e`` of a double writes at most
#: ``e+308`` (and down to ``e-324``). Past it, ``0e400`` is 0 to within 10^400, which
#: :func:`half_unit` cannot compute and no printf writes.
MAX_EXPONENT = 308
MIN_EXPONENT = -324
#: The shortest time a row may give, seconds: the engine's resolution (1 ns). nccl-tests
#: prints times to 0.01 us.
MIN_TIME_S = 1e-9

# Numbers are ASCII digits ([0-9], not \d: Python's \d and int() take any script's digits,
# which no printf writes).
# ``Group N`` is printed from nccl-tests v2.13.4 on; older releases print ``#   Rank  0 Pid ...``.
_RANK = re.compile(
    r"^#\s+Rank\s+([0-9]+)\s+(?:Group\s+([0-9]+)\s+)?Pid\s+([0-9]+)\s+on\s+(\S+)\s+device\s+([0-9]+)\s+\[([^\]]*)\]\s*(.*?)\s*$"
)
_THREADS = re.compile(r"^#\s*nThread\s+([0-9]+)\s+nGpus\s+([0-9]+)\b")
#: A ``*_perf`` word: a binary's name (group 1), without the suffix ``make NAME_SUFFIX=_mpi``
#: adds to every binary nccl-tests builds (``all_reduce_perf_mpi``).
_PERF_WORD = re.compile(r"\b([a-z_]+?_perf)(?:_\w+)?\b")
_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_NCCL_VERSION = re.compile(r"NCCL version ([0-9]+\.[0-9]+\.[0-9]+)")
_LIBRARY_CODE = re.compile(r"nccl-library=([0-9]+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_ROW_START = re.compile(r"^\s*[0-9]+\s+[0-9]+\s")
#: The start of a row cut off by the end of the file (the log ends mid-line): a number.
_CUT_ROW = re.compile(r"^\s*[0-9]")
#: The prefix a launcher puts before each line of a process's output: Open MPI's ``mpirun
#: --tag-output`` (``[1,0]<stdout>:``, job and rank) and Slurm's ``srun -l`` (``0: ``, the
#: task number, right-aligned), and Intel MPI's or MPICH's ``mpirun -l`` (``[0] ``, the rank).
_LAUNCHER_PREFIX = re.compile(r"^(?:\[[0-9]+,[0-9]+\]<std(?:out|err)>: ?|\[[0-9]+\] |\s*[0-9]+: )")
#: A line of NCCL's own logging (NCCL_DEBUG=INFO or WARN, ``src/debug.cc``): ``HOST:PID:TID [DEV]
#: NCCL INFO ...`` or ``HOST:PID:TID [DEV] FILE:LINE NCCL WARN ...``, after a bracketed timestamp
#: where NCCL_DEBUG_TIMESTAMP_FORMAT asks. A host name may start with a digit (``192-222-52-110``),
#: so such a line can look like a row (:data:`_ROW_LIKE`); it never is one. (Matched at the
#: line's start, a host without ``:`` or spaces: linear in the line, which may be megabytes.)
_NCCL_LOG = re.compile(r"\s*(?:\[[^\]]*\] ?)?[^\s:]+:[0-9]+:[0-9]+ \[-?[0-9]+\] (?:[^\s:]+:[0-9]+ )?NCCL ")
#: nccl-tests' report of a failed run (``src/common.h``: ``HOST: Test NCCL failure FILE:LINE
#: '...'``, ``Test CUDA failure``, `` .. HOST pid PID: Test failure FILE:LINE``).
_FAILURE = re.compile(r"\bTest (?:NCCL |CUDA )?failure\b")
#: What stands in the ``redop`` column of a row that prints one: a name (:data:`REDUCTIONS`,
#: ``none``); anything else there (a number) is the next column's, the name left blank.
_OP_NAME = re.compile(r"[a-z]+")
#: A line that looks like a table row (a number first, then at least eight more fields)
#: without being one: refused, naming the line, rather than skipped. (``\d`` here takes any
#: script's digits on purpose: a row whose size is ``\u0665`` is refused, not skipped.)
_ROW_LIKE = re.compile(r"^\s*[-+]?\.?\d\S*(\s+\S+){8}")
#: A number as printf writes one (``%f``, ``%e``, ``%g``): ASCII digits, a decimal point, an
#: exponent. Python's float() takes more that no printf writes (``1_000``, ``\u0665\u0660``, ``nan``,
#: ``infinity``, spaces), which :func:`printed_number` refuses.
_DECIMAL = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([-+]?[0-9]+))?")


@dataclass(frozen=True)
class Row:
    """One size of a run: the out-of-place figures (what calibration fits), and the in-place
    ones when printed. Times in seconds, bandwidths in bytes/s."""

    line: int
    size: int
    count: int
    dtype: str
    redop: str
    seconds: float
    algbw: float
    busbw: float
    in_place_seconds: Optional[float]
    in_place_busbw: Optional[float]
    #: The ``root`` column as printed (``-1``: no root, as every collective calibration reads
    #: prints), or None where the table has no such column (before nccl-tests v2.13).
    root: Optional[str] = None


@dataclass(frozen=True)
class Run:
    """One nccl-tests run: its collective, ranks on nodes, GPU and rows."""

    path: str
    collective: str
    #: The nccl-tests binary the collective was read from (without its ``NAME_SUFFIX``); None
    #: where ``--collective`` or the table told it.
    binary: Optional[str]
    ranks: int
    nodes: int
    gpus_per_node: int
    hosts: tuple[str, ...]
    gpu: str
    nccl_version: Optional[str]
    rows: tuple[Row, ...]
    avg_busbw: Optional[float]
    #: Lines of the rows of size 0, skipped (they time nothing: nccl-tests' ``-b 0``).
    skipped: tuple[int, ...] = ()
    #: SHA-256 (hex) of the bytes read: the log as parsed, also when it came from a pipe.
    sha256: str = ""
    #: NCCL_ALGO / NCCL_PROTO as NCCL logged them (``NCCL_DEBUG=INFO``), the part for the run's
    #: collective in the ``nccl`` strategy's syntax; None where the log shows none.
    nccl_algo: Optional[Setting] = None
    nccl_proto: Optional[Setting] = None
    #: The algorithm and protocol NCCL logged it ran, by table size (``NCCL_DEBUG_SUBSYS=TUNING``;
    #: :mod:`~tensorwire.calibrate.nccl_log`); and what of that logging was not taken, and why.
    choices: dict[int, Choice] = field(default_factory=dict, hash=False)
    choice_notes: tuple[str, ...] = ()
    #: The network NCCL said it used (``Using network IB`` / ``Socket``, NCCL_DEBUG=INFO), or None.
    nccl_network: Optional[Setting] = None


def _error(path: str, line: Union[int, str, None], message: str) -> InputError:
    """``InputError("log", "FILE:LINE: message")``; ``line`` text (a JSON log's ``result 3``)
    follows the file after a space, None names the file alone."""
    where = path if line is None else f"{path}:{line}" if isinstance(line, int) else f"{path}: {line}"
    return InputError("log", f"{where}: {message}")


def _at(line: int, unit: str) -> Union[int, str]:
    """Where a row is, for :func:`_error`: its line in a standard output (``unit`` ``line``),
    else ``unit`` and its number (``result 3``: a JSON log's results, from 1)."""
    return line if unit == "line" else f"{unit} {line}"


def read_log(path: str) -> tuple[str, str]:
    """The log's text (:func:`_text`) and the SHA-256 of its bytes (read once: a pipe cannot be
    read twice); a directory, a missing file or an empty one refused."""
    if os.path.isdir(path):
        raise _error(path, None, "is a directory; give nccl-tests' standard output saved to a file")
    if not os.path.exists(path):
        raise _error(path, None, "no such file")
    data = read_input(path, "log", MAX_LOG_BYTES)
    text = _text(path, data)
    if not text.strip():
        raise _error(path, None, "is empty; give nccl-tests' standard output (all_reduce_perf ... > FILE)")
    return text, hashlib.sha256(data).hexdigest()


def _text(path: str, data: bytes) -> str:
    """The log's text: UTF-16 where it starts with UTF-16's byte-order mark (Windows PowerShell
    5.1's ``>`` writes it so), else UTF-8 (a leading byte-order mark, which some Windows tools
    write, dropped). A NUL character is no text: a binary file."""
    utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    encoding = "utf-16" if utf16 else "utf-8-sig"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        if b"\0" in data and not utf16:
            raise _error(path, None, "is a binary file, not nccl-tests' standard output (text)") from None
        line = data[: e.start].decode(encoding, "replace").count("\n") + 1
        raise _error(path, line, f"is not {'UTF-16' if utf16 else 'UTF-8'} text; nccl-tests prints ASCII") from None
    if "\0" in text:
        raise _error(path, None, "is a binary file, not nccl-tests' standard output (text)")
    return text


def _without_launcher_prefix(lines: list[str]) -> list[str]:
    """``lines`` without the prefix a launcher put before each (:data:`_LAUNCHER_PREFIX`), where
    the log's ``# nThread`` header carries one; else as they are. Then every line starting with
    one loses it: a table row never does (its first number is followed by spaces, not a
    colon), and line numbers stay the file's.

    >>> _without_launcher_prefix(["[1,0]<stdout>:# nThread 1 nGpus 8", "[1,0]<stdout>: 1048576  262144"])
    ['# nThread 1 nGpus 8', '1048576  262144']
    >>> _without_launcher_prefix(["  0: # nThread 1 nGpus 8", "  0: #  Rank  0 Group  0"])
    ['# nThread 1 nGpus 8', '#  Rank  0 Group  0']
    """
    tagged = any(_THREADS.match(_LAUNCHER_PREFIX.sub("", line, count=1)) and not _THREADS.match(line) for line in lines)
    return [_LAUNCHER_PREFIX.sub("", line, count=1) for line in lines] if tagged else lines


def _nccl_version(code: int) -> str:
    """NCCL's version from its code (``NCCL_VERSION_CODE``, nccl.h): major x 10000 + minor x
    100 + patch from 2.9 on, major x 1000 + minor x 100 + patch before (2.7.8 is 2708).

    >>> _nccl_version(21805), _nccl_version(2708), _nccl_version(22703)
    ('2.18.5', '2.7.8', '2.27.3')
    """
    if code < 10000:
        return f"{code // 1000}.{code // 100 % 10}.{code % 100}"
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


def printed_number(text: str) -> Optional[float]:
    """The value of ``text`` where it is a number as printf writes one (:data:`_DECIMAL`, an
    exponent within a double's, :data:`MIN_EXPONENT` to :data:`MAX_EXPONENT`), else None.

    >>> printed_number("41.99"), printed_number("1.2e+08"), printed_number("0e400"), printed_number("1_000")
    (41.99, 120000000.0, None, None)
    """
    m = _DECIMAL.fullmatch(text)
    if m is None:
        return None
    exponent = m.group(1)
    if exponent is not None:
        digits = exponent.lstrip("+-").lstrip("0")
        if len(digits) > 3 or not MIN_EXPONENT <= int(exponent) <= MAX_EXPONENT:
            return None
    return float(text)


def _number(path: str, line: int, column: str, text: str) -> float:
    """The number >= 0 of the cell ``text`` of ``column``; anything else is refused naming the
    line (one no printf writes, :func:`printed_number`, as not a number)."""
    value = printed_number(text)
    if value is None:
        raise _error(
            path,
            line,
            f"{column} {clip(text)!r} is not a number as nccl-tests prints one "
            "(digits 0-9, a decimal point, an exponent from e-324 to e+308)",
        )
    if value < 0 or value == math.inf:
        raise _error(path, line, f"{column} {clip(text)!r} is not a number >= 0 (and below 1.8e+308)")
    return value


def _whole(text: str, limit: int) -> int:
    """The whole number the ASCII digits ``text`` write, or ``limit + 1`` where it is past
    ``limit``. Only as many digits as ``limit`` has are converted: Python's int() refuses
    4,300 digits (and leading zeros count), and takes quadratic time below that."""
    digits = text.lstrip("0")
    if len(digits) > len(str(limit)):
        return limit + 1
    return min(int(digits or "0"), limit + 1)


def _header_number(path: str, line: int, what: str, text: str) -> int:
    """A whole number of the header (``text``: ASCII digits), at most
    :data:`MAX_HEADER_NUMBER`; past it refused naming the line."""
    value = _whole(text, MAX_HEADER_NUMBER)
    if value > MAX_HEADER_NUMBER:
        raise _error(
            path,
            line,
            f"{what} {clip(text)} is past {MAX_HEADER_NUMBER} (nccl-tests prints it from a C int): "
            "not nccl-tests' output",
        )
    return value


def _columns(header: str) -> list[str]:
    """The column names of the table header ``#  size count type redop root time algbw ...``."""
    return header.lstrip("#").split()


def _collective_of_table(rows: list[Row], ranks: int) -> tuple[Optional[str], str]:
    """The collective, from the table alone where it tells; else None and why it cannot. A
    reduction (``redop`` one of :data:`REDUCTIONS`) with no root (``-1``, or no ``root``
    column) is all-reduce where size = count x element size, and reduce-scatter where size =
    count x ranks x element size (nccl-tests prints the per-rank count for it). The table
    cannot tell: without a reduction (``none``, blank, or no ``redop`` column: all-gather and
    all-to-all print the same table, and so do sendrecv and broadcast before v2.13.4); with a
    root (reduce_perf, broadcast_perf); and all-reduce on 2 ranks, whose table sendrecv_perf's
    and reduce_perf's match (size = count x element size, busbw = algbw)."""
    rooted = next((r for r in rows if r.root is not None and r.root != "-1"), None)
    if rooted is not None:
        root = f"root {clip(rooted.root or '')} on line {rooted.line}"
        return None, f"{root}: reduce_perf's or broadcast_perf's table, which calibration does not read"
    first = rows[0]
    if first.redop not in REDUCTIONS:
        redop = f"redop {clip(first.redop)!r}" if first.redop else "no redop"
        return None, f"{redop}: all-gather and all-to-all print the same table"
    votes = set()
    for r in rows:
        elt = TYPE_BYTES.get(r.dtype)
        if elt is None or r.count == 0:
            continue
        if r.size == r.count * elt:
            votes.add("allreduce")
        elif r.size == r.count * elt * ranks:
            votes.add("reducescatter")
    if len(votes) != 1:
        return (
            None,
            f"redop {clip(first.redop)!r}, but its sizes and counts fit neither all-reduce nor reduce-scatter alone",
        )
    vote = votes.pop()
    if vote == "allreduce" and ranks == 2:
        return None, "on 2 ranks all_reduce_perf's table is sendrecv_perf's and reduce_perf's too"
    return vote, ""


@dataclass
class _Named:
    """What a log says of the binary that printed it. ``started``: the binary of nccl-tests' own
    ``# Collective test starting:`` line (v2.17 on) and the line; ``echoed``: each nccl-tests
    binary that a line which is no ``#`` line names alone (the command line echoed into the log),
    with the first such line; ``other``: the first ``*_perf`` word that is no nccl-tests binary
    (a job called ``nccl_perf``) and its line, which says nothing of the run. Names are without
    their ``NAME_SUFFIX`` (:data:`_PERF_WORD`)."""

    started: Optional[tuple[str, int]] = None
    echoed: dict[str, int] = field(default_factory=dict)
    other: Optional[tuple[str, int]] = None

    def see(self, line: int, text: str) -> None:
        """Takes the ``*_perf`` words of a line that is no ``#`` line and no table row. A line
        naming two binaries (``Building all_gather_perf alltoall_perf ... done``) says nothing."""
        words = [m.group(1) for m in _PERF_WORD.finditer(text)]
        known = set(words) & NCCL_TESTS_BINARIES
        if len(known) == 1:
            self.echoed.setdefault(known.pop(), line)
        other = next((w for w in words if w not in NCCL_TESTS_BINARIES), None)
        if self.other is None and other is not None:
            self.other = (other, line)

    def echoed_alone(self) -> Optional[tuple[str, int]]:
        """The binary the log's other lines name, where they all name the same one (the
        Makefile's ``Linking ... all_reduce_perf`` lines, one binary each, name several)."""
        return next(iter(self.echoed.items())) if len(self.echoed) == 1 else None


def _binary_of(program: str) -> str:
    r"""The nccl-tests binary the ``program`` nccl-tests names (``argv[0]``, a path) is: its last
    component (after ``/``, or ``\`` on Windows), without ``.exe`` (Windows builds, nccl-tests
    v2.19.1 on) and without a ``NAME_SUFFIX`` (:data:`_PERF_WORD`); a name of no ``*_perf``
    binary as it is.

    >>> _binary_of("all_reduce_perf_mpi"), _binary_of("./build/alltoall_perf"), _binary_of("a.out")
    ('all_reduce_perf', 'alltoall_perf', 'a.out')
    >>> _binary_of("all_reduce_perf.exe"), _binary_of("C:\\nccl-tests\\all_gather_perf.EXE")
    ('all_reduce_perf', 'all_gather_perf')
    """
    name = re.split(r"[\\/]", program)[-1]
    if name.lower().endswith(".exe"):
        name = name[: -len(".exe")]
    m = _PERF_WORD.fullmatch(name)
    return m.group(1) if m else name


def check_collective(collective: Optional[str]) -> None:
    """Refuses a ``--collective`` that is none of :data:`COLLECTIVES`."""
    if collective is not None and collective not in COLLECTIVES:
        raise InputError("collective", f"{clip(collective)!r} is not one of {', '.join(COLLECTIVES)}")


def parse_text(path: str, text: str, digest: str, collective: Optional[str] = None) -> Run:
    """Reads one nccl-tests standard output, ``text`` (read from ``path``; ``digest``: its
    bytes' SHA-256). ``collective`` (``allreduce``, ``allgather``, ``reducescatter``,
    ``alltoall``) is used where nccl-tests' ``# Collective test starting:`` line does not name
    the binary (a log whose line names another is refused): it outweighs a binary named in
    passing (the command line echoed), and the table must agree with it. Bad input raises
    ``InputError("log", "FILE:LINE: what is wrong")``. (:func:`tensorwire.calibrate.parse_log`
    reads a file in either of nccl-tests' formats.)"""
    check_collective(collective)
    # Without a launcher's prefix; a last line without its newline was cut off (nccl-tests
    # ends every line with one).
    lines, cut = _without_launcher_prefix(text.splitlines()), not text.endswith("\n")
    threads: Optional[tuple[int, int]] = None
    named = _Named()
    nccl_version: Optional[str] = None
    ranks: dict[int, tuple[str, str, int]] = {}
    columns: Optional[list[str]] = None
    rows: list[Row] = []
    zero: list[int] = []  # lines of the rows of size 0
    printed: dict[tuple[int, str, str, Optional[str]], int] = {}  # (size, type, redop, root) -> its line
    avg: Optional[float] = None
    failure: Optional[tuple[int, str]] = None  # nccl-tests' report of a failed run: its line and text
    nccl = NcclLog(path)
    for i, raw in enumerate(lines, start=1):
        text = raw.rstrip()
        m = _NCCL_VERSION.search(text)
        if m and nccl_version is None:
            nccl_version = m.group(1)
        if text.startswith("#"):
            if (m := _THREADS.match(text)) is not None:
                if threads is not None:
                    raise _error(path, i, "a second run starts here; give each run in a file of its own")
                threads = (_header_number(path, i, "nThread", m.group(1)), _header_number(path, i, "nGpus", m.group(2)))
            elif (m := _STARTING.match(text)) is not None:
                named.started = (_binary_of(m.group(1)), i)
            elif (m := _RANK.match(text)) is not None:
                rank = _header_number(path, i, "rank", m.group(1))
                if rank in ranks:
                    raise _error(path, i, f"rank {rank} is listed twice")
                ranks[rank] = (m.group(4), m.group(7), i)
            elif text.lstrip("# \t").startswith("size") and "busbw" in text:
                columns = _columns(text)
            elif (m := _AVG.match(text)) is not None:
                avg = _number(path, i, "Avg bus bandwidth", m.group(1)) * 1e9
            elif (m := _LIBRARY_CODE.search(text)) is not None and nccl_version is None:
                nccl_version = _nccl_version(_header_number(path, i, "nccl-library", m.group(1)))
            continue
        if _NCCL_LOG.match(text):
            nccl.see(i, text)  # NCCL's logging, whatever its host name looks like
            continue
        if failure is None and _FAILURE.search(text):
            failure = (i, text.strip())
            continue
        # A last line cut off by the end of the file is a row cut short, refused by _row (the
        # shortest ones, a number or two, were skipped as no row).
        cut_row = cut and i == len(lines) and columns is not None and _CUT_ROW.match(text)
        if not _ROW_START.match(text) and not cut_row:
            named.see(i, text)
            if _ROW_LIKE.match(text) and columns is not None:
                first = clip(text.split()[0])
                raise _error(path, i, f"a table row whose size or count is not a whole number of bytes ({first!r})")
            continue
        if columns is None:
            raise _error(
                path, i, "a table row before the column header (# size count type redop root time algbw busbw ...)"
            )
        if len(rows) + len(zero) == MAX_ROWS:
            raise _error(
                path,
                i,
                f"row {MAX_ROWS + 1:,} of the table: a log may hold {MAX_ROWS:,} rows at most "
                "(a nccl-tests sweep prints about 30)",
            )
        row = _row(path, i, text, columns)
        if row is None:
            zero.append(i)
        else:
            _check_printed_once(path, row, printed)
            rows.append(row)
    if threads is None:
        raise _error(path, None, "no '# nThread N nGpus N ...' header: not nccl-tests' standard output")
    _check_some_rows(path, rows, zero, failure)
    hosts, gpu = _hosts_and_gpu(path, ranks, threads)
    n = len(ranks)
    chosen, binary = _which(path, named, rows, n, collective)
    factor = bus_factor(chosen, n)
    if binary is None and collective is None:
        _check_not_sendrecv(path, rows[-1], lines[rows[-1].line - 1], columns or [], chosen, n)
    for row in rows:
        _check_count(path, row, chosen, n)
        _check_columns(path, row.line, lines[row.line - 1], columns or [], row.size, factor, f"{chosen} on {n} ranks")
    choices, notes = nccl.choices(chosen, n, {row.size for row in rows})
    return Run(
        path=path,
        collective=chosen,
        binary=binary,
        ranks=n,
        nodes=len(hosts),
        gpus_per_node=n // len(hosts),
        hosts=tuple(hosts),
        gpu=gpu,
        nccl_version=nccl_version,
        rows=tuple(rows),
        avg_busbw=avg,
        skipped=tuple(zero),
        sha256=digest,
        nccl_algo=nccl.setting("NCCL_ALGO", chosen),
        nccl_proto=nccl.setting("NCCL_PROTO", chosen),
        choices=choices,
        choice_notes=notes,
        nccl_network=nccl.network,
    )


def check_row(
    path: str, row: Row, collective: str, ranks: int, printed: dict[tuple[int, str, str, Optional[str]], int], unit: str
) -> None:
    """The checks of one row that do not read its printed text: its size is printed once
    (:func:`_check_printed_once`) and is its count x its type's size (:func:`_check_count`);
    ``unit`` names what ``row.line`` counts (``line``, or ``result`` in a JSON log)."""
    _check_printed_once(path, row, printed, unit)
    _check_count(path, row, collective, ranks, unit)


def _check_printed_once(
    path: str, row: Row, printed: dict[tuple[int, str, str, Optional[str]], int], unit: str = "line"
) -> None:
    """Refuses a row of a size the table printed before, of the same type, reduction and root
    (``printed``: each such row's line so far; the row's is added): one run prints each size
    once a type and reduction (``-d all`` and ``-o all`` print a table for each), so a second
    is a table pasted twice or edited, and its rows would count twice in the fit, as a log
    given twice would (:func:`check_distinct`)."""
    key = (row.size, row.dtype, row.redop, row.root)
    first = printed.setdefault(key, row.line)
    if first != row.line:
        of = ", ".join(clip(x, 20) for x in (row.dtype, row.redop) if x)
        raise _error(
            path,
            _at(row.line, unit),
            f"size {row.size} ({of}) again, as on {unit} {first}: a run prints each size once a type and reduction, "
            "so its rows would count twice in the fit; give each row once",
        )


def _check_count(path: str, row: Row, collective: str, ranks: int, unit: str = "line") -> None:
    """Refuses a row whose size is not its count x the element size of its type (x the ranks,
    for a collective whose count nccl-tests prints per rank: all-gather, reduce-scatter,
    all-to-all), as nccl-tests prints them (``setupArgs``, src/common.cu: both from one count).
    A row of a type nccl-tests does not name (:data:`TYPE_BYTES`) is not checked."""
    element = TYPE_BYTES.get(row.dtype)
    if element is None:
        return
    per_rank = collective != "allreduce"
    expected = row.count * element * (ranks if per_rank else 1)
    if row.size != expected:
        how = (
            f"count {row.count} x {ranks} ranks x {element} bytes"
            if per_rank
            else f"count {row.count} x {element} bytes"
        )
        raise _error(
            path,
            _at(row.line, unit),
            f"size and count disagree: size {row.size} is not {how} ({clip(row.dtype)}) = {expected}, as "
            f"{collective} prints them{' (the count per rank)' * per_rank}; an edited row",
        )


def _check_some_rows(path: str, rows: list[Row], zero: list[int], failure: Optional[tuple[int, str]]) -> None:
    """Refuses a log without a row that times something: rows of size 0 only (nccl-tests'
    ``-b 0``), a run that failed (``failure``: nccl-tests' report and its line) before its
    first row, or no table at all."""
    if rows:
        return
    if zero:
        raise _error(
            path,
            zero[0],
            f"every row has size 0 ({len(zero)} of them; nccl-tests' -b 0): no row times anything; "
            "run it from -b 8 or larger",
        )
    if failure is not None:
        raise _error(
            path,
            failure[0],
            f"the run failed before its first row ({clip(failure[1], 100)!r}): no row of results; "
            "give the log of a run that completed",
        )
    raise _error(path, None, "no table of results (size count type redop root time algbw busbw #wrong ...)")


def _hosts_and_gpu(
    path: str, ranks: dict[int, tuple[str, str, int]], threads: tuple[int, int]
) -> tuple[dict[str, int], str]:
    """The ranks of each host, in order, and the GPU of every rank, from the ``#  Rank`` lines
    (``ranks``: rank -> host, GPU, line); refused: none, ranks not 0..n-1, a count that is no
    multiple of nThread x nGpus, hosts with different numbers of ranks, different GPUs."""
    if not ranks:
        raise _error(
            path, None, "no '#  Rank N Group N Pid N on HOST device N [...] GPU' lines: cannot tell ranks and nodes"
        )
    n = len(ranks)
    missing = sorted(set(range(n)) - set(ranks))
    if missing:
        raise _error(path, ranks[max(ranks)][2], f"ranks are not 0..{n - 1}: rank {missing[0]} is missing")
    per_process = threads[0] * threads[1]
    if per_process < 1 or n % per_process:
        raise _error(
            path,
            ranks[n - 1][2],
            f"{n} ranks is not a multiple of nThread x nGpus = {per_process} (inconsistent ranks)",
        )
    hosts: dict[str, int] = {}
    for r in range(n):
        hosts[ranks[r][0]] = hosts.get(ranks[r][0], 0) + 1
    if len(set(hosts.values())) != 1:
        counts = clip(", ".join(f"{clip(h, 30)} {c}" for h, c in hosts.items()), 200)
        raise _error(
            path, ranks[n - 1][2], f"hosts have different numbers of ranks ({counts}); calibration needs equal nodes"
        )
    gpus = {ranks[r][1] for r in range(n)}
    if len(gpus) != 1:
        raise _error(
            path,
            ranks[n - 1][2],
            f"ranks on different GPUs ({', '.join(clip(g) for g in sorted(gpus)[:3])}{', ...' * (len(gpus) > 3)}); "
            "calibrate one kind at a time",
        )
    return hosts, gpus.pop()


def _which(path: str, named: _Named, rows: list[Row], ranks: int, given: Optional[str]) -> tuple[str, Optional[str]]:
    """The run's collective, and the binary it was read from (None: from ``given`` or the
    table). By weight of evidence: nccl-tests' ``# Collective test starting:`` line (``given``
    otherwise is refused); ``given`` (``--collective``), which the table must not contradict;
    a binary the log's other lines name (the command line echoed; it can be a word in a job
    script, so ``given`` outweighs it); the table (:func:`_collective_of_table`)."""
    if named.started is not None:
        binary, line = named.started
        collective = _collective_of_binary(path, line, binary)
        if given is not None and given != collective:
            raise InputError("collective", f"{path} is {binary} ({collective}), not {given}")
        return collective, binary
    from_table, why_not = _collective_of_table(rows, ranks)
    if given is not None:
        _check_given(path, given, from_table, rows[0])
        return given, None
    echoed = named.echoed_alone()
    if echoed is not None:
        return _collective_of_binary(path, echoed[1], echoed[0]), echoed[0]
    if from_table is not None:
        return from_table, None
    raise _undetermined(path, named, rows[0], why_not)


def _check_not_sendrecv(path: str, last: Row, text: str, columns: list[str], chosen: str, ranks: int) -> None:
    """Refuses a log whose collective only its table told (``chosen``) where its largest row
    (``last``, printed as ``text``) has busbw = algbw, as sendrecv_perf prints it, and ``chosen``
    does not (all-reduce on 3 or more ranks): sendrecv's table reads as all-reduce (a reduction,
    size = count x element size), and its columns would be refused as disagreeing with
    all-reduce's bus factor, which misnames the problem."""
    factor = bus_factor(chosen, ranks)
    j = _time_columns(columns)[0]
    fields = _row_fields(text, columns)
    if factor == 1 or fields[j + 1] != fields[j + 2]:
        return
    raise _error(
        path,
        last.line,
        f"busbw = algbw ({fields[j + 2]} GB/s), as sendrecv_perf prints it, where {chosen} on {ranks} ranks prints "
        f"algbw x {factor:.4g}: the table reads as {chosen} only by its redop and counts, and no line names the "
        f"binary; calibration reads {', '.join(BINARIES)} (give --collective for one of them)",
    )


def _check_given(path: str, given: str, from_table: Optional[str], first: Row) -> None:
    """Refuses a ``--collective`` (``given``) the table contradicts: another collective than the
    one the table tells (``from_table``), or a reduction where the table prints none (``first``
    row's ``redop``: all-gather, all-to-all) or none where it prints one."""
    if from_table is not None and given != from_table:
        raise InputError("collective", f"{path}: its table is {from_table}, not {given}")
    reduces = first.redop in REDUCTIONS
    if reduces != (given in REDUCING):
        printed = f"redop {clip(first.redop)!r}" if first.redop else "no redop"
        says = f"{printed}, a reduction" if reduces else f"no reduction ({printed})"
        raise InputError("collective", f"{path}: its table prints {says}, so it is not {given}")


def _collective_of_binary(path: str, line: Optional[int], binary: str) -> str:
    """The collective ``binary`` (named at ``line``) measures; one calibration does not read
    is refused."""
    if binary not in BINARIES:
        raise _error(path, line, f"{clip(binary)} is not a collective calibration reads; give {', '.join(BINARIES)}")
    return BINARIES[binary]


def _undetermined(path: str, named: _Named, first: Row, why_not: str) -> InputError:
    """The refusal of a log whose collective nothing tells, naming what the log does say: the
    binaries its lines name, a ``*_perf`` word that is no nccl-tests binary (at its line), or
    nothing; and why the table cannot tell (``why_not``, :func:`_collective_of_table`)."""
    table = f"the table cannot tell ({why_not}); give --collective {' | '.join(COLLECTIVES)}"
    if named.echoed:
        listed = ", ".join(f"{b} on line {line}" for b, line in sorted(named.echoed.items(), key=lambda e: e[1]))
        return _error(
            path, first.line, f"cannot tell the collective: lines name several binaries ({clip(listed)}), and {table}"
        )
    if named.other is not None:
        word, line = named.other
        return _error(path, line, f"cannot tell the collective: {clip(word)} is no nccl-tests binary, and {table}")
    return _error(path, first.line, f"cannot tell the collective: no line names one *_perf binary, and {table}")


def _gbs(x: float) -> str:
    """A bandwidth for a message, as nccl-tests prints it (2 decimals), or in exponent form
    where a malformed row makes it absurd (1e-300 us gave 300 digits)."""
    return f"{x:.2f}" if abs(x) < 1e9 else f"{x:.4g}"


def _row_fields(text: str, columns: list[str]) -> list[str]:
    """The fields of the row ``text``, each under its column of the header ``columns``: where
    the header has a ``redop`` column and the row leaves it blank (nccl-tests up to v2.13.3
    prints an empty name there for all-gather and all-to-all, so the row has one field
    fewer), an empty field stands in for the name (:data:`_OP_NAME`).

    >>> _row_fields("1048576  32768  float  -1  30.48", ["size", "count", "type", "redop", "root", "time"])
    ['1048576', '32768', 'float', '', '-1', '30.48']
    >>> _row_fields("1048576  32768  float  30.48", ["size", "count", "type", "time"])
    ['1048576', '32768', 'float', '30.48']
    """
    fields = text.split()
    if "redop" in columns:
        j = columns.index("redop")
        if j < len(fields) and not _OP_NAME.fullmatch(fields[j]):
            fields.insert(j, "")
    return fields


def _cell(fields: list[str], columns: list[str], name: str) -> Optional[str]:
    """The field under the column ``name``; None where the header has no such column."""
    if name not in columns:
        return None
    j = columns.index(name)
    return fields[j] if j < len(fields) else None


def _row(path: str, line: int, text: str, columns: list[str]) -> Optional[Row]:
    """The row of ``text``; None for a row of size 0 (skipped: it times nothing, and
    nccl-tests prints its bandwidths as 0 or nan)."""
    fields = _row_fields(text, columns)
    if len(fields) < len(columns) - 1 or len(fields) < 9:
        raise _error(path, line, f"{len(fields)} fields where the header has {len(columns)}: a row cut short or edited")
    size, count = (_whole(f, MAX_SIZE) for f in fields[:2])
    if size > MAX_SIZE or count > MAX_SIZE:
        what = "size" if size > MAX_SIZE else "count"
        raise _error(path, line, f"{what} {clip(fields[0 if what == 'size' else 1])} is past 2^53 (8 PiB): not a run")
    if size == 0:
        return None
    times = _time_columns(columns)
    if not times or times[0] + 2 >= len(fields):
        raise _error(path, line, "no time, algbw and busbw columns")
    gpu_time = columns[times[0]] == "cputime"

    def triple(j: int, where: str) -> tuple[float, float, float]:
        names = ("time", "algbw", "busbw")
        t, a, b = (_number(path, line, where + names[k], fields[j + k]) for k in range(3))
        if gpu_time:
            t = _time_from_algbw(path, line, where + "algbw", fields[j + 1], size, a)
            _check_time(path, line, where + "time from algbw", f"{t:.4g}", t * 1e-6)
        else:
            _check_time(path, line, where + "time", fields[j], t * 1e-6)
        return t * 1e-6, a * 1e9, b * 1e9

    seconds, algbw, busbw = triple(times[0], "")
    in_place = triple(times[1], "in-place ") if len(times) > 1 and times[1] + 2 < len(fields) else None
    if seconds <= 0:
        raise _error(path, line, f"time 0 at size {size}: a row needs a positive time")
    _check_wrong(path, line, fields, columns, size)
    return Row(
        line=line,
        size=size,
        count=count,
        dtype=_cell(fields, columns, "type") or "",
        redop=_cell(fields, columns, "redop") or "",
        seconds=seconds,
        algbw=algbw,
        busbw=busbw,
        in_place_seconds=in_place[0] if in_place else None,
        in_place_busbw=in_place[2] if in_place else None,
        root=_cell(fields, columns, "root"),
    )


def _time_from_algbw(path: str, line: int, column: str, text: str, size: int, algbw: float) -> float:
    """The time (us) of a row whose time column is ``cputime`` (nccl-tests ``-C 1``), from its
    ``algbw`` (``text``, ``algbw`` GB/s). nccl-tests prints the CPU's time there (the enqueue,
    without waiting for the GPU) but computes the bandwidths from the GPU's time, ``algbw = size
    / 1e9 / seconds`` (src/common.cu), so that time is ``size / algbw``, to the digits algbw is
    printed with. An algbw of 0 (a small size printed as 0.00) gives none and is refused."""
    if algbw <= 0:
        raise _error(
            path,
            line,
            f"{column} {clip(text)} at size {size}: with a cputime column (nccl-tests -C 1) the time is read "
            "from algbw, which nccl-tests computes from the GPU's time, and 0 gives none; run without -C 1, "
            "or drop the row",
        )
    return size / (algbw * 1e3)


def _check_time(path: str, line: Union[int, str, None], column: str, text: str, seconds: float) -> None:
    """Refuses a time (``text`` in us, ``seconds``) above 0 and below :data:`MIN_TIME_S`, or at
    or past the simulation horizon (``HORIZON_S``, 2^53 ns, 104 days): no collective takes
    either, the engine cannot represent them, and the fit (weights 1/t, squared) overflows on
    them (1e-200 us and 1e300 us raised OverflowError). A time of 0 is :func:`_row`'s to refuse."""
    if 0 < seconds < MIN_TIME_S:
        raise _error(
            path,
            line,
            f"{column} {clip(text)} us is below 1 ns, the simulation's resolution (nccl-tests prints 0.01 us "
            "at least): a time must be 0.001 us or more",
        )
    if seconds >= HORIZON_S:
        raise _error(
            path,
            line,
            f"{column} {clip(text)} us is at or past the simulation horizon of {HORIZON_S:.0f} s "
            "(2^53 ns, 104 days): a time must be below it",
        )


def _check_wrong(path: str, line: int, fields: list[str], columns: list[str], size: int) -> None:
    """Refuses a row whose ``#wrong`` columns count wrong results: nccl-tests checked the
    collective's output and found elements that differ from the expected ones, so the run is
    corrupt and its timing no measurement. ``N/A`` (a run with ``-c 0``, unchecked) reads."""
    found: list[str] = []
    for k, j in enumerate(j for j, c in enumerate(columns) if c == "#wrong"):
        if j >= len(fields) or fields[j] == "N/A":
            continue
        wrong = printed_number(fields[j])
        if wrong is None or not 0 <= wrong < math.inf:
            raise _error(path, line, f"#wrong {clip(fields[j])!r} is not a count or N/A")
        if wrong > 0:
            noun = "" if found else " wrong result" + "s" * (wrong != 1)
            found.append(f"{fields[j]}{noun} in the {'in-place' if k else 'out-of-place'} check")
    if found:
        raise _error(
            path,
            line,
            f"{' and '.join(found)} (#wrong) at size {size}: the run is not a valid measurement; "
            "fix it or drop the row",
        )


def _time_columns(columns: list[str]) -> list[int]:
    """Where the out-of-place and in-place (time, algbw, busbw) triples start."""
    return [j for j, c in enumerate(columns) if c in ("time", "cputime")]


def half_unit(text: str) -> float:
    """Half the last printed digit of a number as nccl-tests prints it: how far the printed
    ``text`` may be from the value it rounds. nccl-tests prints times and bandwidths with two
    decimals, fewer as the integer part grows, then as ``%.1e`` (``getFloatStr`` in
    ``src/util.cu``; ``%7.2f``/``%7.1f``/``%7.0f`` and ``%6.2f`` in older ``src/common.cu``),
    so the printed digits themselves say the rounding.

    ``text`` is a number as :func:`printed_number` takes one (its exponent at most
    :data:`MAX_EXPONENT`, so that the power of 10 is a double's; past it, inf).

    >>> half_unit("41.99"), half_unit("15805.6"), half_unit("31391"), half_unit("1.2e+08")
    (0.005, 0.05, 0.5, 5000000.0)
    """
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    power = (int(exponent) if exponent else 0) - decimals
    return 0.5 * 10.0**power if power <= MAX_EXPONENT else math.inf


#: Relative slack on top of the printed digits' rounding: the checks' own float arithmetic.
_SLACK = 1e-9


def disagreements(
    size: int, time: Optional[str], algbw: str, busbw: str, factor: float, what: str = "the collective"
) -> list[str]:
    """What contradicts nccl-tests' definitions (doc/PERFORMANCE.md) in one (time, algbw,
    busbw) triple as printed (us, GB/s, GB/s): ``algbw = size / time`` and ``busbw = algbw x
    factor`` (``factor``: the bus factor of ``what``), each allowed the rounding of the digits
    printed (:func:`half_unit`). ``time`` None skips the first (a ``cputime`` column: nccl-tests
    computes the bandwidths from the GPU time, not the CPU time it prints). Empty: consistent."""
    out = []
    a, da = float(algbw), half_unit(algbw)
    b, db = float(busbw), half_unit(busbw)
    if time is not None:
        t, dt = float(time), half_unit(time)
        # algbw = size / (t us) in GB/s = size / (t x 1e3); t is within dt of the time measured.
        low = size / ((t + dt) * 1e3)
        high = size / ((t - dt) * 1e3) if t > dt else math.inf
        if a + da < low * (1 - _SLACK) or a - da > high * (1 + _SLACK):
            out.append(f"algbw {algbw} is not size / time = {_gbs(size / (t * 1e3))} GB/s")
    if abs(b - a * factor) > (db + da * factor) * (1 + _SLACK) + _SLACK * abs(b):
        out.append(f"busbw {busbw} is not algbw x {factor:.4g} ({what}) = {_gbs(a * factor)} GB/s")
    return out


def _check_columns(path: str, line: int, text: str, columns: list[str], size: int, factor: float, what: str) -> None:
    """Refuses the row at ``line`` when a printed triple contradicts itself (:func:`disagreements`)."""
    fields = _row_fields(text, columns)
    problems = []
    for k, j in enumerate(_time_columns(columns)[:2]):
        if j + 2 >= len(fields):
            continue
        timed = fields[j] if columns[j] == "time" else None
        found = disagreements(size, timed, fields[j + 1], fields[j + 2], factor, what)
        problems += [f"{'in-place ' if k else ''}{p}" for p in found]
    if problems:
        raise _error(path, line, f"columns disagree at size {size}: {'; '.join(problems)} (to the digits printed)")


def check_distinct(runs: Sequence[Run]) -> None:
    """Refuses a log given twice, by the same path or with the same bytes (SHA-256): its rows
    would count twice in the fit, as if measured twice (it was fitted so)."""
    seen: dict[tuple[str, str], str] = {}  # ("path", path) and ("sha256", digest) -> the log
    for run in runs:
        first = seen.get(("path", run.path)) or seen.get(("sha256", run.sha256))
        if first is not None:
            what = "given twice" if first == run.path else f"the same bytes as {first}"
            raise InputError("log", f"{run.path}: {what}: its rows would count twice; give each run once")
        seen[("path", run.path)] = seen[("sha256", run.sha256)] = run.path
