"""nccl-tests logs: the fixtures parsed (ranks, nodes, rows, collective), and malformed logs
refused in one line naming the file and line, exit 2, through the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorwire._core import InputError
from tensorwire.calibrate.logs import disagreements
from tensorwire.calibrate.reading import parse_log
from tensorwire.workload import bus_factor

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nccl-tests"
AZURE = FIXTURES / "azure-nd-h100-v5-allreduce.log"
GCP = FIXTURES / "gcp-a3-mega-2x8-allreduce.log"


def test_single_node_fixture() -> None:
    run = parse_log(str(AZURE))
    assert (run.ranks, run.nodes, run.gpus_per_node) == (8, 1, 8)
    assert run.hosts == ("node0",)
    assert run.gpu == "NVIDIA H100 80GB HBM3"
    assert run.binary is None  # no binary name in this log: the table tells (redop sum, size = count x 4)
    assert run.collective == "allreduce"
    assert [r.size for r in run.rows] == [1 << k for k in range(20, 34)]
    assert run.rows[0].busbw == pytest.approx(43.70e9) and run.rows[-1].busbw == pytest.approx(478.87e9)
    assert run.avg_busbw is not None and run.avg_busbw == pytest.approx(sum(r.busbw for r in run.rows) / 14, rel=1e-5)


def test_multi_node_fixture() -> None:
    run = parse_log(str(GCP))
    assert (run.ranks, run.nodes, run.gpus_per_node) == (16, 2, 8)
    assert run.binary == "all_reduce_perf" and run.collective == "allreduce"
    assert len(run.rows) == 14 and run.rows[-1].busbw == pytest.approx(338.82e9)


@pytest.mark.parametrize("path", [AZURE, GCP], ids=["azure", "gcp"])
def test_fixture_columns_are_consistent(path: Path) -> None:
    """time = size / algbw and busbw = algbw x 2(n-1)/n, to the digits nccl-tests prints."""
    run = parse_log(str(path))
    factor = 2 * (run.ranks - 1) / run.ranks
    for r in run.rows:
        assert r.size / r.seconds == pytest.approx(r.algbw, rel=2e-3)
        assert r.algbw * factor == pytest.approx(r.busbw, rel=2e-3)
        assert r.in_place_busbw == r.busbw


def _table(redop: str = "sum", count_div: int = 4, ranks: int = 8, hosts: int = 1) -> str:
    lines = ["# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20"]
    for r in range(ranks):
        lines.append(
            f"#  Rank {r:2d} Group  0 Pid {100 + r:6d} on {'h' + str(r * hosts // ranks):>10s} device {r:2d} [0x{r:02x}] NVIDIA A100-SXM4-80GB"
        )
    lines.append(
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
    )
    lines.append(
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"
    )
    # Consistent columns as nccl-tests prints them: algbw = size / time, busbw = algbw x the
    # bus factor (all-reduce: a reduction with size = count x 4; else (n-1)/n).
    factor = (2 if redop != "none" and count_div == 4 else 1) * (ranks - 1) / ranks
    for size, us in ((1 << 20, 100.0), (1 << 21, 200.0)):
        algbw = size / (us * 1e3)
        cols = f"{us:.2f}  {algbw:.2f}  {algbw * factor:.2f}  0"
        lines.append(f"{size:12d}  {size // count_div:12d}  float  {redop:>6s}  -1  {cols}  {cols}")
    lines.append("# Avg bus bandwidth    : 18.35")
    return "\n".join(lines) + "\n"


def test_table_tells_reduce_scatter_from_all_reduce() -> None:
    """nccl-tests prints the per-rank count for reduce-scatter (size = count x ranks x 4)."""
    assert _collective(_table(count_div=4)) == "allreduce"
    assert _collective(_table(count_div=32)) == "reducescatter"


def _collective(text: str, given: str | None = None) -> str:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(text)
    return parse_log(f.name, given).collective


def test_all_gather_or_all_to_all_needs_the_name_or_collective() -> None:
    text = _table(redop="none", count_div=32)
    with pytest.raises(InputError, match="give --collective"):
        _collective(text)
    assert _collective(text, "alltoall") == "alltoall"
    assert _collective("# Collective test starting: ./build/all_gather_perf\n" + text) == "allgather"
    with pytest.raises(InputError, match="not alltoall"):
        _collective("# Collective test starting: all_gather_perf\n" + text, "alltoall")


def test_hosts_give_nodes() -> None:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(_table(hosts=2))
    run = parse_log(f.name)
    assert (run.nodes, run.gpus_per_node, run.gpu) == (2, 4, "NVIDIA A100-SXM4-80GB")


GOOD = _table()
MALFORMED = {
    "empty": (b"", "is empty"),
    "binary": (b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary file"),
    "no-table": (GOOD.split("#       size")[0].encode(), "no table"),
    "unknown-collective": (
        ("# Collective test starting: broadcast_perf\n" + GOOD).encode(),
        "broadcast_perf is not a collective",
    ),
    "duplicate-rank": (GOOD.replace("#  Rank  3 ", "#  Rank  2 ").encode(), "rank 2 is listed twice"),
    "uneven-hosts": (
        GOOD.replace("on         h0 device  7", "on         h9 device  7").encode(),
        "different numbers of ranks",
    ),
    "non-numeric": (
        GOOD.replace("100.00  10.49  18.35  0  100.00", "100.00  abc  18.35  0  100.00", 1).encode(),
        "algbw 'abc' is not a number",
    ),
    "no-header": (
        b"     1048576        262144     float     sum      -1   100.00  10.49  18.35  0\n",
        "before the column header",
    ),
    "not-nccl-tests": (b"hello world\n", "no '# nThread"),
    "size-not-count": (
        GOOD.replace("     1048576        262144 ", "     1048577        262144 ").encode(),
        "size and count disagree: size 1048577 is not count 262144 x 4 bytes (float) = 1048576",
    ),
    "every-size-twice": (
        GOOD.replace("# Avg", "\n".join(t for t in GOOD.splitlines() if t.strip()[:1].isdigit()) + "\n# Avg").encode(),
        "size 1048576 (float, sum) again, as on line",
    ),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_log_is_one_line_exit_2(tmp_path: Path, name: str) -> None:
    data, what = MALFORMED[name]
    path = tmp_path / f"{name}.log"
    path.write_bytes(data)
    p = subprocess.run(
        [sys.executable, "-m", "tensorwire", "calibrate", "nccl-tests", str(path), "--topology", "rail:node=dgx-a100"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].startswith(f"tensorwire: error: log: {path}"), lines[0]
    assert what in lines[0]


def test_missing_log_and_directory(tmp_path: Path) -> None:
    for arg, what in ((tmp_path / "nope.log", "no such file"), (tmp_path, "is a directory")):
        p = subprocess.run(
            [sys.executable, "-m", "tensorwire", "calibrate", "nccl-tests", str(arg)], capture_output=True, text=True
        )
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and what in p.stderr, p.stderr


def test_line_numbers_name_the_bad_row(tmp_path: Path) -> None:
    text = MALFORMED["non-numeric"][0].decode()
    path = tmp_path / "bad.log"
    path.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), start=1) if "abc" in t)
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    assert e.value.args[1].startswith(f"{path}:{line}: ")


def test_fifo_without_a_writer_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A named pipe no process writes to: `open` used to block for ever; it reads as empty."""
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    p = subprocess.run(
        [sys.executable, "-m", "tensorwire", "calibrate", "nccl-tests", str(fifo)],
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard, not a speed bound
    )
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        f"tensorwire: error: log: {fifo}: is empty; give nccl-tests' standard output (all_reduce_perf ... > FILE)"
    ], p.stderr


