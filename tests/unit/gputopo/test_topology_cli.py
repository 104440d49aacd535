"""``tensorwire topology``: the JSON contract, the table and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from tensorwire import InputError
from tensorwire.gputopo import Topology
from tensorwire.gputopo.cli import main, topology

DATA = Path(__file__).parent / "data"


def run_json(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(topology, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert isinstance(out, dict)
    return out


def test_json_contract_for_a_preset() -> None:
    out = run_json("--preset", "p3.16xlarge")
    assert {"gpus", "links", "trees"} <= set(out)
    assert out["gpus"] == 8 and out["source"] == "p3.16xlarge"
    assert out["penalty"] == 0.7 and out["array_bound"] == 10_000_000
    links = out["links"]
    assert isinstance(links, list) and len(links) == 28
    assert [0, 3, 3] in links and [0, 1, 2] in links and [0, 5, 1] in links
    assert all(len(link) == 3 and link[0] < link[1] for link in links)
    trees = out["trees"]
    assert isinstance(trees, list) and len(trees) == 8  # one per GPU by default
    for k, tree in enumerate(trees):
        assert tree["root"] == k
        edges = tree["edges"]
        assert len(edges) == 7 and all(len(e) == 2 for e in edges)
        assert sorted(child for _, child in edges) == sorted(set(range(8)) - {k})
        assert len(tree["levels"]) == 7 and max(tree["levels"]) == 3
    assert trees[0]["weight"] == 20
    # The same as the library's trees.
    lib = Topology.preset("p3.16xlarge").trees()
    assert trees == [t.to_dict() for t in lib]


def test_json_options_trees_penalty_and_adjacency_file(tmp_path: Path) -> None:
    out = run_json("--preset", "dgx-a100", "--trees", "2", "--penalty", "0.5")
    assert out["penalty"] == 0.5 and len(out["trees"]) == 2  # type: ignore[arg-type]
    path = tmp_path / "four.json"
    path.write_text(json.dumps({"gpus": 4, "adjacency": [[0, 3, 1, 1], [3, 0, 1, 1], [1, 1, 0, 2], [1, 1, 2, 0]]}))
    out = run_json("--adjacency", str(path), "--trees", "1")
    assert out["gpus"] == 4 and out["links"] == [[0, 1, 3], [0, 2, 1], [0, 3, 1], [1, 2, 1], [1, 3, 1], [2, 3, 2]]
    # The double NVLink 0-1 and the single 2-3 at level 2, bridged by PCIe 0-2 at level 1.
    assert out["trees"] == [
        {"root": 0, "edges": [[0, 2], [0, 1], [2, 3]], "levels": [1, 2, 2], "weight": 6, "method": "kernighan-lin"}
    ]
    # The JSON output is itself a valid adjacency file.
    again = tmp_path / "again.json"
    again.write_text(json.dumps(out))
    assert run_json("--adjacency", str(again), "--trees", "1") == {**out, "source": str(again)}


def test_table_shows_weights_and_trees() -> None:
    result = CliRunner().invoke(topology, ["--preset", "p3.16xlarge", "--trees", "2"], catch_exceptions=False)
    assert result.exit_code == 0
    text = result.output
    assert "GPU links: p3.16xlarge" in text
    assert "8 × NV2+ (3), 8 × NV1 (2), 12 × PCIe (1)" in text
    assert "L1: 0→1" in text and "exhaustive" in text


def test_detect_from_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "nvidia-smi"
    script.write_text(f"#!/bin/sh\nexec /bin/cat '{DATA / 'dgx1v.txt'}'\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    for args in ((), ("--detect",)):
        out = run_json(*args)
        assert out["source"] == "nvidia-smi" and out["gpus"] == 8


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--preset", "p9.99xlarge"], "preset"),
        (["--preset", "pcie-8", "--detect"], "topology"),
        (["--preset", "pcie-8", "--adjacency", "x.json"], "topology"),
        (["--adjacency", "MISSING"], "adjacency"),
    ],
)
def test_bad_input_raises_input_error_naming_the_field(args: list[str], field: str) -> None:
    with pytest.raises(InputError) as e:
        topology.main(args=args, standalone_mode=False)
    assert e.value.args[0] == field


def test_errors_are_one_line_and_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"gpus": 2, "adjacency": [[0, 1], [1]]}')
    assert main(["--adjacency", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == "tensorwire: error: adjacency: bad.json: row 1 has 1 entries; the matrix must be square (2 x 2)\n"
    assert main(["--preset", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tensorwire: error: preset: ") and err.count("\n") == 1
    assert main(["--penalty", "1.5", "--preset", "pcie-8"]) == 2
    assert "--penalty" in capsys.readouterr().err


def test_runs_as_a_module() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "tensorwire.gputopo.cli", "--preset", "pcie-8", "--trees", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["trees"][0]["weight"] == 7


def test_registered_in_the_main_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from tensorwire.cli.app import cli

    if "topology" not in cli.commands:
        pytest.skip("`topology` is not registered in tensorwire.cli.app yet")
    from tensorwire.cli import main as tw_main

    assert tw_main(["topology", "--preset", "p3.16xlarge", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpus"] == 8
    assert tw_main(["topology", "--preset", "nope"]) == 2


def test_a_tree_count_past_the_cores_integers_is_one_line() -> None:
    # --trees 10**23 ended in an OverflowError traceback (found by the fuzz test).
    import subprocess
    import sys

    for count in ("99999999999999999999999", "100000"):
        p = subprocess.run(
            [sys.executable, "-m", "tensorwire", "topology", "--preset", "p3.16xlarge", "--trees", count],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (
            p.returncode == 2 and p.stderr.startswith("tensorwire: error: trees: ") and len(p.stderr.splitlines()) == 1
        )
