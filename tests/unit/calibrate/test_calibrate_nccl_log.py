"""`calibrate nccl-tests` reads NCCL's own logging in the log: the NCCL_ALGO / NCCL_PROTO the run
was measured with (`NCCL_DEBUG=INFO`) and what NCCL ran for each size
(`NCCL_DEBUG_SUBSYS=TUNING`), in the formats NCCL 2.20-2.30 print them (`src/enqueue.cc`,
`src/graph/tuning.cc`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorwire._core import InputError
from tensorwire.calibrate.fit import fit
from tensorwire.calibrate.nccl_log import ALGOS, PROTOS, allows, for_collective
from tensorwire.calibrate.predict import calibration_supported
from tensorwire.calibrate.reading import parse_log
from tensorwire.cli import main

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nccl-tests"
H100 = FIXTURES / "azure-nd-h100-v5-allreduce.log"  # 8 x H100, all-reduce 1 MiB-8 GiB
ALL_GATHER = FIXTURES / "v2.13.0-all_gather.log"  # 8 x H100, all-gather 1-8 MiB
A3_MEGA = FIXTURES / "gcp-a3-mega-2x8-allreduce.log"  # 2 x 8 H100, all-reduce 1 MiB-8 GiB
NATIVE = calibration_supported()
#: NCCL's prefix of an INFO line (`src/debug.cc`: host:pid:tid [device]).
PREFIX = "node0:4100:4100 [0] NCCL INFO "


def _with_nccl_lines(tmp_path: Path, fixture: Path, lines: list[str], name: str = "log.txt") -> str:
    """``fixture`` with NCCL INFO ``lines`` before its column header, where NCCL prints them (at
    init and as the first collectives launch)."""
    text = fixture.read_text().splitlines()
    at = next(i for i, line in enumerate(text) if line.lstrip("# ").startswith("size") and "busbw" in line)
    path = tmp_path / name
    path.write_text("\n".join(text[:at] + [PREFIX + line for line in lines] + text[at:]) + "\n")
    return str(path)


def _sizes(fixture: Path) -> list[int]:
    return [row.size for row in parse_log(str(fixture)).rows]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_each_release_format_is_read_at_the_size_of_its_table_row(tmp_path: Path) -> None:
    """2.24 on names the algorithm and counts all-gather's bytes per rank (x 8 ranks is the
    table's size); 2.23 and 2.20-2.22 number it and count the whole buffer."""
    per_rank = 1 << 17  # 1 MiB / 8 ranks
    log = _with_nccl_lines(
        tmp_path,
        ALL_GATHER,
        [
            f"AllGather: {per_rank} Bytes -> Algo RING proto LL channel{{Lo..Hi}}={{0..7}}",
            "AllGather: 2097152 Bytes -> Algo 6 proto 2 time 40.1",  # 2.23: PAT, Simple
            "4194304 Bytes -> Algo 1 proto 1 time 51.0",  # 2.20-2.22: ring, LL128
            "AllReduce: 8388608 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..15}",  # another function
            "NCCL_ALGO set by environment to Ring,PAT",
        ],
    )
    run = parse_log(log, "allgather")  # this table prints no redop: all-gather or all-to-all
    assert {size: (c.algo, c.proto, c.channels) for size, c in run.choices.items()} == {
        1 << 20: ("ring", "ll", 8),
        2 << 20: ("pat", "simple", None),
        4 << 20: ("ring", "ll128", None),
    }
    assert run.nccl_algo is not None and run.nccl_algo.value == "ring+pat" and run.choice_notes == ()


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALGOS), st.sampled_from(PROTOS), st.sampled_from(["named", "numbered"]))
def test_every_algorithm_and_protocol_reads_by_name_and_by_index(algo: str, proto: str, form: str) -> None:
    """NCCL's names (`ncclAlgoToString`: NVLS_TREE, COLLNET_DIRECT; `ncclProtoToString`) and
    indices (`NCCL_ALGO_*`, `NCCL_PROTO_*`) give the same choice."""
    import tempfile

    nccl_names = {"collnetdirect": "COLLNET_DIRECT", "collnetchain": "COLLNET_CHAIN", "nvlstree": "NVLS_TREE"}
    if form == "named":
        line = (
            f"AllReduce: 1048576 Bytes -> Algo {nccl_names.get(algo, algo.upper())} proto {proto.upper()} "
            "channel{Lo..Hi}={2..5}"
        )
    else:
        line = f"AllReduce: 1048576 Bytes -> Algo {ALGOS.index(algo)} proto {PROTOS.index(proto)} time 9.5"
    with tempfile.TemporaryDirectory() as d:
        choice = parse_log(_with_nccl_lines(Path(d), H100, [line])).choices[1 << 20]
    assert (choice.algo, choice.proto, choice.channels) == (algo, proto, 4 if form == "named" else None)