def test_a_pipe_with_a_writer_is_read_to_its_end() -> None:
    """`calibrate nccl-tests <(cat LOG)`: a pipe is still read as the file it carries."""
    r, w = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(w, AZURE.read_bytes()), os.close(w)))
    writer.start()
    try:
        run = parse_log(f"/dev/fd/{r}")
    finally:
        writer.join()
        os.close(r)
    assert (run.ranks, len(run.rows)) == (8, 14)


@pytest.mark.parametrize("where", ["gpu", "host", "number", "binary"])
def test_megabyte_values_are_quoted_cut_short(tmp_path: Path, where: str) -> None:
    """A value of a megabyte in a log (a GPU or host name, a number column, a binary name)
    is quoted cut short: the refusal stays one short line (it was the whole megabyte)."""
    huge = "x" * 1_000_000
    text = {
        "gpu": GOOD.replace("device  7 [0x07] NVIDIA A100-SXM4-80GB", f"device  7 [0x07] {huge}"),
        "host": GOOD.replace("on         h0 device  7", f"on {huge} device  7"),
        "number": GOOD.replace("100.00  10.49  18.35  0  100.00", f"100.00  {huge}  18.35  0  100.00", 1),
        "binary": f"# Collective test starting: {huge}_perf\n" + GOOD,
    }[where]
    assert huge in text
    path = tmp_path / "huge.log"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    message = e.value.args[1]
    assert message.startswith(f"{path}:") and "xxx..." in message and len(message) < 500, message[:600]


@pytest.mark.parametrize("column", [0, 1])
def test_sizes_past_2_53_name_the_row(tmp_path: Path, column: int) -> None:
    """A size or count past what a run can hold is refused naming the file and line (it
    reached nccl_predict and was refused as ``bytes`` with no line)."""
    lines = GOOD.splitlines()
    i = next(i for i, t in enumerate(lines) if t.strip().startswith("1048576"))
    fields = lines[i].split()
    fields[column] = str(10**30)
    lines[i] = "  ".join(fields)
    path = tmp_path / "huge.log"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    assert e.value.args[0] == "log" and e.value.args[1].startswith(f"{path}:{i + 1}: "), e.value.args
    assert "past 2^53" in e.value.args[1]


@pytest.mark.parametrize("size", ["-1048576", "104857x", "1" + "0" * 4400])
def test_a_row_whose_size_is_not_a_whole_number_is_refused_not_skipped(tmp_path: Path, size: str) -> None:
    """A negative or malformed size made the line no table row: it was skipped without a
    word (13 of 14 rows fitted, exit 0); 4,401 digits raised Python's ValueError."""
    lines = GOOD.splitlines()
    i = next(i for i, t in enumerate(lines) if t.strip().startswith("1048576"))
    lines[i] = lines[i].replace("1048576", size, 1)
    path = tmp_path / "bad.log"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    assert e.value.args[0] == "log" and e.value.args[1].startswith(f"{path}:{i + 1}: "), e.value.args
    assert "whole number of bytes" in e.value.args[1] or "past 2^53" in e.value.args[1], e.value.args
    assert len(e.value.args[1]) < 300


# --- rows of size 0 and rows whose columns disagree -------------------------------------

#: Rows of size 0 as nccl-tests prints them for ``-b 0`` (bandwidths 0, or nan when the
#: measured time rounds to 0).
ZERO_ROWS = [
    "           0             0     float     sum      -1     0.12    0.00    0.00       0     0.11    0.00    0.00       0",
    "           0             0     float     sum      -1     0.00    -nan    -nan       0     0.00    -nan    -nan       0",
]


def _with_zero_rows(text: str) -> tuple[str, list[int]]:
    """``text`` with :data:`ZERO_ROWS` before its first row, and their line numbers."""
    lines = text.splitlines()
    first = next(i for i, t in enumerate(lines) if t.strip() and t.strip()[0].isdigit())
    lines[first:first] = ZERO_ROWS
    return "\n".join(lines) + "\n", [first + 1, first + 2]


def _cli(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tensorwire", "calibrate", "nccl-tests", str(path), *extra],
        capture_output=True,
        text=True,
    )


def test_rows_of_size_0_are_skipped_and_counted(tmp_path: Path) -> None:
    text, lines = _with_zero_rows(AZURE.read_text())
    path = tmp_path / "b0.log"
    path.write_text(text)
    run = parse_log(str(path))
    assert run.skipped == tuple(lines)
    assert run.rows == tuple(replace(r, line=r.line + 2) for r in parse_log(str(AZURE)).rows)


