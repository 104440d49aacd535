"""nccl-tests logs as releases, launchers, platforms and NCCL's own logging print them: the
table read by its column header (pre-v2.13 all_gather without a redop column, a blank redop
up to v2.13.3), collectives the table cannot tell asked for, NCCL_DEBUG lines from hosts whose
names start with a digit, Windows builds, mpirun -l prefixes, UTF-16 and byte-order marks; and
what cannot be read (nccl-tests' -J JSON, a run that failed) refused in one line saying why."""

from __future__ import annotations

import codecs
import hashlib
import json
from pathlib import Path
from typing import Callable

import pytest
from tensorwire.calibrate.logs import Run
from tensorwire.calibrate.reading import parse_log
from tensorwire.cli import main

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nccl-tests"
AZURE = FIXTURES / "azure-nd-h100-v5-allreduce.log"
GCP = FIXTURES / "gcp-a3-mega-2x8-allreduce.log"


def _calibrate(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """``calibrate nccl-tests ARGS --out OUT``: exit status, stdout, stderr; a refusal is one
    stderr line, exit 2, and writes no OUT."""
    out = tmp_path / "out.json"
    out.unlink(missing_ok=True)
    rc = main(["calibrate", "nccl-tests", *args, "--out", str(out)])
    stdout, stderr = capsys.readouterr()
    if rc == 2:
        assert stderr.count("\n") == 1 and stderr.startswith("tensorwire: error: "), stderr
        assert stdout == "" and "Traceback" not in stderr and not out.exists()
    else:
        assert rc == 0 and out.exists(), stderr
    return rc, stdout, stderr


def _same_rows(a: Run, b: Run) -> bool:
    return [(r.size, r.seconds, r.busbw) for r in a.rows] == [(r.size, r.seconds, r.busbw) for r in b.rows]


# --- NCCL's own logging ------------------------------------------------------------------

#: NCCL_DEBUG=INFO/WARN lines (src/debug.cc: ``HOST:PID:TID [DEV] NCCL INFO``, ``HOST:PID:TID
#: [DEV] FILE:LINE NCCL WARN``) of a host named by its address with dashes (Lambda's): after
#: the column header (lazy connection) and at the end (communicator destroyed).
NCCL_LINES = [
    "192-222-52-110:4100:4120 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
    "192-222-52-110:4100:4120 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "192-222-52-110:4100:4120 [3] transport/net_ib.cc:1084 NCCL WARN NET/IB : Got async event : port error",
    "[2025-06-01 12:00:00] 192-222-52-110:4100:4100 [0] NCCL INFO comm 0x55d0 rank 0 nranks 8 - Destroy COMPLETE",
]


def test_nccl_info_lines_of_hosts_named_by_digits_are_skipped(tmp_path: Path) -> None:
    """They start like a row (a number, then eight fields or more) and were refused as "a
    table row whose size or count is not a whole number of bytes ('192-222-52-110:...')"."""
    lines = AZURE.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip("# ").startswith("size"))
    lines[header + 2 : header + 2] = NCCL_LINES[:3]
    lines.insert(0, "192-222-52-110:4100:4100 [0] NCCL INFO NCCL version 2.21.5+cuda12.4")
    lines.append(NCCL_LINES[3])
    path = tmp_path / "info.log"
    path.write_text("\n".join(lines) + "\n")
    run = parse_log(str(path))
    assert _same_rows(run, parse_log(str(AZURE))) and run.nccl_version == "2.21.5"


# --- the table by its column header, as each release prints it ---------------------------