def test_unknown_or_conflicting_launches_are_not_taken_and_said(tmp_path: Path) -> None:
    log = _with_nccl_lines(
        tmp_path,
        H100,
        [
            "AllReduce: 1048576 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..7}",
            "AllReduce: 1048576 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..7}",
            "AllReduce: 2097152 Bytes -> Algo 9 proto 2 time 20.0",
            "AllReduce: 4194304 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..15}",
            "AllReduce: 4194304 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..15}",  # the same again
            "AllReduce: 12345 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..7}",  # no such row
        ],
    )
    run = parse_log(log)
    assert set(run.choices) == {4 << 20}
    assert len(run.choice_notes) == 2
    assert "ran tree/ll for a size it ran ring/ll" in run.choice_notes[0]
    assert "algorithm 9" in run.choice_notes[1]


@pytest.mark.parametrize(
    "value, collective, expected",
    [
        ("Ring,Tree", "allreduce", "ring+tree"),
        ("ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring", "allreduce", "tree+collnetdirect"),
        ("ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring", "allgather", "ring+collnetdirect"),
        ("^LL128;allreduce:LL128", "reducescatter", "^ll128"),
        ("^LL128;AllReduce:LL128", "allreduce", "ll128"),
        ("allreduce:tree", "allgather", ""),
        ("allgather:ring;allgather:pat", "allgather", "pat"),
    ],
)
def test_per_function_settings_apply_as_nccl_parses_them(value: str, collective: str, expected: str) -> None:
    assert for_collective(value, collective) == expected


@settings(max_examples=100, deadline=None)
@given(st.sets(st.sampled_from(ALGOS), min_size=1), st.booleans(), st.sampled_from(ALGOS))
def test_a_restriction_allows_exactly_its_names_or_all_but_them(names: set[str], negate: bool, algo: str) -> None:
    restriction = ("^" if negate else "") + "+".join(sorted(names))
    assert allows(restriction, algo) == ((algo in names) != negate)


def test_ranks_that_logged_different_settings_are_refused(tmp_path: Path) -> None:
    log = _with_nccl_lines(
        tmp_path, H100, ["NCCL_PROTO set by environment to Simple", "NCCL_PROTO set by environment to LL128"]
    )
    with pytest.raises(InputError, match=r"log\.txt:\d+: NCCL_PROTO set to 'LL128' here and to 'Simple' at line"):
        parse_log(log)


@pytest.mark.skipif(not NATIVE, reason="the core has no calibration options")
def test_a_logged_setting_fits_as_the_same_option_given() -> None:
    """NCCL_ALGO=Ring,Tree and NCCL_PROTO=Simple in the log fit exactly as --algo/--proto."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        logged = parse_log(
            _with_nccl_lines(
                Path(d),
                A3_MEGA,
                ["NCCL_ALGO set by environment to Tree,Ring", "NCCL_PROTO set by environment to Simple"],
            )
        )
    from tensorwire.calibrate.fit import logged_restriction

    algo, proto = logged_restriction([logged], None, None)
    assert (algo, proto) == ("tree+ring", "simple")
    assert logged_restriction([logged], "ring+tree", "simple") == (algo, proto)  # the same names, given
    a = fit([logged], "rail:node=dgx-h100", None, "rdma", algo, proto)
    b = fit([parse_log(str(A3_MEGA))], "rail:node=dgx-h100", None, "rdma", "ring+tree", "simple")
    assert a.calibration == b.calibration
    assert [r.after.seconds for r in a.rows] == [r.after.seconds for r in b.rows]


@pytest.mark.skipif(not NATIVE, reason="the core has no calibration options")
def test_rows_run_what_nccl_logged_and_fit_as_if_restricted_to_it(tmp_path: Path) -> None:
    """Every row logged as ring/Simple fits exactly as the restriction to ring/Simple; where
    NCCL's model (2.30.7) would choose otherwise, the row says so."""
    lines = [f"AllReduce: {size} Bytes -> Algo RING proto SIMPLE channel{{Lo..Hi}}={{0..23}}" for size in _sizes(H100)]
    run = parse_log(_with_nccl_lines(tmp_path, H100, lines))
    logged = fit([run], "rail:node=dgx-h100", None, "rdma")
    forced = fit([parse_log(str(H100))], "rail:node=dgx-h100", None, "rdma", "ring", "simple")
    assert logged.calibration == forced.calibration
    assert [r.after.seconds for r in logged.rows] == [r.after.seconds for r in forced.rows]
    assert all(r.logged is not None and (r.after.algo, r.after.proto) == ("ring", "simple") for r in logged.rows)
    own = {r.model_choice.algo for r in logged.rows if r.model_choice is not None}
    assert "nvls" in own  # NCCL's model runs NVLS on 8 H100 from 2 MiB up: the log says ring