def test_the_summary_says_how_many_rows_of_size_0_were_skipped(tmp_path: Path) -> None:
    path = tmp_path / "b0.log"
    text, lines = _with_zero_rows(AZURE.read_text())
    path.write_text(text)
    p = _cli(path, "--topology", "rail:node=dgx-h100")
    assert p.returncode == 0, p.stderr
    assert f"2 rows of size 0 skipped ({path})" in p.stdout
    assert "rows of size 0" not in _cli(AZURE, "--topology", "rail:node=dgx-h100").stdout
    p = _cli(path, "--topology", "rail:node=dgx-h100", "--json")
    data = json.loads(p.stdout)
    assert len(data["rows"]) == 14 and [(r["log"], r["line"]) for r in data["skipped_rows"]] == [
        (str(path), line) for line in lines
    ]


def test_a_log_of_rows_of_size_0_only_is_refused(tmp_path: Path) -> None:
    lines = GOOD.splitlines()
    rows = [i for i, t in enumerate(lines) if t.strip() and t.strip()[0].isdigit()]
    for k, i in enumerate(rows):
        lines[i] = ZERO_ROWS[k % 2]
    path = tmp_path / "only0.log"
    path.write_text("\n".join(lines) + "\n")
    p = _cli(path, "--topology", "rail:node=dgx-a100")
    assert p.returncode == 2 and p.stdout == "", p
    assert p.stderr.strip().splitlines() == [
        f"tensorwire: error: log: {path}:{rows[0] + 1}: every row has size 0 (2 of them; nccl-tests' -b 0): "
        "no row times anything; run it from -b 8 or larger"
    ]


def _mutate(path: Path, size: int, column: int, value: str) -> tuple[str, int]:
    """The log at ``path`` with field ``column`` of the row of ``size`` set to ``value``,
    and that row's line number."""
    lines = path.read_text().splitlines()
    i = next(i for i, t in enumerate(lines) if t.split()[:1] == [str(size)])
    fields = lines[i].split()
    fields[column] = value
    lines[i] = "  ".join(fields)
    return "\n".join(lines) + "\n", i + 1


# Fields of a row: size count type redop root time algbw busbw #wrong time algbw busbw #wrong.
DISAGREE = {
    # The Azure fixture's 8 MiB row: 85.28 us, 98.36 GB/s, 172.13 GB/s (x 1.75 on 8 ranks).
    "busbw": (AZURE, 8 << 20, 7, "182.13", ["busbw 182.13 is not algbw x 1.75 (allreduce on 8 ranks) = 172.13 GB/s"]),
    "algbw": (
        AZURE,
        8 << 20,
        6,
        "93.36",
        [
            "algbw 93.36 is not size / time = 98.37 GB/s",
            "busbw 172.13 is not algbw x 1.75 (allreduce on 8 ranks) = 163.38",
        ],
    ),
    "time": (AZURE, 8 << 20, 5, "95.28", ["algbw 98.36 is not size / time = 88.04 GB/s"]),
    "in-place": (AZURE, 8 << 20, 11, "172.43", ["in-place busbw 172.43 is not algbw x 1.75"]),
    # The GCP fixture's busbw is 2 x 15/16 x algbw (16 ranks), not 2 x 7/8 (as if 8).
    "ranks": (GCP, 1 << 20, 7, f"{5.16 * 1.75:.2f}", ["busbw 9.03 is not algbw x 1.875 (allreduce on 16 ranks)"]),
}


@pytest.mark.parametrize("name", sorted(DISAGREE))
def test_a_row_whose_columns_disagree_is_refused_naming_them(tmp_path: Path, name: str) -> None:
    log, size, column, value, what = DISAGREE[name]
    text, line = _mutate(log, size, column, value)
    path = tmp_path / f"{name}.log"
    path.write_text(text)
    p = _cli(path, "--topology", "rail:node=dgx-h100")
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr, p
    (message,) = p.stderr.strip().splitlines()
    assert message.startswith(f"tensorwire: error: log: {path}:{line}: columns disagree at size {size}: "), message
    for w in what:
        assert w in message, message
    if name != "algbw":
        assert message.count(" is not ") == 1, message  # only the column changed


@pytest.mark.parametrize(
    "column, value",
    [(7, "172.14"), (7, "172.12"), (5, "85.29"), (5, "85.3"), (5, "85")],
    ids=["busbw+1", "busbw-1", "time+1", "time-1-digit", "time-2-digits"],
)
def test_the_last_printed_digit_is_within_the_rounding(column: int, value: str) -> None:
    """One unit of the last printed digit off (or fewer digits) is nccl-tests' rounding, not a
    contradiction: the fixture's 8 MiB row so changed still reads."""
    text, _ = _mutate(AZURE, 8 << 20, column, value)
    with _temp_log(text) as path:
        assert len(parse_log(path).rows) == 14


