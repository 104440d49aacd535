"""Sweep files: CSV, JSON and Parquet round trips, atomic writes, the documented columns."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import tensorwire as tw
from tensorwire._core import InputError
from tensorwire.sweep import COLUMNS, read_rows, run_grid, write_rows

DOCS = Path(__file__).resolve().parents[3] / "docs" / "outputs.md"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, object]]:
    # the last row's scenario has no plain ps: its speedup is None (an empty cell, a null)
    with_ps = run_grid("resnet50", "4,8", "10Gbps", "ps,ring:partition=4MiB,credit=1MiB", jobs=1)
    without_ps = run_grid("vgg16", "4", "10Gbps", "ring", jobs=1)
    return with_ps + without_ps


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet"])
def test_round_trip_is_exact(tmp_path: Path, rows: list[dict[str, object]], suffix: str) -> None:
    path = tmp_path / f"results{suffix}"
    write_rows(path, rows)
    back = read_rows(path)
    assert back == rows
    assert [type(v) for v in back[0].values()] == [type(v) for v in rows[0].values()]
    assert back[-1]["speedup_over_ps"] is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary file left


def test_csv_header_and_json_shape(tmp_path: Path, rows: list[dict[str, object]]) -> None:
    write_rows(tmp_path / "r.csv", rows)
    header = (tmp_path / "r.csv").read_text().splitlines()[0]
    assert header.split(",") == [c.name for c in COLUMNS]
    write_rows(tmp_path / "r.json", rows)
    data = json.loads((tmp_path / "r.json").read_text())
    assert isinstance(data, list) and data[0]["strategy"] == "ps"


def test_parquet_schema_has_the_column_types(tmp_path: Path, rows: list[dict[str, object]]) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    write_rows(tmp_path / "r.parquet", rows)
    schema = pq.read_schema(tmp_path / "r.parquet")
    assert schema.names == [c.name for c in COLUMNS]
    assert str(schema.field("workers").type) == "int64" and str(schema.field("iteration_time_s").type) == "double"


def test_a_process_that_read_a_parquet_file_exits_cleanly(tmp_path: Path, rows: list[dict[str, object]]) -> None:
    # pyarrow's thread pool made about one process in four that read a buffer abort at
    # exit (SIGABRT, "terminate called without an active exception"): eight runs would
    # show it with probability 1 - 0.75^8 = 0.9.
    pytest.importorskip("pyarrow.parquet")
    import subprocess
    import sys

    path = tmp_path / "r.parquet"
    write_rows(path, rows)
    code = f"from tensorwire.sweep import read_rows; assert len(read_rows({str(path)!r})) == {len(rows)}"
    for _ in range(8):
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, (p.returncode, p.stderr[-2000:])


def test_a_failed_write_keeps_the_old_file(
    tmp_path: Path, rows: list[dict[str, object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.csv"
    write_rows(path, rows)
    before = path.read_bytes()
    import tensorwire.io

    def no_rename(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tensorwire.io.os, "replace", no_rename)
    with pytest.raises(InputError, match="No space left on device; nothing was written"):
        write_rows(path, rows[:1])
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]


def test_unknown_suffix_and_bad_files(tmp_path: Path) -> None:
    with pytest.raises(tw.InputError) as e:
        write_rows(tmp_path / "r.xlsx", [])
    assert e.value.args[0] == "out"
    with pytest.raises(tw.InputError) as e:
        read_rows(tmp_path / "missing.csv")
    assert e.value.args[0] == "sweep" and "cannot read" in e.value.args[1]
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(tw.InputError, match="missing columns"):
        read_rows(tmp_path / "other.csv")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(tw.InputError, match="not a sweep file"):
        read_rows(tmp_path / "bad.json")


def test_a_csv_cell_of_the_wrong_type_names_its_line_and_column(tmp_path: Path, rows: list[dict[str, object]]) -> None:
    path = tmp_path / "r.csv"
    write_rows(path, rows)
    table = list(csv.reader(path.read_text().splitlines()))
    table[2][table[0].index("workers")] = "x"  # the second row, line 3
    with path.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(table)
    with pytest.raises(tw.InputError) as e:
        read_rows(path)
    assert e.value.args == ("sweep", "r.csv:3: workers 'x' is not an integer")


def test_a_csv_recompute_cell_is_true_false_or_empty(tmp_path: Path) -> None:
    rows = run_grid("llama3_8b", 4, "100Gbps", "ddp", recompute=True, jobs=1)
    path = tmp_path / "r.csv"
    write_rows(path, rows)
    assert [r["recompute"] for r in read_rows(path)] == [True]
    table = list(csv.reader(path.read_text().splitlines()))
    table[1][table[0].index("recompute")] = "yes"  # was read as False
    path.write_text("\n".join(",".join(r) for r in table) + "\n")
    with pytest.raises(tw.InputError) as e:
        read_rows(path)
    assert e.value.args == ("sweep", "r.csv:2: recompute 'yes' is not true or false")


def test_every_column_is_documented() -> None:
    text = DOCS.read_text()
    for c in COLUMNS:
        assert f"`{c.name}`" in text, c.name


def test_a_file_of_an_earlier_version_reads_without_compute_interference(tmp_path: Path) -> None:
    # Files written before compute_interference_s existed had it inside exposed_comm_s.
    rows = run_grid(["resnet50"], [4], ["25Gbps"], ["ring", "ps"])
    older = [
        {k: v for k, v in r.items() if k not in ("compute_interference_s", "baseline", "speedup_over_baseline")}
        for r in rows
    ]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(older))
    read = read_rows(path)
    assert [r["compute_interference_s"] for r in read] == [0.0, 0.0]
    assert [r["speedup_over_baseline"] for r in read] == [r["speedup_over_baseline"] for r in rows]