@pytest.mark.parametrize(
    "log, collective",
    [
        ("v2.11-all_gather.log", "allgather"),  # no redop column
        ("v2.11-alltoall.log", "alltoall"),  # a redop column, its name blank
        ("v2.13.0-all_gather.log", "allgather"),  # redop blank, root -1: one field fewer
        ("v2.13.0-all_gather.log", "alltoall"),  # v2.13.0-2.13.3's all-to-all prints the same
    ],
)
def test_older_tables_are_read_by_their_column_header(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, log: str, collective: str
) -> None:
    """Fields were taken at fixed places (type, redop at 2, 3): v2.11's all-gather was fitted
    as reduce-scatter (its time read as the redop, and the table voted), its all-to-all refused
    as "columns disagree (busbw 0e+00)", and v2.13.0's all-gather refused with "30.48 wrong
    results" (its in-place time under #wrong). Read by the header, each row is the published
    one, and the table, which names no reduction, asks for --collective."""
    run = parse_log(str(FIXTURES / log), collective)
    assert run.collective == collective and (run.ranks, run.nodes) == (8, 1)
    assert [r.size for r in run.rows] == [1 << k for k in range(20, 24)]
    assert [round(r.busbw / 1e9, 2) for r in run.rows] == [30.10, 52.30, 86.00, 130.20]
    assert [round(r.seconds * 1e6, 2) for r in run.rows] == [30.48, 35.09, 42.67, 56.38]
    assert {(r.dtype, r.redop) for r in run.rows} == {("float", "")}
    assert _calibrate(capsys, tmp_path, str(FIXTURES / log), "--collective", collective)[0] == 0
    rc, _, err = _calibrate(capsys, tmp_path, str(FIXTURES / log))
    assert rc == 2 and "the table cannot tell (no redop: all-gather and all-to-all print the same table)" in err


@pytest.mark.parametrize("log", ["v2.11-all_gather.log", "v2.13.0-all_gather.log"])
def test_a_reduction_the_table_does_not_print_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, log: str
) -> None:
    rc, _, err = _calibrate(capsys, tmp_path, str(FIXTURES / log), "--collective", "reducescatter")
    assert rc == 2 and err.endswith("its table prints no reduction (no redop), so it is not reducescatter\n"), err
    sendrecv = str(FIXTURES / "v2.13.4-sendrecv-2gpus.log")  # a reduction the table cannot tell
    rc, _, err = _calibrate(capsys, tmp_path, sendrecv, "--collective", "allgather")
    assert rc == 2 and err.endswith("its table prints redop 'sum', a reduction, so it is not allgather\n"), err


# --- tables the collective cannot be told from -------------------------------------------