class _temp_log:
    """A temporary log file holding ``text`` (hypothesis runs many examples per test, so no
    ``tmp_path``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __enter__(self) -> str:
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(self.text)
        self.path = f.name
        return f.name

    def __exit__(self, *exc: object) -> None:
        os.unlink(self.path)


def get_float_str(value: float, width: int) -> str:
    """nccl-tests' ``getFloatStr`` (src/util.cu): two decimals, fewer as the integer part
    grows, then an exponent."""
    power, v = 0, 1
    while value >= v:
        power, v = power + 1, v * 10
    if power < width - 2:
        return f"{value:{width}.2f}"
    if power < width - 1:
        return f"{value:{width}.1f}"
    if power < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}" if width >= 7 else f"{value:{width}.0e}"


def old_time_str(us: float) -> str:
    """Older nccl-tests (src/common.cu): ``%7.0f`` from 10 ms, ``%7.1f`` from 100 us, else ``%7.2f``."""
    return f"{us:7.0f}" if us >= 10000 else f"{us:7.1f}" if us >= 100 else f"{us:7.2f}"


COLLECTIVE_NAMES = ("allreduce", "allgather", "reducescatter", "alltoall")


@settings(max_examples=300, deadline=None)
@given(
    us=st.floats(0.5, 1e9),
    size=st.integers(1, 1 << 45),
    collective=st.sampled_from(COLLECTIVE_NAMES),
    ranks=st.integers(2, 4096),
    old=st.booleans(),
)
def test_columns_printed_from_a_time_and_size_agree(
    us: float, size: int, collective: str, ranks: int, old: bool
) -> None:
    """Whatever (time, size), the columns nccl-tests prints from them (new or old formats)
    pass; busbw 2% + 0.05 GB/s off does not (below 1e5 GB/s, where %6.0e's single digit
    would hide it)."""
    factor = bus_factor(collective, ranks)
    algbw = size / (us * 1e3)
    busbw = algbw * factor
    if old:
        t, a, b = old_time_str(us), f"{algbw:6.2f}", f"{busbw:6.2f}"
    else:
        t, a, b = get_float_str(us, 7), get_float_str(algbw, 6), get_float_str(busbw, 6)
    assert disagreements(size, t.strip(), a.strip(), b.strip(), factor) == []
    assert disagreements(size, None, a.strip(), b.strip(), factor) == []
    if busbw < 1e5:
        off = busbw * 1.02 + 0.05
        wrong = f"{off:6.2f}" if old else get_float_str(off, 6)
        assert len(disagreements(size, t.strip(), a.strip(), wrong.strip(), factor)) == 1


@settings(max_examples=40, deadline=None)
@given(
    # Each size once (a run prints each size once; a size printed twice is refused).
    rows=st.lists(
        st.tuples(st.floats(1.0, 1e7), st.integers(0, 1 << 36)), min_size=1, max_size=8, unique_by=lambda r: r[1] // 4
    ),
    ranks=st.sampled_from([2, 8, 16]),
)
def test_a_log_printed_from_times_and_sizes_reads(rows: list[tuple[float, int]], ranks: int) -> None:
    """A whole all_reduce_perf log printed from (time, size) pairs reads, its rows of size 0
    skipped (refused when there is nothing else)."""
    lines = ["# nThread 1 nGpus 1 minBytes 0 maxBytes 1 step: 2(factor) warmup iters: 5 iters: 20"]
    for r in range(ranks):
        lines.append(f"#  Rank {r:2d} Group  0 Pid {r:6d} on {'h':>10s} device {r:2d} [0x00] NVIDIA H100 80GB HBM3")
    lines.append("#       size         count      type   redop    root     time   algbw   busbw #wrong")
    factor = bus_factor("allreduce", ranks)
    for us, size in rows:
        size -= size % 4
        algbw = size / (us * 1e3)
        cols = f"{get_float_str(us, 7)}  {get_float_str(algbw, 6)}  {get_float_str(algbw * factor, 6)}      0"
        lines.append(f"{size:12d}  {size // 4:12d}     float     sum      -1  {cols}")
    with _temp_log("# Collective test starting: all_reduce_perf\n" + "\n".join(lines) + "\n") as path:
        sizes = [s - s % 4 for _, s in rows]
        if not any(sizes):
            with pytest.raises(InputError, match="every row has size 0"):
                parse_log(path)
            return
        run = parse_log(path)
    assert [r.size for r in run.rows] == [s for s in sizes if s] and len(run.skipped) == sizes.count(0)


# --- rows nccl-tests found wrong results in ---------------------------------------------

#: Fields 8 and 12 of a row are its out-of-place and in-place ``#wrong`` (nccl-tests prints
#: the count with ``%6g``, so large ones in exponent form).
WRONG = {
    "out-of-place": ({8: "3"}, "3 wrong results in the out-of-place check"),
    "in-place": ({12: "1"}, "1 wrong result in the in-place check"),
    "both": (
        {8: "2", 12: "1.23457e+06"},
        "2 wrong results in the out-of-place check and 1.23457e+06 in the in-place check",
    ),
}


def _with_fields(text: str, size: int, changes: dict[int, str]) -> tuple[str, int]:
    """``text`` with the fields ``changes`` names set in the row of ``size``, and its line."""
    lines = text.splitlines()
    i = next(i for i, t in enumerate(lines) if t.split()[:1] == [str(size)])
    fields = lines[i].split()
    for column, value in changes.items():
        fields[column] = value
    lines[i] = "  ".join(fields)
    return "\n".join(lines) + "\n", i + 1


def _twice(text: str) -> tuple[str, int, int]:
    """``text`` with its table printed twice, every size again (as a table pasted in after
    itself), and the lines of its first row and of that row again."""
    lines = text.splitlines()
    rows = [i for i, t in enumerate(lines) if t.strip()[:1].isdigit()]
    again = lines[: rows[-1] + 1] + [lines[i] for i in rows] + lines[rows[-1] + 1 :]
    return "\n".join(again) + "\n", rows[0] + 1, rows[-1] + 2


#: Tables that contradict themselves (and the arguments they are read with), by the change,
#: the line the refusal names and what it says. Each row's columns agree (algbw = size / time
#: to the digits printed), so only the contradiction refuses them: they were fitted.
_ALL_GATHER = _table(redop="none", count_div=32)
_FIRST = _with_fields(GOOD, 1 << 20, {})[1]
CONTRADICTIONS = {
    # A size that is not count x the type's element size (float: 4 bytes), as all-reduce prints it.
    "size-not-count": (
        _with_fields(GOOD, 1 << 20, {0: "1048577"})[0],
        (),
        _FIRST,
        "size and count disagree: size 1048577 is not count 262144 x 4 bytes (float) = 1048576, as allreduce "
        "prints them; an edited row",
    ),
    # All-gather's count is per rank: size = count x ranks x element size.
    "count-per-rank": (
        _with_fields(_ALL_GATHER, 1 << 20, {1: "32769"})[0],
        ("--collective", "allgather"),
        _FIRST,
        "size and count disagree: size 1048576 is not count 32769 x 8 ranks x 4 bytes (float) = 1048608, as "
        "allgather prints them (the count per rank)",
    ),
    # Every size twice: each row would count twice, as a log given twice (which is refused).
    "every-size-twice": (
        _twice(GOOD)[0],
        (),
        _twice(GOOD)[2],
        f"size 1048576 (float, sum) again, as on line {_twice(GOOD)[1]}: a run prints each size once a type and "
        "reduction, so its rows would count twice in the fit; give each row once",
    ),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTIONS))
def test_a_table_that_contradicts_itself_is_refused_naming_the_line(tmp_path: Path, name: str) -> None:
    """A row whose size is not its count x the element size, and a table that prints its sizes
    twice, were fitted without a word (the second with every row counted twice). Each is
    refused in one line naming the log, the line and what is wrong; no cluster file is written."""
    text, extra, line, what = CONTRADICTIONS[name]
    path, out = tmp_path / f"{name}.log", tmp_path / "c.json"
    path.write_text(text)
    p = _cli(path, "--topology", "rail:node=dgx-a100", *extra, "--out", str(out))
    assert p.returncode == 2 and p.stdout == "" and not out.exists(), p
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.startswith(f"tensorwire: error: log: {path}:{line}: {what}"), p.stderr


def test_a_size_once_a_type_and_the_per_rank_counts_read(tmp_path: Path) -> None:
    """What nccl-tests does print reads: a size again in another type (``-d all`` prints a table
    a type), and the per-rank counts of all-gather and reduce-scatter."""
    lines = GOOD.splitlines()
    rows = [t for t in lines if t.strip()[:1].isdigit()]
    halves = [
        t.replace(" float ", " half ").replace(f"  {int(t.split()[1])}  ", f"  {2 * int(t.split()[1])}  ", 1)
        for t in rows
    ]
    path = tmp_path / "types.log"
    path.write_text("\n".join(lines + halves) + "\n")
    run = parse_log(str(path))
    assert [(r.size, r.dtype) for r in run.rows] == [
        (1 << 20, "float"),
        (1 << 21, "float"),
        (1 << 20, "half"),
        (1 << 21, "half"),
    ]
    assert _collective(_ALL_GATHER, "allgather") == "allgather"
    assert _collective(_table(count_div=32)) == "reducescatter"


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_row_with_wrong_results_is_refused(tmp_path: Path, name: str) -> None:
    """A non-zero #wrong is a corrupt run (the collective's output was checked and wrong): its
    timing is no measurement, so the log is refused naming the line and the count, and no
    cluster file is written (it was fitted with no word)."""
    changes, what = WRONG[name]
    text, line = _with_fields(AZURE.read_text(), 8 << 20, changes)
    path, out = tmp_path / f"{name}.log", tmp_path / "out.json"
    path.write_text(text)
    p = _cli(path, "--topology", "rail:node=dgx-h100", "--out", str(out))
    assert p.returncode == 2 and p.stdout == "" and not out.exists(), p
    assert p.stderr.strip().splitlines() == [
        f"tensorwire: error: log: {path}:{line}: {what} (#wrong) at size {8 << 20}: the run is not a valid "
        "measurement; fix it or drop the row"
    ]


def test_unchecked_rows_read_and_a_garbled_count_is_refused(tmp_path: Path) -> None:
    """nccl-tests run with -c 0 checks nothing and prints N/A in #wrong: that reads as the same
    rows; a #wrong that is neither a count nor N/A is refused naming the line."""
    text = AZURE.read_text()
    for size in (r.size for r in parse_log(str(AZURE)).rows):
        text, _ = _with_fields(text, size, {8: "N/A", 12: "N/A"})
    path = tmp_path / "c0.log"
    path.write_text(text)
    assert text.count("N/A") == 28
    assert [(r.size, r.seconds, r.busbw) for r in parse_log(str(path)).rows] == [
        (r.size, r.seconds, r.busbw) for r in parse_log(str(AZURE)).rows
    ]
    text, line = _with_fields(AZURE.read_text(), 1 << 20, {12: "many"})
    path.write_text(text)
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    assert e.value.args == ("log", f"{path}:{line}: #wrong 'many' is not a count or N/A")


