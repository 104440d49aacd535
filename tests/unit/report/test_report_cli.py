"""``tensorwire report``: from a sweep file or its own sweep; errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import tensorwire as tw
from click.testing import CliRunner
from tensorwire.cli import main
from tensorwire.report.cli import report
from tensorwire.report.sweep_file import read_sweep
from tensorwire.sweep import write_rows
from tensorwire.sweep.table import COLUMNS

Rows = list[dict[str, object]]


def test_from_a_sweep_file(sweep_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(report, ["--sweep", str(sweep_file), "--out", str(out), "--no-timeline"])
    assert result.exit_code == 0, result.output
    assert f"{out}: report on 24 configurations" in result.output
    page = out.read_text()
    assert 'id="model-resnet50-breakdown"' in page and 'id="model-vgg16-breakdown"' in page


def test_model_picks_from_the_sweep_file(sweep_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(report, ["--sweep", str(sweep_file), "-m", "vgg16", "-o", str(out), "--no-timeline"])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert 'id="model-vgg16-breakdown"' in page and "model-resnet50" not in page
    result = CliRunner().invoke(report, ["--sweep", str(sweep_file), "-m", "bert_base", "-o", str(out)])
    assert isinstance(result.exception, tw.InputError) and result.exception.args[0] == "model"


def test_runs_its_own_sweep(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(
        report,
        [
            "-m",
            "alexnet",
            "-n",
            "2,4",
            "-b",
            "10Gbps,40Gbps",
            "-s",
            "ps,ring",
            "-o",
            str(out),
            "--title",
            "AlexNet <test>",
        ],
    )
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "<title>AlexNet &lt;test&gt;</title>" in page and 'id="model-alexnet-workers"' in page


def test_grid_options_with_a_sweep_file_are_a_usage_error(sweep_file: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(report, ["--sweep", str(sweep_file), "-n", "4", "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "leave out --workers" in result.output
    assert not (tmp_path / "r.html").exists()


def test_bad_out_and_missing_sweep(tmp_path: Path) -> None:
    result = CliRunner().invoke(report, ["--sweep", str(tmp_path / "none.csv"), "-o", str(tmp_path / "r.html")])
    assert isinstance(result.exception, tw.InputError) and result.exception.args[0] == "sweep"
    result = CliRunner().invoke(report, ["-o", str(tmp_path / "r.pdf")])
    assert isinstance(result.exception, tw.InputError) and result.exception.args[0] == "out"


# -- a damaged sweep file: one line naming the file, the row and the column; exit 2; no page --
def refused(sweep: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line of ``tensorwire report --sweep sweep``, having checked that it
    exits 2 and writes nothing beside ``sweep`` (no page, no temporary file)."""
    out = sweep.parent / "r.html"
    assert main(["report", "--sweep", str(sweep), "--out", str(out), "--no-timeline"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert [p.name for p in sweep.parent.iterdir()] == [sweep.name]
    return err.rstrip("\n")


def edited_csv(sweep_file: Path, tmp_path: Path, line: int, column: str, cell: str) -> Path:
    """The sweep file with ``column`` of line ``line`` (the header is line 1) set to ``cell``."""
    lines = sweep_file.read_text().splitlines()
    cells = lines[line - 1].split(",")
    cells[lines[0].split(",").index(column)] = cell
    lines[line - 1] = ",".join(cells)
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def edited_json(rows: Rows, tmp_path: Path, index: int, column: str, value: object) -> Path:
    records = [dict(r) for r in rows]
    records[index][column] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(records))
    return path


def test_a_cut_off_sweep_file_names_its_last_line(
    sweep_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = sweep_file.read_text()
    assert text.count("\n") == 25 and len(text.splitlines()[-1]) > 60
    cut = tmp_path / "trunc.csv"
    cut.write_text(text[:-60])  # inside the last row, as `head -c` cuts
    err = refused(cut, capsys)
    assert err.startswith(f"tensorwire: error: sweep: {cut}:25: ") and err.endswith(
        f"cells where the header has {len(COLUMNS)}; the row is cut off or damaged"
    )


def test_a_row_with_missing_cells_names_its_line_counting_empty_lines(
    sweep_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = sweep_file.read_text().splitlines()
    lines[3] = ",".join(lines[3].split(",")[:10])
    bad = tmp_path / "short.csv"
    bad.write_text("\n".join([lines[0], "", *lines[1:]]) + "\n")  # an empty line 2, skipped by the reader
    err = refused(bad, capsys)
    assert (
        err
        == f"tensorwire: error: sweep: {bad}:5: 10 cells where the header has {len(COLUMNS)}; the row is cut off or damaged"
    )


@pytest.mark.parametrize(
    "column, cell, message",
    [
        ("scaling_factor", "", "scaling_factor '' is not allowed; need a finite number >= 0"),
        ("scaling_factor", "inf", "scaling_factor inf is not allowed; need a finite number >= 0"),
        ("iteration_time_s", "nan", "iteration_time_s nan is not allowed; need a finite number > 0"),
        ("iteration_time_s", "-1", "iteration_time_s -1.0 is not allowed; need a finite number > 0"),
        ("speedup_over_ps", "0", "speedup_over_ps 0.0 is not allowed; need a finite number > 0 or an empty cell"),
        ("strategy", "", "strategy '' is not allowed; need text (not empty, valid Unicode)"),
        ("mfu", "0", "mfu 0.0 is not allowed; need a finite number > 0 or an empty cell"),
    ],
)
def test_a_bad_csv_cell_names_its_line_and_column(
    sweep_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, cell: str, message: str
) -> None:
    bad = edited_csv(sweep_file, tmp_path, 6, column, cell)
    assert refused(bad, capsys) == f"tensorwire: error: sweep: {bad}:6: {message}"


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("scaling_factor", None, "scaling_factor null is not allowed; need a finite number >= 0"),
        ("scaling_factor", math.inf, "scaling_factor inf is not allowed; need a finite number >= 0"),
        ("workers", "x", "workers 'x' is not allowed; need an integer from 1 to 4294967295"),
        ("workers", True, "workers True is not allowed; need an integer from 1 to 4294967295"),
        ("iteration_time_s", math.nan, "iteration_time_s nan is not allowed; need a finite number > 0"),
        ("iteration_time_s", -1, "iteration_time_s -1 is not allowed; need a finite number > 0"),
        ("model", "\ud800", "model '\\ud800' is not allowed; need text (not empty, valid Unicode)"),
        ("seq_len", 0, "seq_len 0 is not allowed; need an integer from 1 to 4294967295"),
        ("recompute", "yes", "recompute 'yes' is not allowed; need true or false or an empty cell"),
    ],
)
def test_a_bad_json_value_names_its_record_and_column(
    rows: Rows, tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, value: object, message: str
) -> None:
    bad = edited_json(rows, tmp_path, 3, column, value)
    assert refused(bad, capsys) == f"tensorwire: error: sweep: {bad}[3]: {message}"


def test_a_json_record_without_a_column_is_refused_and_a_page_is_left_as_it_was(
    rows: Rows, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [dict(r) for r in rows]
    del records[2]["seed"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records))
    old = tmp_path / "old.html"
    old.write_text("old")
    result = CliRunner().invoke(report, ["--sweep", str(bad), "--out", str(old), "--no-timeline"])
    assert isinstance(result.exception, tw.InputError)
    assert result.exception.args == ("sweep", f"{bad}[2]: seed is missing; need an integer from 0 to {2**64 - 1}")
    assert old.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "old.html"]