def test_a_two_gpu_table_asks_for_the_collective(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """sendrecv_perf on 2 GPUs (v2.13.4-2.16: no "Collective test starting" line) prints
    all_reduce_perf's table (a reduction, size = count x 4, busbw = algbw x 2 x 1/2): it was
    fitted as all-reduce without a word. Told, it is read as what it is said to be."""
    log = str(FIXTURES / "v2.13.4-sendrecv-2gpus.log")
    rc, _, err = _calibrate(capsys, tmp_path, log)
    assert rc == 2 and "on 2 ranks all_reduce_perf's table is sendrecv_perf's and reduce_perf's too" in err, err
    assert "give --collective allreduce | allgather | reducescatter | alltoall" in err
    assert parse_log(log, "allreduce").collective == "allreduce"


def test_a_rooted_table_asks_for_the_collective(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """reduce_perf (root 0) was refused as "busbw 24.97 is not algbw x 1.75 (allreduce)"."""
    rc, _, err = _calibrate(capsys, tmp_path, str(FIXTURES / "v2.13.4-reduce.log"))
    assert rc == 2 and "root 0 on line 16: reduce_perf's or broadcast_perf's table" in err, err


def test_busbw_equal_to_algbw_names_sendrecv(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A table that reads as all-reduce on 8 ranks (a reduction, size = count x 4, no root)
    whose busbw is its algbw is sendrecv_perf's: said so, not "columns disagree (allreduce)"."""
    path = tmp_path / "sendrecv.log"
    path.write_text((FIXTURES / "v2.13.4-reduce.log").read_text().replace("sum       0", "sum      -1"))
    rc, _, err = _calibrate(capsys, tmp_path, str(path))
    assert rc == 2 and ":19: busbw = algbw (98.37 GB/s), as sendrecv_perf prints it" in err, err
    assert "columns disagree" not in err


# --- platforms and launchers -------------------------------------------------------------


@pytest.mark.parametrize("program", ["all_reduce_perf.exe", r"C:\nccl-tests\build\all_reduce_perf.exe"])
def test_a_windows_build_names_its_binary_with_exe(tmp_path: Path, program: str) -> None:
    """nccl-tests builds for Windows from v2.19.1; ``argv[0]`` keeps ``.exe`` (and CRLF line
    ends): it was refused as "all_reduce_perf.exe is not a collective calibration reads"."""
    path = tmp_path / "win.log"
    text = f"# Collective test starting: {program}\n" + AZURE.read_text()
    path.write_bytes(text.replace("\n", "\r\n").encode())
    run = parse_log(str(path))
    assert (run.binary, run.collective) == ("all_reduce_perf", "allreduce") and _same_rows(run, parse_log(str(AZURE)))


def test_an_mpirun_l_prefix_is_read_as_without(tmp_path: Path) -> None:
    """Intel MPI's and MPICH's ``mpirun -l`` put ``[RANK] `` before each line: the log was
    refused as having no '# nThread' header."""
    path = tmp_path / "impi.log"
    path.write_text("".join(f"[0] {line}\n" for line in GCP.read_text().splitlines()))
    run = parse_log(str(path))
    assert (run.ranks, run.nodes) == (16, 2) and _same_rows(run, parse_log(str(GCP)))


@pytest.mark.parametrize(
    "encode",
    [
        lambda text: codecs.BOM_UTF16_LE + text.replace("\n", "\r\n").encode("utf-16-le"),  # PowerShell 5.1's >
        lambda text: codecs.BOM_UTF16_BE + text.encode("utf-16-be"),
        lambda text: codecs.BOM_UTF8 + text.encode(),  # some Windows editors
    ],
    ids=["utf-16-le", "utf-16-be", "utf-8-bom"],
)
def test_utf16_and_a_byte_order_mark_read(tmp_path: Path, encode: Callable[[str], bytes]) -> None:
    """Windows PowerShell 5.1's ``>`` writes UTF-16 with its byte-order mark: the log was
    refused as a binary file. A UTF-8 byte-order mark hid the '# nThread' header."""
    path = tmp_path / "ps.log"
    text = AZURE.read_text()
    data = encode(text[text.index("# nThread") :])  # the mark before the header
    path.write_bytes(data)
    run = parse_log(str(path))
    assert _same_rows(run, parse_log(str(AZURE)))
    assert run.sha256 == hashlib.sha256(data).hexdigest()


# --- what cannot be read, and why --------------------------------------------------------


def test_a_json_object_short_of_nccl_tests_json_output_names_what_is_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """nccl-tests -J FILE (v2.17.3 on) writes the results as JSON, which calibration reads
    (tests/unit/calibrate/test_calibrate_json.py); it had been refused as "not nccl-tests'
    standard output". A JSON object without its fields is refused naming the first missing."""
    path = tmp_path / "results.json"
    doc = {"version": 3, "args": ["./all_reduce_perf", "-J", "results.json"], "config": {"nthreads": 1}, "results": []}
    path.write_text(json.dumps(doc, indent=1))
    rc, _, err = _calibrate(capsys, tmp_path, str(path))
    assert rc == 2 and err == (
        f"tensorwire: error: log: {path}: config.ngpus is missing or not a number or text: not nccl-tests' JSON "
        "output (nccl-tests -J FILE.json)\n"
    )


def test_a_run_that_failed_after_its_header_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A run that failed before its first row was refused as "no table of results"."""
    lines = AZURE.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip("# ").startswith("size"))
    failure = (
        "10-0-0-5: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for details)'"
    )
    lines[header + 2 :] = [failure, " .. 10-0-0-5 pid 4100: Test failure common.cu:891"]
    path = tmp_path / "failed.log"
    path.write_text("\n".join(lines) + "\n")
    rc, _, err = _calibrate(capsys, tmp_path, str(path))
    assert rc == 2 and err.startswith(
        f"tensorwire: error: log: {path}:{header + 3}: the run failed before its first row "
    )
    assert "Test NCCL failure common.cu:1005" in err and "give the log of a run that completed" in err