def test_a_logged_choice_the_model_cannot_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _with_nccl_lines(
        tmp_path, A3_MEGA, ["AllReduce: 1048576 Bytes -> Algo COLLNET_DIRECT proto SIMPLE channel{Lo..Hi}={0..15}"]
    )
    out = tmp_path / "c.json"
    rc, stdout, err = _run(capsys, "calibrate", "nccl-tests", log, "-o", str(out))
    assert rc == 2 and stdout == "" and err.count("\n") == 1 and not out.exists()
    assert err.startswith("tensorwire: error: log: ") and "log.txt:" in err and "sharp=true" in err, err


@pytest.mark.parametrize(
    "lines, args, field, says",
    [
        (["NCCL_ALGO set by environment to Ring"], ["--algo", "Tree"], "algo", "differs from NCCL_ALGO=ring"),
        (
            ["AllReduce: 1048576 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..7}"],
            ["--proto", "Simple"],
            "log",
            "outside the restriction proto=simple",
        ),
    ],
)
def test_an_option_against_the_log_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], args: list[str], field: str, says: str
) -> None:
    rc, stdout, err = _run(capsys, "calibrate", "nccl-tests", _with_nccl_lines(tmp_path, H100, lines), *args)
    assert rc == 2 and stdout == "" and err.count("\n") == 1
    assert err.startswith(f"tensorwire: error: {field}: ") and says in err, err


def test_logs_of_different_settings_are_not_fitted_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = _with_nccl_lines(tmp_path, H100, ["NCCL_ALGO set by environment to Ring"], "one.log")
    other = _with_nccl_lines(tmp_path, A3_MEGA, ["NCCL_ALGO set by environment to Tree"], "other.log")
    rc, _, err = _run(capsys, "calibrate", "nccl-tests", one, other)
    assert rc == 2 and err.count("\n") == 1 and "one.log" in err and "other.log" in err, err


@pytest.mark.skipif(not NATIVE, reason="the core has no calibration options")
def test_the_report_and_json_say_what_nccl_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        "NCCL_PROTO set by environment to Simple",
        "AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..23}",
        "AllReduce: 8589934592 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..15}",
    ]
    log = _with_nccl_lines(tmp_path, H100, lines)
    rc, stdout, _ = _run(capsys, "calibrate", "nccl-tests", log)
    assert rc == 0
    assert "logged NCCL_PROTO (simple)" in stdout and "NCCL logged what it ran for 2 of 14 rows" in stdout
    assert "simulate with -s nccl:proto=simple" in stdout
    rc, stdout, _ = _run(capsys, "calibrate", "nccl-tests", log, "--json")
    rows = json.loads(stdout)["rows"]
    assert rows[0]["logged"]["algo"] == "ring" and rows[0]["algo"] == "ring" and rows[0]["model_algo"] is not None
    assert rows[-1]["logged"]["channels"] == 16 and rows[1]["logged"] is None and rows[1]["model_algo"] is None