def test_a_whole_sweep_reads_back_from_csv_and_json(rows: Rows, sweep_file: Path, tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    write_rows(good, rows)
    assert read_sweep(good) == rows
    assert len(read_sweep(sweep_file)) == len(rows) == 24


def test_a_workload_file_s_timeline_is_simulated_from_the_file(tmp_path: Path) -> None:
    """``report --workload FILE`` re-simulates the file's rows for the timeline (it looked the
    workload's name up in the zoo and failed after the whole sweep); ``report --sweep`` of a
    sweep of a file, which does not name the file, says how to see it."""
    job = tmp_path / "job.json"
    data = tw.load_model("alexnet").to_dict()
    name = data["name"] = "my_job"  # not a zoo model
    job.write_text(json.dumps(data))
    out, sweep = tmp_path / "r.html", tmp_path / "s.csv"
    grid = ["-n", "2", "-b", "10Gbps", "-s", "ps,ring", "--iterations", "2"]
    assert main(["report", "--workload", str(job), *grid, "--out", str(out)]) == 0
    assert f"model-{name}-timeline-" in out.read_text()
    assert main(["sweep", "--workload", str(job), *grid, "--out", str(sweep)]) == 0
    assert main(["report", "--sweep", str(sweep), "--out", str(out)]) == 0
    page = out.read_text()
    assert "was read from a workload file, which the sweep file does not name" in page
    assert f"model-{name}-timeline-" not in page
