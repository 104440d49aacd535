"""``tensorwire report``: from a sweep file or its own sweep; errors."""

from __future__ import annotations

from pathlib import Path

import tensorwire as tw
from click.testing import CliRunner
from tensorwire.report.cli import report


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