def test_a_log_of_another_release_is_told_how_to_show_what_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log of NCCL 2.18.5 (nccl-tests' `nccl-library=` code) without TUNING lines: the
    summary says the modelled release's choices may differ and how to log what ran; with a
    TUNING line it does not (the rows that logged run what ran)."""
    header = "# nccl-tests version 2.13.9 nccl-headers=21805 nccl-library=21805\n"
    plain = tmp_path / "plain.log"
    plain.write_text(header + H100.read_text())
    rc, stdout, _ = _run(capsys, "calibrate", "nccl-tests", str(plain))
    assert rc == 0 and "These logs ran NCCL 2.18.5" in stdout and "NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING" in stdout
    tuned = tmp_path / "tuned.log"
    tuned.write_text(
        header
        + Path(
            _with_nccl_lines(tmp_path, H100, ["AllReduce: 1048576 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..7}"])
        ).read_text()
    )
    rc, stdout, _ = _run(capsys, "calibrate", "nccl-tests", str(tuned))
    assert rc == 0 and "These logs ran NCCL" not in stdout and "NCCL logged what it ran for 1 of 14" in stdout


@pytest.mark.parametrize(
    "line, says",
    [
        ("NCCL_ALGO set by environment to Ring,Bogus", "NCCL_ALGO=Ring,Bogus: 'bogus' is none of tree, ring"),
        ("NCCL_PROTO set by environment to allgather:LL;allreduce:LL256", "'ll256' is none of ll, ll128, simple"),
    ],
)
def test_a_logged_name_nccl_does_not_have_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, says: str
) -> None:
    rc, stdout, err = _run(capsys, "calibrate", "nccl-tests", _with_nccl_lines(tmp_path, H100, [line]))
    assert rc == 2 and stdout == "" and err.count("\n") == 1
    assert err.startswith("tensorwire: error: log: ") and "log.txt:" in err and says in err, err


def test_a_launcher_prefix_and_numbered_choices_read_as_a_real_log_prints_them(tmp_path: Path) -> None:
    """Intel MPI's ``mpirun -l`` puts ``[RANK] `` before every line, NCCL's lines included
    (nccl#1453's log: ``[0] host:pid:tid [0] NCCL INFO 262144 Bytes -> Algo 0 proto 1 time
    54.707825``, NCCL 2.20-2.22)."""
    lines = H100.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip("# ").startswith("size") and "busbw" in line)
    nccl = ["h100:497888:497888 [0] NCCL INFO 1048576 Bytes -> Algo 0 proto 1 time 54.707825"] * 3
    path = tmp_path / "prefixed.log"
    path.write_text("\n".join(f"[0] {line}" for line in lines[:at] + nccl + lines[at:]) + "\n")
    run = parse_log(str(path))
    assert (run.choices[1 << 20].algo, run.choices[1 << 20].proto) == ("tree", "ll128") and len(run.rows) == 14


@pytest.mark.skipif(not NATIVE, reason="the core has no calibration options")
def test_a_logged_socket_network_fits_as_transport_tcp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`Using network Socket` (NCCL's INIT line) is NCCL's socket transport: the fit and the
    cluster file are those of --transport tcp; `IB` is rdma; a plugin's name decides nothing."""
    socket = _with_nccl_lines(tmp_path, A3_MEGA, ["Using network Socket"], "socket.log")
    rc, logged, _ = _run(capsys, "calibrate", "nccl-tests", socket, "--json")
    rc2, given, _ = _run(capsys, "calibrate", "nccl-tests", str(A3_MEGA), "--transport", "tcp", "--json")
    assert rc == rc2 == 0
    assert json.loads(logged)["topology"] == json.loads(given)["topology"]
    assert "transport=tcp" in json.loads(logged)["topology"]
    plugin = _with_nccl_lines(tmp_path, A3_MEGA, ["Using network AWS Libfabric"], "plugin.log")
    rc, stdout, _ = _run(capsys, "calibrate", "nccl-tests", plugin)
    assert rc == 0 and "logged NCCL's network AWS Libfabric: a plugin" in stdout and "transport=rdma" in stdout


@pytest.mark.parametrize(
    "lines, args, field",
    [
        (["Using network Socket"], ["--transport", "rdma"], "transport"),
        (["Using network IB"], ["--transport", "tcp"], "transport"),
        (["Using network Socket"], ["--topology", "rail:node=dgx-h100,transport=rdma"], "transport"),
    ],
)
def test_a_transport_against_the_logged_network_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], args: list[str], field: str
) -> None:
    rc, stdout, err = _run(capsys, "calibrate", "nccl-tests", _with_nccl_lines(tmp_path, A3_MEGA, lines), *args)
    assert rc == 2 and stdout == "" and err.count("\n") == 1
    assert err.startswith(f"tensorwire: error: {field}: ") and "logged NCCL's network" in err, err


def test_logs_of_two_networks_are_not_fitted_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ib = _with_nccl_lines(tmp_path, A3_MEGA, ["Using network IB"], "ib.log")
    sock = _with_nccl_lines(tmp_path, H100, ["Using network Socket"], "sock.log")
    rc, _, err = _run(capsys, "calibrate", "nccl-tests", ib, sock)
    assert rc == 2 and err.count("\n") == 1 and "ib.log" in err and "sock.log" in err, err


def test_an_all_to_all_log_pins_nothing(tmp_path: Path) -> None:
    """All-to-all runs as point-to-point sends, which NCCL's TUNING lines never name; a
    numbered line without a function (2.20-2.22) there is another launch's, not the table's."""
    log = _with_nccl_lines(tmp_path, FIXTURES / "v2.11-alltoall.log", ["1048576 Bytes -> Algo 1 proto 2 time 9.0"])
    run = parse_log(log, "alltoall")
    assert run.collective == "alltoall" and run.choices == {} and run.choice_notes == ()
