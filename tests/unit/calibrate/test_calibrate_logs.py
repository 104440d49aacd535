"""nccl-tests logs: the fixtures parsed (ranks, nodes, rows, collective), and malformed logs
refused in one line naming the file and line, exit 2, through the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tensorwire._core import InputError
from tensorwire.calibrate.logs import parse_log

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
    for size in (1 << 20, 1 << 21):
        lines.append(
            f"{size:12d}  {size // count_div:12d}  float  {redop:>6s}  -1  100.00  10.49  18.35  0  100.00  10.49  18.35  0"
        )
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
