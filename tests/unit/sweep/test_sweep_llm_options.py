"""``tensorwire sweep --seq-len/--mfu/--recompute``: an LLM's options as axes of the grid,
reaching its workload, recorded in every row, refused for zoo models as ``simulate``
refuses them, and giving the numbers ``simulate`` gives for the same point."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import tensorwire as tw
from tensorwire.cli import main
from tensorwire.report import build_report
from tensorwire.sweep import expand, read_rows, run_grid
from tensorwire.sweep.run import _workload
from tensorwire.workloads import llm

#: A small LLM point whose strategy NCCL's model times (fast), and a flow-level one.
POINT = dict(models="llama3_8b", workers=4, bandwidths="100Gbps", jobs=1)


def test_halving_mfu_doubles_compute_time_and_rows_record_it() -> None:
    rows = run_grid(**POINT, strategies="ddp", mfus="0.2,0.4")
    assert [(r["mfu"], r["seq_len"], r["recompute"]) for r in rows] == [(0.2, 8192, False), (0.4, 8192, False)]
    slow, fast = (r["compute_time_s"] for r in rows)
    assert slow == pytest.approx(2 * fast, rel=1e-6)


def test_recompute_makes_each_block_s_backward_three_forwards() -> None:
    (plain,) = expand("llama3_8b", 4, "100Gbps", "ddp")
    (again,) = expand("llama3_8b", 4, "100Gbps", "ddp", recompute=True)
    assert (plain.recompute, again.recompute) == (False, True)
    args = (plain.model, plain.gpu, plain.batch, plain.compute_speedup, plain.seq_len, plain.mfu)
    without, with_ = _workload(*args, False), _workload(*args, True)
    blocks = [(a, b) for a, b in zip(without.layers, with_.layers) if a.name.startswith("model.layers.")]
    assert len(blocks) == llm.architecture("llama3_8b").layers
    for a, b in blocks:
        assert a.backward_s == pytest.approx(2 * a.forward_s) and b.backward_s == pytest.approx(3 * b.forward_s)
        assert b.forward_s == a.forward_s
    others = [(a, b) for a, b in zip(without.layers, with_.layers) if not a.name.startswith("model.layers.")]
    assert others and all(a == b for a, b in others)  # embeddings, norm, head: no recomputation


def test_seq_len_is_an_axis_that_scales_compute_with_the_flops() -> None:
    rows = run_grid(**POINT, strategies="ddp", seq_lens=[2048, "8192"])
    assert [r["seq_len"] for r in rows] == [2048, 8192]
    short, full = rows
    flops = llm.forward_flops("llama3_8b", 2048) / llm.forward_flops("llama3_8b", 8192)
    assert short["compute_time_s"] / full["compute_time_s"] == pytest.approx(flops, rel=1e-6)
    # Each point is its own scenario: its own baseline.
    assert short["speedup_over_baseline"] == full["speedup_over_baseline"] == 1.0


def test_the_defaults_are_recorded_and_given_values_are_the_defaults() -> None:
    """A row says what ran: the context length and MFU 0.40 when not given, so that giving
    them is the same point (one row), and the same numbers."""
    default = run_grid(**POINT, strategies="ring")
    given = run_grid(**POINT, strategies="ring", seq_lens="8192", mfus="0.4")
    assert default == given
    assert len(run_grid(**POINT, strategies="ring", seq_lens=[None, 8192])) == 1


def _sweep(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    assert main(["sweep", "-n", "4", "-b", "100Gbps", "-j", "1", *args, "-o", str(out)]) == 0
    return out


def test_csv_and_json_have_the_columns_after_batch(tmp_path: Path) -> None:
    grid = ["-m", "llama3_8b", "-s", "ddp", "--seq-len", "1024", "--mfu", "0.5", "--recompute"]
    path = _sweep(tmp_path, "r.csv", *grid)
    (row,) = csv.DictReader(path.read_text().splitlines())
    assert list(row)[2:6] == ["batch", "seq_len", "mfu", "recompute"]
    assert (row["seq_len"], row["mfu"], row["recompute"]) == ("1024", "0.5", "True")
    (record,) = json.loads(_sweep(tmp_path, "r.json", *grid).read_text())
    assert (record["seq_len"], record["mfu"], record["recompute"]) == (1024, 0.5, True)
    assert read_rows(path) == read_rows(tmp_path / "r.json")
    # A zoo model's row leaves them empty (null).
    (zoo,) = json.loads(_sweep(tmp_path, "z.json", "-m", "resnet50", "-s", "ring").read_text())
    assert (zoo["seq_len"], zoo["mfu"], zoo["recompute"]) == (None, None, None)


@pytest.mark.parametrize("strategy", ["ddp", "ring"])
def test_a_row_equals_simulate_for_the_same_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], strategy: str
) -> None:
    llm_args = ["--seq-len", "2048", "--mfu", "0.3", "--recompute"]
    (row,) = read_rows(_sweep(tmp_path, "r.json", "-m", "llama3_8b", "-s", strategy, *llm_args))
    capsys.readouterr()
    assert main(["simulate", "-m", "llama3_8b", "-n", "4", "-b", "100Gbps", "-s", strategy, *llm_args, "--json"]) == 0
    simulated = json.loads(capsys.readouterr().out)
    for key in (
        "iteration_time_s",
        "throughput_samples_per_s",
        "scaling_factor",
        "compute_time_s",
        "compute_interference_s",
        "comm_time_s",
        "exposed_comm_s",
        "max_link_utilization",
    ):
        assert row[key] == simulated[key], key
    # tokens/s: a row's samples/s times its recorded sequence length.
    assert row["throughput_samples_per_s"] * row["seq_len"] == simulated["tokens_per_s"]


@pytest.mark.parametrize(
    "args",
    [["--seq-len", "128"], ["--mfu", "0.5"], ["--recompute"], ["--seq-len", "0", "--mfu", "2"]],
    ids=["seq-len", "mfu", "recompute", "first-of-two"],
)
def test_a_zoo_model_refuses_them_as_simulate_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    common = ["-m", "resnet50", "-n", "4", "-b", "25Gbps"]
    assert main(["simulate", *common, "-s", "ring", *args]) == 2
    simulate_err = capsys.readouterr().err
    out = tmp_path / "r.csv"
    # With an LLM beside it too: the zoo model still refuses (as `compare` does).
    for models in ("resnet50", "resnet50,llama3_8b"):
        common[1] = models
        assert main(["sweep", *common, "-s", "ring", *args, "-o", str(out)]) == 2
        captured = capsys.readouterr()
        assert captured.err == simulate_err and captured.err.count("\n") == 1, captured.err
        assert captured.out == "" and not out.exists()
    assert simulate_err.startswith(f"tensorwire: error: {args[0][2:].replace('-', '_')}: only for the LLMs")


@pytest.mark.parametrize(
    "args",
    [["--seq-len", "0"], ["--seq-len", "9000"], ["--mfu", "1.5"], ["--mfu", "0"], ["--mfu", "nan"]],
)
def test_bad_llm_values_are_worded_as_simulate_words_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    common = ["-m", "llama3_8b", "-n", "4", "-b", "25Gbps", "-s", "ddp"]
    assert main(["simulate", *common, *args]) == 2
    simulate_err = capsys.readouterr().err
    assert main(["sweep", *common, *args, "-o", str(tmp_path / "r.csv")]) == 2
    assert capsys.readouterr().err == simulate_err
    assert not any(tmp_path.iterdir())


def test_text_that_is_not_a_number_names_the_field() -> None:
    with pytest.raises(tw.InputError) as e:
        expand("llama3_8b", 4, "25Gbps", "ddp", seq_lens="2048,long")
    assert e.value.args == ("seq_len", "'long' is not an integer")
    with pytest.raises(tw.InputError) as e:
        expand("llama3_8b", 4, "25Gbps", "ddp", mfus="0.4,high")
    assert e.value.args == ("mfu", "'high' is not a number")


def test_a_point_s_error_names_its_llm_options() -> None:
    (config,) = expand("llama3_8b", 4, "25Gbps", "ddp", seq_lens=1024, mfus=0.5, recompute=True)
    assert config.describe().startswith("llama3_8b (h100, batch 1 x 1024 tokens, MFU 0.5, recompute, compute x1) on 4")


def test_a_file_of_an_earlier_version_reads_with_the_defaults(tmp_path: Path) -> None:
    rows = run_grid("resnet50,llama3_8b", 4, "100Gbps", "ring", jobs=1)
    older = [{k: v for k, v in r.items() if k not in ("seq_len", "mfu", "recompute")} for r in rows]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(older))
    assert read_rows(path) == rows


def test_the_report_renders_the_options(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    rows = run_grid("llama3_8b", "4,8", "100Gbps,400Gbps", "ddp,fsdp", seq_lens=2048, mfus=0.3, recompute=True)
    page = build_report(rows, with_timeline=False)
    assert "h100 batch 1 x 2048 tokens, MFU 0.3, recompute, compute x1" in page
    assert "tokens per sequence: 2048; MFU: 0.3; recompute: yes" in page
    # Through a file and the report's own reading of it.
    path = tmp_path / "s.parquet" if _has_pyarrow() else tmp_path / "s.csv"
    assert (
        main(["sweep", "-m", "llama3_8b", "-n", "4", "-b", "100Gbps", "-s", "ddp", "--mfu", "0.3", "-o", str(path)])
        == 0
    )
    out = tmp_path / "r.html"
    assert main(["report", "--sweep", str(path), "-o", str(out)]) == 0
    assert "x 8192 tokens, MFU 0.3, compute x1" in out.read_text()
    assert main(["report", "--sweep", str(path), "--seq-len", "2048", "-o", str(out)]) == 2


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        return False
    return True