def test_a_tab_after_the_hash_of_the_column_header_reads(tmp_path: Path) -> None:
    """``#<TAB>size count ...`` is the header (rows and rank lines with tabs already read);
    it was "a table row before the column header"."""
    path = tmp_path / "tab.log"
    path.write_text(GOOD.replace("#       size", "#\tsize"))
    assert [r.size for r in parse_log(str(path)).rows] == [1 << 20, 1 << 21]


def test_a_nodes_machine_must_have_the_logs_gpus_per_node(tmp_path: Path) -> None:
    """2 hosts x 4 GPUs on ``nodes:machine=dgx-a100`` (8 GPUs a machine) was modelled as one
    machine, every multi-node row left uncalibrated; it is refused as on ``rail``."""
    path = tmp_path / "two.log"
    path.write_text(_table(hosts=2))
    p = subprocess.run(
        [sys.executable, "-m", "tensorwire", "calibrate", "nccl-tests", str(path), "--topology",
         "nodes:machine=dgx-a100", "-b", "200Gbps"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "4 GPUs per node on 2 nodes, where nodes:machine=dgx-a100 has 8" in p.stderr


# --- numbers as nccl-tests prints them, and the bounds on a log ---------------------------

#: What :func:`~tensorwire.calibrate.logs._number` says of a cell that is no number as
#: printf writes one.
NOT_PRINTED = "is not a number as nccl-tests prints one (digits 0-9, a decimal point, an exponent from e-324 to e+308)"

#: Cells Python's float() reads (or overflows on) that nccl-tests never prints, by the fields
#: of :data:`GOOD`'s 1 MiB row they replace, and the column the refusal names.
UNPRINTED_CELLS = {
    "algbw-0e400": ({6: "0e400"}, "algbw '0e400'"),  # half_unit raised OverflowError (10.0 ** 400)
    "busbw-0e400": ({7: "0e400"}, "busbw '0e400'"),
    "in-place-algbw-0e400": ({10: "0e400"}, "in-place algbw '0e400'"),
    "arabic-indic-time": ({5: "\u0665\u0660.\u0660\u0660"}, "time '\u0665\u0660.\u0660\u0660'"),
    "underscore-time": ({5: "1_000"}, "time '1_000'"),
    "nan-busbw": ({7: "nan"}, "busbw 'nan'"),
    "exponent-of-5000-digits": ({6: "1e" + "9" * 5000}, "algbw '1e99999999999999999999"),
}


@pytest.mark.parametrize("name", sorted(UNPRINTED_CELLS))
def test_a_cell_no_printf_writes_is_refused_naming_the_line(tmp_path: Path, name: str) -> None:
    """``0e400`` raised OverflowError; ``\u0665\u0660.\u0660\u0660`` and ``1_000`` read as 50 and 1000 (and were
    then refused as disagreeing columns, or not at all): each is one line naming the line."""
    changes, what = UNPRINTED_CELLS[name]
    text, line = _with_fields(GOOD, 1 << 20, changes)
    path = tmp_path / f"{name}.log"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    field, message = e.value.args
    assert field == "log" and message.startswith(f"{path}:{line}: {what}") and message.endswith(NOT_PRINTED)
    assert len(message) < 300


def test_a_count_no_printf_writes_is_refused(tmp_path: Path) -> None:
    """``#wrong`` read with float(): an Arabic-Indic zero was a count of 0."""
    text, line = _with_fields(GOOD, 1 << 20, {8: "\u0660"})
    path = tmp_path / "wrong.log"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    assert e.value.args == ("log", f"{path}:{line}: #wrong '\u0660' is not a count or N/A")


@pytest.mark.parametrize("size", ["\u0661\u0660\u0664\u0668\u0665\u0667\u0666", "1_048_576"])
def test_a_size_in_other_digits_is_refused_not_skipped(tmp_path: Path, size: str) -> None:
    """int() reads Arabic-Indic digits and underscores; nccl-tests prints neither."""
    text, line = _with_fields(GOOD, 1 << 20, {0: size})
    path = tmp_path / "size.log"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    assert e.value.args[1].startswith(f"{path}:{line}: a table row whose size or count is not a whole number")


def test_leading_zeros_are_the_number_they_pad(tmp_path: Path) -> None:
    """A size of 5,000 zeros then 1048576 raised ValueError (int() of 5,007 digits: the guard
    counted the digits without the zeros); it is 1048576, and 5,000 zeros then 4 is size 4."""
    path = tmp_path / "zeros.log"
    text, _ = _with_fields(GOOD, 1 << 20, {0: "0" * 5000 + "1048576", 1: "0" * 5000 + "262144"})
    path.write_text(text)
    assert [(r.size, r.count) for r in parse_log(str(path)).rows] == [(1 << 20, 1 << 18), (1 << 21, 1 << 19)]
    text, line = _with_fields(GOOD, 1 << 20, {0: "0" * 5000 + "4", 1: "0" * 5000 + "1"})
    path.write_text(text)
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    assert e.value.args[1].startswith(f"{path}:{line}: columns disagree at size 4: ")


HUGE = "9" * 5000
#: Header numbers of 5,000 digits (int() raised ValueError past 4,300), by the text replaced,
#: what replaces it, the line it ends on and the number the refusal names.
HEADER_NUMBERS = {
    "nThread": ("# nThread 1 ", f"# nThread {HUGE} ", 1, "nThread"),
    "nGpus": ("nGpus 1 ", f"nGpus {HUGE} ", 1, "nGpus"),
    "rank": ("#  Rank  3 ", f"#  Rank {HUGE} ", 5, "rank"),
    "nccl-library": ("# nThread 1 ", f"# nccl-library={HUGE}\n# nThread 1 ", 1, "nccl-library"),
    "just-past-an-int": ("# nThread 1 ", "# nThread 2147483648 ", 1, "nThread"),
}


@pytest.mark.parametrize("name", sorted(HEADER_NUMBERS))
def test_a_header_number_past_a_c_int_is_refused_naming_the_line(tmp_path: Path, name: str) -> None:
    old, new, line, what = HEADER_NUMBERS[name]
    path = tmp_path / f"{name}.log"
    path.write_text(GOOD.replace(old, new, 1))
    p = _cli(path, "--topology", "rail:node=dgx-a100")
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr, p.stderr[-2000:]
    (message,) = p.stderr.strip().splitlines()
    assert message.startswith(f"tensorwire: error: log: {path}:{line}: {what} "), message
    assert message.endswith("is past 2147483647 (nccl-tests prints it from a C int): not nccl-tests' output")
    assert len(message) < 300


def test_header_numbers_up_to_a_c_int_and_padded_with_zeros_read(tmp_path: Path) -> None:
    path = tmp_path / "padded.log"
    path.write_text(
        GOOD.replace("# nThread 1 ", "# nThread " + "0" * 5000 + "1 ").replace("#  Rank  3 ", "#  Rank 0003 ")
    )
    run = parse_log(str(path))
    assert (run.ranks, len(run.rows)) == (8, 2)
    path.write_text("# nccl-library=2147483647\n" + GOOD)
    assert parse_log(str(path)).nccl_version == "214748.36.47"


#: Times out of the engine's range, by the fields of GOOD's 1 MiB row they replace (the
#: bandwidths 0 or huge, so that the columns agree) and the start of the refusal.
TIMES = {
    "past-the-horizon": ({5: "1e300", 6: "0.00", 7: "0.00"}, "time 1e300 us is at or past the simulation horizon"),
    "at-1e30-us": ({5: "1e30", 6: "0.00", 7: "0.00"}, "time 1e30 us is at or past the simulation horizon"),
    "in-place-past-the-horizon": (
        {9: "1e300", 10: "0.00", 11: "0.00"},
        "in-place time 1e300 us is at or past the simulation horizon",
    ),
    "below-1-ns": ({5: "1e-200", 6: "1.0e+203", 7: "1.8e+203"}, "time 1e-200 us is below 1 ns"),
}


@pytest.mark.parametrize("name", sorted(TIMES))
def test_a_time_out_of_the_engines_range_is_refused_naming_the_line(tmp_path: Path, name: str) -> None:
    """1e300 us (and 1e-200 us) raised OverflowError in the fit; 1e30 us was fitted (its error
    +2.8e30%): each is one line naming the line, exit 2."""
    changes, what = TIMES[name]
    text, line = _with_fields(GOOD, 1 << 20, changes)
    path = tmp_path / f"{name}.log"
    path.write_text(text)
    p = _cli(path, "--topology", "rail:node=dgx-a100")
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr, p.stderr[-2000:]
    (message,) = p.stderr.strip().splitlines()
    assert message.startswith(f"tensorwire: error: log: {path}:{line}: {what}"), message


def test_the_shortest_and_longest_times_the_engine_takes_are_fitted(tmp_path: Path) -> None:
    """0.001 us (1 ns) and 9e12 us (just below the 2^53 ns horizon) read, and the fit runs on
    them to the end (weights 1/t, squared, stay finite)."""
    text, _ = _with_fields(AZURE.read_text(), 1 << 20, {5: "0.001", 6: "1.0e+06", 7: "1.8e+06"})
    text, _ = _with_fields(text, 2 << 20, {5: "9e12", 6: "0.00", 7: "0.00"})
    path = tmp_path / "extreme.log"
    path.write_text(text)
    assert [r.seconds for r in parse_log(str(path)).rows[:2]] == [pytest.approx(1e-9), pytest.approx(9e6)]
    p = _cli(path, "--topology", "rail:node=dgx-h100", "--json")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert len(json.loads(p.stdout)["rows"]) == 14


def _many_rows(n: int) -> str:
    """:data:`GOOD`'s header and ``n`` rows of sizes from 1 MiB up by 4 bytes (each size once:
    a size printed twice is refused), all at 100 us."""
    head = [t for t in GOOD.splitlines() if t.startswith("#") and "Avg" not in t]
    rows = []
    for size in range(1 << 20, (1 << 20) + 4 * n, 4):
        algbw = size / 1e5
        cols = f"100.00  {algbw:.2f}  {algbw * 1.75:.2f}  0"
        rows.append(f"{size:12d}  {size // 4:12d}  float  sum  -1  {cols}  {cols}")
    return "\n".join(head + rows) + "\n"


def test_a_log_may_hold_max_rows_rows(tmp_path: Path) -> None:
    """100,000 rows (11.7 MB) ran past a minute; a log holds at most MAX_ROWS, and the one
    past it is refused naming its line."""
    from tensorwire.calibrate.logs import MAX_ROWS

    path = tmp_path / "many.log"
    path.write_text(_many_rows(MAX_ROWS))
    assert len(parse_log(str(path)).rows) == MAX_ROWS
    path.write_text(_many_rows(MAX_ROWS + 1))
    line = len(_many_rows(0).splitlines()) + MAX_ROWS + 1
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    assert e.value.args == (
        "log",
        f"{path}:{line}: row 10,001 of the table: a log may hold 10,000 rows at most (a nccl-tests sweep prints about 30)",
    )


# --- logs of other nccl-tests releases, launchers and options ---------------------------


def _cputime(text: str, us: str = "12.50") -> str:
    """``text`` as nccl-tests ``-C 1`` prints it: the time columns headed ``cputime`` and
    holding the CPU's time (``us``), the bandwidths still the GPU's."""
    lines = []
    for line in text.splitlines():
        if line.lstrip("# ").startswith("size"):
            line = line.replace(" time ", " cputime ")
        elif _ROW.match(line):
            fields = line.split()
            fields[5] = fields[9] = us
            line = "  ".join(fields)
        lines.append(line)
    return "\n".join(lines) + "\n"


_ROW = re.compile(r"^\s+[0-9]+\s+[0-9]+\s")


def test_a_cputime_log_takes_each_time_from_its_algbw(tmp_path: Path) -> None:
    """With ``-C 1`` nccl-tests prints the CPU's enqueue time in the time column (``cputime``)
    and computes algbw from the GPU's time: each row's time is size / algbw. The CPU's 12.5 us
    were fitted as the time (``nvls_efficiency=2``, every row -99.9%); the fit now is the one of
    the GPU's times, to algbw's printed digits."""
    path = tmp_path / "cpu.log"
    path.write_text(_cputime(AZURE.read_text()))
    run, gpu = parse_log(str(path)), parse_log(str(AZURE))
    assert [r.seconds for r in run.rows] == [pytest.approx(r.size / r.algbw, rel=1e-12) for r in run.rows]
    assert [r.seconds for r in run.rows] == [pytest.approx(r.seconds, rel=1e-3) for r in gpu.rows]
    assert [r.in_place_seconds for r in run.rows] == [pytest.approx(r.seconds, rel=1e-3) for r in gpu.rows]
    p = _cli(path, "--json")
    assert p.returncode == 0, p.stderr
    cal, want = json.loads(p.stdout)["calibration"], json.loads(_cli(AZURE, "--json").stdout)["calibration"]
    assert cal == pytest.approx(want, rel=1e-2, abs=1e-9)


def test_a_cputime_row_whose_algbw_is_0_is_refused_naming_it(tmp_path: Path) -> None:
    """A small size prints algbw 0.00: it gives no time (it would divide by 0)."""
    text, line = _with_fields(_cputime(AZURE.read_text()), 1 << 20, {6: "0.00", 7: "0.00"})
    path = tmp_path / "cpu0.log"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    assert e.value.args[1].startswith(
        f"{path}:{line}: algbw 0.00 at size 1048576: with a cputime column (nccl-tests -C 1) the time is read from algbw"
    )


def test_rank_lines_of_nccl_tests_2_13_3_and_older_read(tmp_path: Path) -> None:
    """``#   Rank  0 Pid 4100 on node0 device  0 [0x18] GPU`` (no ``Group N``, before v2.13.4)
    was no rank line, and such a log was refused."""
    old = re.sub(
        r"^#  Rank (..) Group  0 Pid(.*) \[0000:(..):00\]", r"#   Rank \1 Pid\2 [0x\3]", AZURE.read_text(), flags=re.M
    )
    assert "Group" not in old and "#   Rank  7 Pid   4100 on      node0 device  7 [0xdb]" in old
    path = tmp_path / "old.log"
    path.write_text(old)
    run = parse_log(str(path))
    assert (run.ranks, run.nodes, run.gpu, run.rows) == (8, 1, "NVIDIA H100 80GB HBM3", parse_log(str(AZURE)).rows)


@pytest.mark.parametrize(
    "named",
    [
        "# Collective test starting: ./build/all_gather_perf_mpi",
        "mpirun -np 8 /opt/nccl-tests/all_gather_perf_mpi -g 1",
    ],
)
def test_a_binary_built_with_a_name_suffix_is_its_binary(named: str) -> None:
    """``make NAME_SUFFIX=_mpi`` builds ``all_gather_perf_mpi`` (nccl-tests' README): it was
    "not a collective calibration reads"."""
    text = named + "\n" + _table(redop="none", count_div=32)
    assert _collective(text) == "allgather"
    with _temp_log(text) as path:
        assert parse_log(path).binary == "all_gather_perf"


#: Logs without nccl-tests' ``# Collective test starting:`` line (v2.13.4-v2.16.6): a line
#: before the output, the table (``redop none`` is all-gather or all-to-all; ``sum`` with
#: size = count x 4 all-reduce), ``--collective`` and what is read (or the refusal's start).
WEAK = {
    # A line naming two binaries says nothing: it made the log all-gather, and refused
    # --collective alltoall.
    "building-two": ("Building all_gather_perf alltoall_perf ... done", "none", "alltoall", "alltoall"),
    "building-two-no-collective": (
        "Building all_gather_perf alltoall_perf ... done",
        "none",
        None,
        "cannot tell the collective: no line names one *_perf binary",
    ),
    # Lines naming one binary each (make's "Linking ..."), naming two in all: nothing.
    "linking": (
        "Linking ../build/all_reduce.o > ../build/all_reduce_perf\nLinking ../build/alltoall.o > ../build/alltoall_perf",
        "none",
        None,
        "cannot tell the collective: lines name several binaries (all_reduce_perf on line 1, alltoall_perf on line 2)",
    ),
    # A word that is no nccl-tests binary is ignored: it made even --collective allreduce fail.
    "job-name": ("Starting job nccl_perf on node0", "sum", "allreduce", "allreduce"),
    "job-name-table": ("Starting job nccl_perf on node0", "sum", None, "allreduce"),
    "job-name-alone": (
        "Starting job nccl_perf on node0",
        "none",
        None,
        ":1: cannot tell the collective: nccl_perf is no nccl-tests binary, and the table cannot tell",
    ),
    # --collective outweighs a binary named in passing (it was refused as contradicting it).
    "echoed-and-given": ("mpirun -np 8 all_gather_perf -b 8", "none", "alltoall", "alltoall"),
    "echoed": ("mpirun -np 8 all_gather_perf -b 8", "none", None, "allgather"),
    "echoed-unread": ("mpirun -np 8 broadcast_perf -b 8", "none", None, ":1: broadcast_perf is not a collective"),
    "echoed-unread-given": ("mpirun -np 8 broadcast_perf -b 8", "none", "allgather", "allgather"),
}


@pytest.mark.parametrize("name", sorted(WEAK))
def test_a_binary_named_in_passing_is_weak_evidence(name: str) -> None:
    line, redop, given, want = WEAK[name]
    text = line + "\n" + _table(redop=redop, count_div=4 if redop == "sum" else 32)
    if want in COLLECTIVE_NAMES:
        assert _collective(text, given) == want
        return
    with pytest.raises(InputError) as e:
        _collective(text, given)
    assert e.value.args[0] == "log" and want in e.value.args[1], e.value.args


@pytest.mark.parametrize(
    "code, version", [("2708", "2.7.8"), ("2804", "2.8.4"), ("20906", "2.9.6"), ("21805", "2.18.5")]
)
def test_nccl_library_codes_of_every_release_are_decoded(tmp_path: Path, code: str, version: str) -> None:
    """NCCL before 2.9 codes its version as major x 1000 + minor x 100 + patch: 2708 was
    recorded as 0.27.8."""
    path = tmp_path / "v.log"
    path.write_text(f"# nccl-tests version 2.13.4 nccl-headers={code} nccl-library={code}\n" + GOOD)
    assert parse_log(str(path)).nccl_version == version


@pytest.mark.parametrize("prefix", ["[1,0]<stdout>:", "[1,0]<stdout>: ", "0: ", "  0: "])
def test_a_launchers_prefix_on_every_line_is_read_through(tmp_path: Path, prefix: str) -> None:
    """``mpirun --tag-output`` and ``srun -l`` put a prefix before each line: the log was "no
    '# nThread' header". It reads as the log without it, and errors name the file's lines."""
    path = tmp_path / "tagged.log"
    path.write_text("".join(prefix + line + "\n" for line in AZURE.read_text().splitlines()))
    assert parse_log(str(path)).rows == parse_log(str(AZURE)).rows
    text, line = _mutate(AZURE, 8 << 20, 7, "182.13")
    path.write_text("".join(prefix + t + "\n" for t in text.splitlines()))
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    assert e.value.args[1].startswith(f"{path}:{line}: columns disagree at size {8 << 20}")


@pytest.mark.parametrize("keep", [3, 12, 16, 40])
def test_a_last_row_cut_off_mid_line_is_refused(tmp_path: Path, keep: int) -> None:
    """A log whose output stopped mid-row: its last row cut to a number or two was skipped
    without a word (13 rows fitted); at any length it is refused naming the line."""
    text = AZURE.read_text()
    start = text.index("  8589934592  ")
    path = tmp_path / "cut.log"
    path.write_text(text[: start + keep])
    line = text[:start].count("\n") + 1
    with pytest.raises(InputError) as e:
        parse_log(str(path))
    assert e.value.args[0] == "log" and e.value.args[1].startswith(f"{path}:{line}: "), e.value.args
    assert "fields where the header has 13: a row cut short" in e.value.args[1]
    path.write_text(text[: text.index("\n", start)])  # the whole row, no newline after it
    assert len(parse_log(str(path)).rows) == 14


def test_a_log_given_twice_is_refused(tmp_path: Path) -> None:
    """The same log twice (its path, or a copy) was fitted with every row counted twice."""
    copy = tmp_path / "copy.log"
    copy.write_bytes(AZURE.read_bytes())
    for second, what in ((AZURE, "given twice"), (copy, f"the same bytes as {AZURE}")):
        p = _cli(AZURE, str(second))
        assert p.returncode == 2 and p.stdout == "", p
        assert p.stderr.strip().splitlines() == [
            f"tensorwire: error: log: {second}: {what}: its rows would count twice; give each run once"
        ]
