"""Input files the CLI reads besides workloads' own readers: pipes, devices, the stragglers'
measured multipliers, sweep files. None waits for ever, none reads without bound, each
refusal is one line naming the option, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parents[1] / "workloads" / "data"
RUN = ("simulate", "-m", "resnet50", "-n", "4", "-b", "25Gbps", "-s", "ring")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )


def one_line(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ("simulate", "-n", "4", "-b", "25Gbps", "-s", "ring", "--workload", "fifo"),
        ("import-trace", "fifo", "-o", "out.json"),
    ],
)
def test_a_pipe_given_as_a_workload_is_refused_with_the_option_that_names_its_format(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    # Detecting the format read the pipe's head with a blocking open (no writer: a hang),
    # and with a writer (`<(cat w.json)`) the reader then found the pipe empty.
    os.mkfifo(tmp_path / "fifo")
    line = one_line(run(*args, cwd=tmp_path))
    assert "workload_format" in line and "--workload-format" in line, line
    assert not (tmp_path / "out.json").exists()


def test_empirical_stragglers_draw_from_the_files_multipliers(tmp_path: Path) -> None:
    # Listed in --help and docs, but the core's binding had no `empirical` and refused it.
    (tmp_path / "times.txt").write_text("1\n2\n3\n")  # normalised: 0.5, 1, 1.5
    nominal = run(*RUN, "--json", cwd=tmp_path)
    drawn = run(*RUN, "--stragglers", "empirical:times.txt", "--json", cwd=tmp_path)
    assert nominal.returncode == 0 and drawn.returncode == 0, drawn.stderr
    a, b = json.loads(nominal.stdout), json.loads(drawn.stdout)
    # The slowest of 4 workers' draws each iteration: 1.5 unless all drew less.
    assert a["compute_time_s"] * 0.5 <= b["compute_time_s"] <= a["compute_time_s"] * 1.5 + 1e-12
    assert b["iteration_time_s"] > a["iteration_time_s"]
    assert run(*RUN, "--stragglers", "empirical:times.txt", "--json", cwd=tmp_path).stdout == drawn.stdout


@pytest.mark.parametrize(
    "target, message",
    [
        ("fifo", "expected positive numbers"),  # a pipe without a writer reads as empty
        ("/dev/zero", "is a device, not a file"),
        ("binary", "not UTF-8 text"),
        ("", "empirical needs a file of multipliers"),
    ],
)
def test_the_stragglers_file_is_read_bounded_and_refused_in_one_line(tmp_path: Path, target: str, message: str) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "binary").write_bytes(b"\x00\xff\xfe" * 10)
    line = one_line(run(*RUN, "--stragglers", f"empirical:{target}", cwd=tmp_path))
    assert line.startswith("tensorwire: error: stragglers:") and message in line, line


@pytest.mark.parametrize("target, message", [("fifo.csv", "no rows"), ("zero.csv", "is a device, not a file")])
def test_report_reads_a_sweep_file_without_waiting_or_filling_memory(tmp_path: Path, target: str, message: str) -> None:
    os.mkfifo(tmp_path / "fifo.csv")
    (tmp_path / "zero.csv").symlink_to("/dev/zero")
    line = one_line(run("report", "--sweep", target, "-o", "r.html", cwd=tmp_path))
    assert "sweep" in line and message in line, line
    assert not (tmp_path / "r.html").exists()


def test_sweep_refuses_to_write_its_results_over_its_workload_file(tmp_path: Path) -> None:
    # import-trace, calibrate and simulate --trace refused this; sweep replaced the file.
    workload = tmp_path / "w.json"
    assert run("import-trace", str(DATA / "ddp_tiny_rank0.json.gz"), "-o", str(workload), cwd=tmp_path).returncode == 0
    before = workload.read_bytes()
    line = one_line(
        run("sweep", "--workload", "w.json", "-n", "4", "-b", "25Gbps", "-s", "ring", "-o", "w.json", cwd=tmp_path)
    )
    assert line == "tensorwire: error: out: w.json is one of the workload files; write the output elsewhere", line
    assert workload.read_bytes() == before


def test_more_module_copies_than_a_workload_holds_are_refused_before_they_are_built() -> None:
    # 10^20 copies were built in Python first (1.5 GB and still growing after 30 s).
    from tensorwire import _core, load_model
    from tensorwire._core import InputError
    from tensorwire.workloads.synthetic import repeat_block

    w = load_model("inception_v3")
    block = [layer for layer in w.layers if layer.name.startswith("Mixed_6e.")]
    tensors = sum(len(layer.tensors) for layer in block)
    # Room for the layers and for the tensors (the bound counted layers only, and a copy
    # count it suggested was refused for its tensors after 16 s).
    room = min((_core.MAX_LAYERS - len(w.layers)) // len(block), (_core.MAX_LAYERS - len(w.tensors)) // tensors)
    assert tensors > len(block) and room < (_core.MAX_LAYERS - len(w.layers)) // len(block)
    assert len(repeat_block(w, "Mixed_6e", 2).layers) == len(w.layers) + 2 * len(block)
    with pytest.raises(InputError, match=f"at most {room:,}"):
        repeat_block(w, "Mixed_6e", room + 1)
    with pytest.raises(InputError, match="would pass the 1,048,576 layers and tensors"):
        repeat_block(w, "Mixed_6e", 10**20)


def test_a_comparison_in_which_every_strategy_was_refused_exits_with_2(tmp_path: Path) -> None:
    p = run(
        "compare", "-m", "resnet50", "-n", "8", "-b", "25Gbps", "--strategies", "ps", "--max-flows", "1", cwd=tmp_path
    )
    assert p.returncode == 2, p.stderr
    assert "refused [1]" in p.stdout  # the table still says why
    assert p.stderr.strip().splitlines()[-1].startswith("tensorwire: error: max_flows: every strategy was refused")


@pytest.mark.parametrize(
    "args, start",
    [
        (("profile", "resnet18", "-o", "p.json", "--input-shape", "99999999999999999999x1x1"), "input_shape: "),
        (("profile", "resnet18", "-o", "p.json", "--input-shape", "3x999999x999999"), "input_shape: "),
        (
            ("profile", "resnet18", "-o", "p.json", "--batch", "99999999999", "--iterations", "1", "--warmup", "0"),
            "memory: ",
        ),
        (("measure", "-m", "zoo:resnet50", "--size-scale", "1e308"), "Invalid value for '--size-scale'"),
        (("measure", "-m", "zoo:resnet50", "--time-scale", "1e308"), "Invalid value for '--time-scale'"),
        (("bench", "partial", "-p", "2", "-d", "1e300s"), "delay: "),
        (("bench", "partial", "-p", "2", "--numel", "99999999999999"), "Invalid value for '--numel'"),
    ],
)
def test_runtime_commands_refuse_sizes_past_the_machine_in_one_line(
    tmp_path: Path, args: tuple[str, ...], start: str
) -> None:
    # Each was a traceback: an OverflowError, a TypeError, torch's allocator's RuntimeError.
    pytest.importorskip("torch")
    line = one_line(run(*args, cwd=tmp_path))
    assert line.startswith(f"tensorwire: error: {start}"), line
    assert not (tmp_path / "p.json").exists()


def test_a_workload_file_with_a_utf8_byte_order_mark_is_read(tmp_path: Path) -> None:
    # Some Windows editors write one; it was read as "not JSON, so a five-attribute trace".
    plain = tmp_path / "w.json"
    assert run("import-trace", str(DATA / "ddp_tiny_rank0.json.gz"), "-o", str(plain), cwd=tmp_path).returncode == 0
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    a = run("simulate", "--workload", "w.json", "-n", "4", "-b", "25Gbps", "-s", "ring", "--json", cwd=tmp_path)
    b = run("simulate", "--workload", "bom.json", "-n", "4", "-b", "25Gbps", "-s", "ring", "--json", cwd=tmp_path)
    assert a.returncode == b.returncode == 0, b.stderr
    assert json.loads(a.stdout)["iteration_time_s"] == json.loads(b.stdout)["iteration_time_s"]


def test_a_trace_is_never_written_over_the_stragglers_file(tmp_path: Path) -> None:
    # The multipliers file was replaced by the trace, exit 0.
    (tmp_path / "m.json").write_text("1\n2\n")
    line = one_line(run(*RUN, "--stragglers", "empirical:m.json", "--trace", "m.json", cwd=tmp_path))
    assert line == "tensorwire: error: trace: m.json is one of the stragglers files; write the output elsewhere", line
    assert (tmp_path / "m.json").read_text() == "1\n2\n"


def test_multipliers_near_the_largest_float_are_normalised_without_overflow(tmp_path: Path) -> None:
    # Their mean overflowed to inf: "expected positive numbers" for two valid values.
    (tmp_path / "big.txt").write_text("1e308\n1e308\n")
    (tmp_path / "one.txt").write_text("1\n1\n")
    big = run(*RUN, "--stragglers", "empirical:big.txt", "--json", cwd=tmp_path)
    one = run(*RUN, "--stragglers", "empirical:one.txt", "--json", cwd=tmp_path)
    assert big.returncode == 0, big.stderr
    assert json.loads(big.stdout)["iteration_time_s"] == json.loads(one.stdout)["iteration_time_s"]


@pytest.mark.parametrize(
    "args, name, text",
    [
        (
            ("simulate", "-n", "4", "-b", "25Gbps", "-s", "ring", "--workload", "w.json"),
            "w.json",
            '{"format": "tensorwire-workload/1", "name": "m", "batch_size": 1' + "0" * 4400 + ', "layers": []}',
        ),
        (("topology", "--adjacency", "a.json"), "a.json", '{"gpus": 1' + "0" * 4400 + "}"),
        (
            ("import-trace", "k.json", "-o", "out.json"),
            "k.json",
            '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1' + "0" * 4400 + ', "dur": 1}]}',
        ),
        (("report", "--sweep", "s.json", "-o", "r.html"), "s.json", "[" * 100_000 + "]" * 100_000),
    ],
)
def test_json_past_pythons_integer_or_nesting_limits_is_one_line(
    tmp_path: Path, args: tuple[str, ...], name: str, text: str
) -> None:
    # Integers of more than 4,300 digits raised ValueError (a traceback); the sweep reader
    # raised RecursionError on deep nesting.
    (tmp_path / name).write_text(text)
    line = one_line(run(*args, cwd=tmp_path))
    assert name in line and ("4,300 digits" in line or "nested too deeply" in line), line
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "r.html").exists()


def test_a_sweep_csv_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    # Saved again by a spreadsheet on Windows: "missing columns model" (the BOM joined the
    # first column's name).
    p = run("sweep", "-m", "resnet50", "-n", "4", "-b", "25Gbps", "-s", "ring", "-o", "s.csv", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + (tmp_path / "s.csv").read_bytes())
    p = run("report", "--sweep", "bom.csv", "-o", "r.html", cwd=tmp_path)
    assert p.returncode == 0 and (tmp_path / "r.html").exists(), p.stderr


@pytest.mark.parametrize("name", ["m\u001b[2J", "m\u0000", "m\u009b31m", "m\u202ex"])  # U+202E: right-to-left override
def test_a_name_with_control_characters_is_refused_before_it_reaches_the_terminal(tmp_path: Path, name: str) -> None:
    # An ESC in a workload file's name was printed raw in simulate's table title.
    doc = {
        "format": "tensorwire-workload/1",
        "name": name,
        "batch_size": 1,
        "layers": [{"name": "a", "forward_s": 0.001, "backward_s": 0.002, "tensors": [{"name": "w", "bytes": 1000}]}],
    }
    (tmp_path / "w.json").write_text(json.dumps(doc))
    line = one_line(run("simulate", "--workload", "w.json", "-n", "4", "-b", "25Gbps", "-s", "ring", cwd=tmp_path))
    assert "workload.name" in line and "control character" in line, line
    assert "\u001b" not in line and "\u0000" not in line


@pytest.mark.parametrize(
    "args, start",
    [
        (("--overhead", "1e300s"), "tensorwire: error: overhead: "),
        (("--stragglers", "fixed:1,1,1,1e300"), "tensorwire: error: stragglers: "),
        (("--batch", "4294967295"), "tensorwire: error: batch: 4294967295 makes an iteration's compute"),
        (
            ("--add-modules", "Mixed_5d:3"),
            "tensorwire: error: add_modules: resnet50 has no block 'Mixed_5d'; the blocks",
        ),
    ],
)
def test_errors_name_the_option_the_command_line_gave(tmp_path: Path, args: tuple[str, ...], start: str) -> None:
    # They named the API's arguments (per_message_overhead, slowdowns, modules) or, for a
    # huge batch, the first layer's forward_s.
    line = one_line(run(*RUN, *args, cwd=tmp_path))
    assert line.startswith(start), line


@pytest.mark.parametrize(
    "text",
    ["1,2,3\n", "# per-iteration compute (s)\n1\n2  # slow one\n3\n", "1, 2\r\n3\r\n", "1 2\t3"],
)
def test_empirical_files_take_commas_and_comments(tmp_path: Path, text: str) -> None:
    # Commas (as fixed: takes) and comments gave "expected positive numbers", nothing more.
    (tmp_path / "times.txt").write_text("1\n2\n3\n")
    (tmp_path / "other.txt").write_text(text)
    plain = run(*RUN, "--stragglers", "empirical:times.txt", "--json", cwd=tmp_path)
    other = run(*RUN, "--stragglers", "empirical:other.txt", "--json", cwd=tmp_path)
    assert plain.returncode == 0 and other.stdout == plain.stdout, other.stderr


@pytest.mark.parametrize(
    "text, message",
    [
        ("time_s\n0.1\n", "line 1: 'time_s' is not a positive number; expected positive numbers separated by "
         "whitespace, commas or newlines (# starts a comment; the decimal mark is a point)"),
        ("0.1\n0.2,0,0.3\n", "line 2: '0' is not a positive number;"),
        ("1,5\n", "line 1: '1,5' reads as one number with a decimal comma or as two numbers; write a decimal point"),
        ("# nothing\n", "no numbers in the file;"),
    ],
)  # fmt: skip
def test_a_bad_empirical_file_names_the_line_and_what_is_expected(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "times.txt").write_text(text)
    line = one_line(run(*RUN, "--stragglers", "empirical:times.txt", cwd=tmp_path))
    assert line.startswith("tensorwire: error: stragglers: 'empirical:times.txt': ") and message in line, line


def test_one_random_straggler_per_iteration_is_seed_002s_injection(tmp_path: Path) -> None:
    """``--stragglers one:M``: a blocking all-reduce waits for the slow worker every
    iteration, whichever it is, so its iteration is that of one fixed M-times-slower worker;
    ``one:1`` is no straggler; a bad M is one line naming ``stragglers``."""
    base = ("simulate", "-m", "resnet50", "-n", "4", "-b", "10Gbps", "-s", "ring", "--iterations", "20", "--json")

    def time_with(stragglers: str) -> float:
        p = run(*base, "--stragglers", stragglers, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        return float(json.loads(p.stdout)["iteration_time_s"])

    assert time_with("one:2") == pytest.approx(time_with("fixed:2,1,1,1"), rel=1e-6)
    assert time_with("one:1") == time_with("none")
    for bad in ("one", "one:0", "one:x", "one:-2", "one:inf"):
        line = one_line(run(*base, "--stragglers", bad, cwd=tmp_path))
        assert "stragglers" in line and "one:2" in line, line


def test_fixed_stragglers_take_runs_of_one_multiplier(tmp_path: Path) -> None:
    """``fixed:MxN``: N workers at M in a row, so one slow node is said without a multiplier
    per GPU; the same run as the multipliers written out; a bad count or more multipliers
    than workers is one line naming ``stragglers`` (a huge count is refused before it is
    expanded)."""
    base = ("simulate", "-m", "resnet50", "-n", "8", "-b", "10Gbps", "-s", "ring", "--json")

    def time_with(stragglers: str) -> float:
        p = run(*base, "--stragglers", stragglers, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        return float(json.loads(p.stdout)["iteration_time_s"])

    assert time_with("fixed:1.5x4,1x4") == time_with("fixed:1.5,1.5,1.5,1.5,1,1,1,1")
    assert time_with("fixed:2,1x7") == time_with("fixed:2,1,1,1,1,1,1,1") > time_with("none")
    for bad, message in [
        ("fixed:1.5x4,1x5", "more multipliers than workers (8)"),
        ("fixed:1x99999999999999999999", "more multipliers than workers (8)"),
        ("fixed:1.5x4,1x3", "one multiplier per worker (8), got 7"),
        ("fixed:1.5x0,1x8", "needs a count >= 1 after x"),
        ("fixed:1.5x2.5,1x6", "needs a count >= 1 after x"),
        ("fixed:0x8", "MxN"),
    ]:
        line = one_line(run(*base, "--stragglers", bad, cwd=tmp_path))
        assert "stragglers" in line and message in line, (bad, line)
