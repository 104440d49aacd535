"""The fit: nccl_predict's invariants, recovery of known parameters from synthetic logs made
by the model itself (round trip), and the fixture reproduced within 5%."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorwire._core import InputError
from tensorwire.calibrate.fit import (
    MAX_EFFICIENCY,
    MAX_FILL,
    MAX_STEP_S,
    Calibration,
    Fit,
    Model,
    _lstsq,
    _solve,
    fit,
    with_options,
)
from tensorwire.calibrate.predict import calibration_supported, nccl_predict
from tensorwire.calibrate.reading import parse_log

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nccl-tests"
SIZES = [1 << k for k in range(20, 34, 2)]
NATIVE = calibration_supported("rail:node=dgx-h100")
WHY = "the core's topology specs do not take intra_efficiency=... yet (the NCCL-model branch adds them)"


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["allreduce", "allgather", "reducescatter", "alltoall"]),
    st.integers(2, 64),
    st.floats(1e3, 1e10),
)
def test_busbw_is_algbw_times_the_bus_factor(collective: str, gpus: int, size: float) -> None:
    p = nccl_predict("rail:node=dgx-h100", gpus, collective, size)
    assert p.seconds > 0 and p.algbw == pytest.approx(size / p.seconds, rel=1e-12)
    factor = 2 * (gpus - 1) / gpus if collective == "allreduce" else (gpus - 1) / gpus
    assert p.busbw == pytest.approx(p.algbw * factor, rel=1e-12)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"gpus": 0}, "gpus"),
        ({"collective": "allsum"}, "collective"),
        ({"size": -1.0}, "bytes"),
        ({"size": math.nan}, "bytes"),
        ({"transport": "carrier-pigeon"}, "transport"),
        ({"topology": "rail:node=dgx-z9"}, "topology.node"),
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"channels": 0}, "channels"),
        ({"algo": "fastest"}, "strategy.algo"),
        # Ints out of range and lone surrogates: were OverflowError and UnicodeEncodeError.
        ({"gpus": -1}, "gpus"),
        ({"gpus": 2**70}, "gpus"),
        ({"channels": -1}, "channels"),
        ({"channels": 2**64}, "channels"),
        ({"size": 2**1100}, "bytes"),
        ({"topology": "rail:node=\ud800"}, "topology"),
        ({"transport": "\udcff"}, "transport"),
        ({"proto": "\ud800"}, "strategy.proto"),
        # Past the engine's bounds: the time was inf (algbw 0) or beyond the horizon.
        ({"gpus": 2**21}, "gpus"),
        ({"size": 1e300}, "bytes"),
        (
            {"topology": "rail:node=dgx-h100,intra_efficiency=1e-300", "size": 2**40, "collective": "allgather"},
            "horizon",
        ),
        ({"topology": "rail:node=dgx-h100,nvls_efficiency=1e-300", "size": 2**40}, "horizon"),
    ],
)
def test_nccl_predict_refuses_bad_input_naming_the_field(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"topology": "rail:node=dgx-h100", "gpus": 8, "collective": "allreduce", "size": 1e6}
    args.update(kwargs)
    topology, gpus, collective, size = (args.pop(k) for k in ("topology", "gpus", "collective", "size"))
    with pytest.raises(InputError) as e:
        nccl_predict(topology, gpus, collective, size, **args)  # type: ignore[arg-type]
    assert e.value.args[0] == field


def _write_log(
    path: Path,
    model: Model,
    cal: Calibration,
    nodes: int,
    collective: str = "allreduce",
    seconds: Optional[Callable[[int], float]] = None,
) -> None:
    """A log in nccl-tests' format whose times are the model's with ``cal`` (or, given
    ``seconds``, that function of the size)."""
    from tensorwire.calibrate.logs import Run

    ranks = 8 * nodes
    run = Run(
        str(path),
        collective,
        None,
        ranks,
        nodes,
        8,
        tuple(f"n{i}" for i in range(nodes)),
        "NVIDIA H100 80GB HBM3",
        None,
        (),
        None,
    )
    binary = {
        "allreduce": "all_reduce_perf",
        "allgather": "all_gather_perf",
        "reducescatter": "reduce_scatter_perf",
        "alltoall": "alltoall_perf",
    }
    lines = [
        f"# Collective test starting: {binary[collective]}",
        "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 8589934592 step: 4(factor) warmup iters: 5 iters: 20",
    ]
    for r in range(ranks):
        lines.append(
            f"#  Rank {r:2d} Group  0 Pid {r // 8:6d} on {'n' + str(r // 8):>10s} device {r % 8:2d} [0000:00:00] NVIDIA H100 80GB HBM3"
        )
    lines.append(
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
    )
    for size in SIZES:
        if seconds is None:
            p = model.predict(run, size, cal)
            secs, algbw, busbw = p.seconds, p.algbw, p.busbw
        else:
            secs = seconds(size)
            algbw = size / secs
            busbw = algbw * (2 if collective == "allreduce" else 1) * (ranks - 1) / ranks
        # More digits than nccl-tests prints, so that the round trip is exact to the fit.
        t = f"{secs * 1e6:.6f}  {algbw / 1e9:.6f}  {busbw / 1e9:.6f}  0"
        lines.append(
            f"{size:12d}  {size // 4 // (1 if collective == 'allreduce' else ranks):12d}  float  sum  -1  {t}  {t}"
        )
    path.write_text("\n".join(lines) + "\n")


KNOWN = Calibration(
    intra_efficiency=0.8, inter_efficiency=0.6, intra_latency_s=25e-6, inter_latency_s=80e-6, nvls_efficiency=0.7,
    nvlstree_efficiency=0.9,
)  # fmt: skip
#: With the pipeline-fill factors too (the core applies them; the fit recovers them).
KNOWN_FILL = Calibration(
    0.8, 0.6, 25e-6, 80e-6, intra_fill=0.5, inter_fill=2.5, nvls_efficiency=0.9, nvls_fill=1.5,
    nvlstree_efficiency=0.75, nvlstree_fill=2.0,
)  # fmt: skip
#: All twelve, with a cost per pipeline step in each regime.
KNOWN_STEP = Calibration(
    0.9, 0.7, 3e-6, 20e-6, intra_fill=0.75, inter_fill=1.5, intra_step_s=4e-7, inter_step_s=1.5e-6,
    nvls_efficiency=1.1, nvls_fill=0.6, nvlstree_efficiency=0.8, nvlstree_fill=0.5,
)  # fmt: skip


def _round_trip(tmp_path: Path, native: bool, known: Calibration = KNOWN) -> None:
    """Logs made by the model with ``known``: one node's all-reduce (NVLS from 2 MiB up on
    a native core) and all-gather (rings), and two nodes' all-reduce (NVLS tree) and
    all-gather (rings); the fit gives back every parameter."""
    model = Model("rail:node=dgx-h100", None, "rdma", native)
    _write_log(tmp_path / "one.log", model, known, 1)
    _write_log(tmp_path / "one-ag.log", model, known, 1, "allgather")
    _write_log(tmp_path / "two.log", model, known, 2)
    _write_log(tmp_path / "two-ag.log", model, known, 2, "allgather")
    runs = [parse_log(str(tmp_path / name)) for name in ("one.log", "one-ag.log", "two.log", "two-ag.log")]
    result = fit(runs, "rail:node=dgx-h100", None, "rdma")
    assert result.model.native is native
    c = result.calibration
    assert result.families == (("intra", "nvls", "inter", "nvlstree") if native else ("intra", "inter"))
    assert c.nvls_efficiency == pytest.approx(known.nvls_efficiency if native else 1.0, rel=1e-4)
    assert c.nvls_fill == pytest.approx(known.nvls_fill if native else 1.0, rel=1e-3)
    assert c.nvlstree_efficiency == pytest.approx(known.nvlstree_efficiency if native else 1.0, rel=1e-4)
    assert c.nvlstree_fill == pytest.approx(known.nvlstree_fill if native else 1.0, rel=1e-3)
    assert c.intra_efficiency == pytest.approx(known.intra_efficiency, rel=1e-4)
    assert c.inter_efficiency == pytest.approx(known.inter_efficiency, rel=1e-4)
    assert c.intra_latency_s == pytest.approx(known.intra_latency_s, abs=2e-9)
    assert c.inter_latency_s == pytest.approx(known.inter_latency_s, abs=2e-9)
    assert c.intra_fill == pytest.approx(known.intra_fill, rel=1e-3)
    assert c.inter_fill == pytest.approx(known.inter_fill, rel=1e-3)
    assert c.intra_step_s == pytest.approx(known.intra_step_s, abs=1e-11)
    assert c.inter_step_s == pytest.approx(known.inter_step_s, abs=1e-11)
    assert max(abs(r.error) for r in result.rows) < 1e-4
    assert result.fitted == ("intra", "inter")


def test_fit_recovers_known_parameters_applied_outside_the_core(tmp_path: Path) -> None:
    """The fit's own arithmetic: logs made by the model with the calibration applied as the
    fit applies it on a core without the options."""
    if NATIVE:
        pytest.skip("the core takes the calibration options: the native round trip covers this")
    _round_trip(tmp_path, native=False)


@pytest.mark.skipif(not NATIVE, reason=WHY)
def test_fit_recovers_known_parameters_from_nccl_predict(tmp_path: Path) -> None:
    _round_trip(tmp_path, native=True)


@pytest.mark.skipif(not NATIVE, reason=WHY)
def test_fit_recovers_the_pipeline_fill_factors(tmp_path: Path) -> None:
    """Six parameters, three per regime: logs made by the core with intra_fill=0.5 and
    inter_fill=2.5 give them back, with the efficiencies and latencies."""
    _round_trip(tmp_path, native=True, known=KNOWN_FILL)
    assert "intra_fill=0.5,inter_fill=2.5" in KNOWN_FILL.options()


@pytest.mark.skipif(not NATIVE, reason=WHY)
def test_fit_recovers_the_step_costs(tmp_path: Path) -> None:
    """Twelve parameters, four per regime and NVLS's and NVLS tree's two: logs made by the core with a cost per
    pipeline step (400 ns inside a node, 1.5 us across) give every parameter back. The four unknowns'
    slopes differ by orders of magnitude (a step cost multiplies thousands of steps), which
    the solver must not take for a singular system."""
    _round_trip(tmp_path, native=True, known=KNOWN_STEP)
    assert KNOWN_STEP.options().endswith(
        "intra_step=400ns,inter_step=1500ns,nvls_efficiency=1.1,nvls_fill=0.6,nvlstree_efficiency=0.8,nvlstree_fill=0.5"
    )


def test_the_solver_keeps_well_determined_columns_of_any_scale() -> None:
    """``y = 2e-6 L + 1.1 a + 0.8 b + 4e-7 S`` over the slopes of 8 H100 all-reduce rows from
    1 MiB to 4 GiB (seconds per unit of latency, inverse efficiency and fill; steps), scales
    1, 1e-5..1e-2, 1e-5..1e-4 and 14..2,048: exact. Unequilibrated, the elimination took
    this system for singular and dropped the latency."""
    truth = (2e-6, 1.1, 0.8, 4e-7)
    slopes = [
        (1.301e-05, 7.437e-06, 14.0),
        (1.497e-05, 1.497e-05, 16.0),
        (5.988e-05, 2.994e-05, 32.0),
        (2.395e-04, 5.988e-05, 64.0),
        (9.582e-04, 5.988e-05, 256.0),
        (3.833e-03, 1.198e-04, 512.0),
        (1.533e-02, 1.198e-04, 2048.0),
    ]
    rows = []
    for s, sf, sn in slopes:
        y = truth[0] + truth[1] * s + truth[2] * sf + truth[3] * sn
        rows.append((y, 1.0, s, sf, sn, 1 / y))
    assert _solve(rows) == pytest.approx(truth, rel=1e-8)


def _sse(rows: list[tuple[float, ...]], x: tuple[float, float, float, float]) -> float:
    return sum(r[-1] ** 2 * (r[0] - sum(x[j] * r[1 + j] for j in range(4))) ** 2 for r in rows)


@settings(max_examples=60, deadline=None)
@given(
    truth=st.tuples(
        st.floats(0.0, 5e-5),  # L, s
        st.floats(0.05, 3.0),  # a = 1 / efficiency: efficiencies up to 20, beyond the specs' 2
        st.floats(0.0, 40.0),  # b = a x fill: fills up to 800, beyond the specs' 10
        st.floats(0.0, 2e-3),  # S, s: up to twice the specs' 1 ms
    ),
    noise=st.lists(st.floats(-0.2, 0.2), min_size=7, max_size=7),
    probes=st.lists(
        st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 1.0)),
        min_size=20,
        max_size=20,
    ),
)
def test_the_solver_finds_the_least_squares_within_the_specs_ranges(
    truth: tuple[float, float, float, float], noise: list[float], probes: list[tuple[float, ...]]
) -> None:
    """Wherever the rows point, even outside what the topology specs take (efficiency above
    2, fill above 10, a step above 1 ms), the solution is within the specs' ranges and no
    point within them fits better: checked against random points of the box and against
    clamping the unconstrained solution, which is what the fit did before it kept the bounds
    (on GCP A3 Mega's log that left every row from 64 MiB up 25-27% slow)."""
    slopes = [(1e-5, 7e-6, 8.0), (2e-5, 1.5e-5, 16.0), (6e-5, 3e-5, 32.0), (2.4e-4, 6e-5, 64.0),
              (9.6e-4, 6e-5, 256.0), (3.8e-3, 1.2e-4, 512.0), (1.5e-2, 1.2e-4, 2048.0)]  # fmt: skip
    rows: list[tuple[float, ...]] = []
    for (s, sf, sn), e in zip(slopes, noise):
        y = (truth[0] + truth[1] * s + truth[2] * sf + truth[3] * sn) * (1 + e) + 1e-6
        rows.append((y, 1.0, s, sf, sn, 1 / y))
    solved = _solve(rows)
    lat, a, b, step = solved
    assert lat >= 0 and a >= 1 / MAX_EFFICIENCY * (1 - 1e-12)
    assert 0 <= b <= MAX_FILL * a * (1 + 1e-12) and 0 <= step <= MAX_STEP_S
    best = _sse(rows, solved)
    for u in probes:  # random feasible points: L in [0, 100 us], a in [0.5, 3.5], fill, step
        pa = 1 / MAX_EFFICIENCY + 3 * u[1]
        point = (1e-4 * u[0], pa, pa * MAX_FILL * u[2], MAX_STEP_S * u[3])
        assert best <= _sse(rows, point) * (1 + 1e-9) + 1e-30
    unconstrained = _solve_clamped(rows)
    if unconstrained is not None:
        assert best <= _sse(rows, unconstrained) * (1 + 1e-9) + 1e-30


def _solve_clamped(rows: list[tuple[float, ...]]) -> tuple[float, float, float, float] | None:
    """Plain least squares in all four unknowns, then each clamped into the specs' ranges."""
    x = _lstsq(rows)
    if x is None:
        return None
    a = max(x[1], 1 / MAX_EFFICIENCY)
    return (max(x[0], 0.0), a, min(max(x[2], 0.0), MAX_FILL * a), min(max(x[3], 0.0), MAX_STEP_S))


@pytest.mark.skipif(not NATIVE, reason=WHY)
def test_fit_recovers_efficiency_and_latency_from_all_to_all_logs(tmp_path: Path) -> None:
    """All-to-all is point-to-point in NCCL (``p2p``, no NCCL_ALGO algorithm): the fit holds
    each row's choice fixed without restricting the algorithm, and recovers the parameters.
    (The pipeline fill does not apply to it, so the fill factors are not identified.)"""
    model = Model("rail:node=dgx-h100", None, "rdma", True)
    known = Calibration(intra_efficiency=0.7, inter_efficiency=0.9, intra_latency_s=40e-6, inter_latency_s=15e-6)
    _write_log(tmp_path / "one.log", model, known, 1, "alltoall")
    _write_log(tmp_path / "two.log", model, known, 2, "alltoall")
    runs = [parse_log(str(tmp_path / "one.log")), parse_log(str(tmp_path / "two.log"))]
    result = fit(runs, "rail:node=dgx-h100", None, "rdma")
    c = result.calibration
    assert (c.intra_efficiency, c.inter_efficiency) == pytest.approx((0.7, 0.9), rel=1e-4)
    assert (c.intra_latency_s, c.inter_latency_s) == pytest.approx((40e-6, 15e-6), abs=2e-9)
    assert max(abs(r.error) for r in result.rows) < 1e-4
    assert {(r.after.algo, r.after.proto) for r in result.rows} == {("p2p", "simple")}


def test_fit_is_deterministic_and_regimes_are_separate(tmp_path: Path) -> None:
    """A single-node log fits the intra regime and leaves the inter one at its default."""
    runs = [parse_log(str(FIXTURES / "azure-nd-h100-v5-allreduce.log"))]
    a = fit(runs, "rail:node=dgx-h100", None, "rdma")
    b = fit(runs, "rail:node=dgx-h100", None, "rdma")
    assert a.calibration == b.calibration and a.fitted == ("intra",)
    assert (a.calibration.inter_efficiency, a.calibration.inter_latency_s) == (1.0, 0.0)
    # The fit is never worse than the uncalibrated model on the rows it fits.
    assert max(abs(r.error) for r in a.rows) <= max(abs(r.error_before) for r in a.rows)


@pytest.mark.skipif(not NATIVE, reason=WHY)
def test_an_nvls_sweep_fits_nvls_and_keeps_the_rings_at_nccls_figures() -> None:
    """Azure's 8 x H100 all-reduce runs NVLS from 2 MiB up and a ring only at 1 MiB, where
    the time is latency: the fit sets NVLS's efficiency and fill and keeps the rings' at 1, so
    an all-gather (rings) on the calibrated node runs at NCCL's ring bandwidth, slowed only by
    the regime's shared latency and step cost. (One efficiency for both had the fit's NVLS
    factor, 1.074, make 16 GiB rings 4-6% faster than ml-engineering measured on H200.)"""
    runs = [parse_log(str(FIXTURES / "azure-nd-h100-v5-allreduce.log"))]
    result = fit(runs, "rail:node=dgx-h100", None, "rdma")
    c = result.calibration
    assert result.families == ("nvls",)
    assert (c.intra_efficiency, c.intra_fill) == (1.0, 1.0) and c.nvls_efficiency != 1.0
    size = 16 << 30
    plain = nccl_predict("rail:node=dgx-h100", 8, "allgather", size)
    calibrated = nccl_predict(result.topology, 8, "allgather", size)
    no_step = nccl_predict(
        with_options("rail:node=dgx-h100", replace(c, intra_step_s=0.0).options()), 8, "allgather", size
    )
    assert calibrated.algo == plain.algo == "ring"
    assert calibrated.seconds >= plain.seconds  # only latency and step cost added
    assert no_step.seconds == pytest.approx(plain.seconds + c.intra_latency_s, rel=1e-12)


@pytest.mark.skipif(not NATIVE, reason=WHY)
@pytest.mark.parametrize(
    "log, bound, algo, proto",
    [
        # Issue 21 asks for 5%: every row is within 4.6% (NVLS efficiency 1.044, NVLS fill 0.74,
        # +0 us, 501 ns a step; rings keep NCCL's figures). Before NVLS's fill counted its stages below two loops (pipeline.rs)
        # the 4 MiB row missed at -5.02%: NCCL's NVLS chunk (calcCollChunking) is 16 KiB at
        # 2-4 MiB, so 2 MiB is one loop through 3 stages (3 loop times) and 4 MiB two (4), a
        # shape the fill capped at the transfer could not give. Without the step cost the
        # fit left 32 MiB at +9.2%.
        ("azure-nd-h100-v5-allreduce.log", 0.05, None, None),
        pytest.param(
            "gcp-a3-mega-2x8-allreduce.log",
            0.05,
            "ring+tree",
            "simple",
            # Fitted under Google's NCCL profile for A3 Mega (NCCL_ALGO=Ring,Tree,
            # NCCL_PROTO=Simple, the recipe docs/reproductions.md names; the log prints no
            # environment): 12 of 14 rows within 5%, 8 MiB +10.2% and 16 MiB -5.2% (ring/tree
            # efficiency 1.2, +26 us, fill 6.4, 10.9 us a step), where Google's tuner plugin
            # puts a knee NCCL's model does not have. Under NCCL's defaults (NVLS tree) 9 of 14,
            # 2-32 MiB -17% to +40% at the specs' bounds. Marked, not loosened.
            marks=pytest.mark.xfail(strict=True, reason="Google's tuner plugin's knee at 8-16 MiB; open"),
        ),
    ],
)
def test_fit_reproduces_the_fixture_within_5_percent(
    log: str, bound: float, algo: Optional[str], proto: Optional[str]
) -> None:
    runs = [parse_log(str(FIXTURES / log))]
    result = fit(runs, "rail:node=dgx-h100", None, "rdma", algo, proto)
    misses = [(r.size, f"{r.error:+.1%}") for r in result.rows if abs(r.error) > bound]
    assert not misses, misses


@settings(max_examples=40, deadline=None)
@given(
    truth=st.tuples(
        st.floats(0.0, 5e-5),  # L, s
        st.floats(0.5, 2.0),  # a of the first family (efficiency 0.5-2)
        st.floats(0.0, 5.0),  # its fill
        st.floats(0.5, 2.0),  # a of the second family
        st.floats(0.0, 5.0),  # its fill
        st.floats(0.0, 1e-4),  # S, s
    )
)
def test_the_solver_recovers_two_families_that_share_latency_and_step(truth: tuple[float, ...]) -> None:
    """Single-node rows of two efficiency families (rings, NVLS): each row loads only its own
    family's ``a`` and ``b = a x fill``, all share ``L`` and ``S``. Exact rows within the specs'
    ranges give every unknown back."""
    lat, a1, f1, a2, f2, step = truth
    x = (lat, a1, a1 * f1, a2, a2 * f2, step)
    rows: list[tuple[float, ...]] = []
    slopes = [(1e-5, 7e-6, 8.0), (6e-5, 3e-5, 32.0), (9.6e-4, 6e-5, 256.0), (1.5e-2, 1.2e-4, 2048.0)]
    for i, (s, sf, sn) in enumerate(slopes * 2):
        cols = (1.0, s, sf, 0.0, 0.0, sn) if i < 4 else (1.0, 0.0, 0.0, s * 1.3, sf * 0.7, sn * 3)
        y = sum(xj * cj for xj, cj in zip(x, cols))
        rows.append((y, *cols, 1 / y))
    solved = _solve(rows, ("L", "a", "b", "a", "b", "S"))
    # Each unknown to 1e-6 of itself or of its own scale (seconds, factors, seconds).
    for got, want, scale in zip(solved, x, (1e-5, 1.0, 1.0, 1.0, 1.0, 1e-6)):
        assert got == pytest.approx(want, rel=1e-6, abs=1e-6 * scale)


def _head(tmp_path: Path, fixture: str, rows: int) -> Path:
    """``fixture`` with only its first ``rows`` table rows (the smallest sizes)."""
    lines = (FIXTURES / fixture).read_text().splitlines()
    table = [i for i, line in enumerate(lines) if line.strip() and line.split()[0].isdigit()]
    drop = set(table[rows:])
    path = tmp_path / f"head-{fixture}"
    path.write_text("\n".join(line for i, line in enumerate(lines) if i not in drop) + "\n")
    return path


@pytest.mark.skipif(not NATIVE, reason=WHY)
def test_latency_bound_families_keep_nccls_figures_when_none_is_bandwidth_bound(tmp_path: Path) -> None:
    """Azure's 1-8 MiB rows: a ring at 1 MiB, NVLS at 2-8 MiB, none of them half transfer. No
    family qualifies, and with two present neither is fitted (all were: 4 rows gave
    ``intra_efficiency=2`` and an all-gather of 1 GiB at 623 GB/s on the calibrated node);
    the latency and step cost still are."""
    run = parse_log(str(_head(tmp_path, "azure-nd-h100-v5-allreduce.log", 4)))
    assert [r.size for r in run.rows] == [1 << 20, 2 << 20, 4 << 20, 8 << 20]
    result = fit([run], "rail:node=dgx-h100", None, "rdma")
    c = result.calibration
    assert result.families == () and result.fitted == ("intra",) and result.kept == ()
    assert (c.intra_efficiency, c.intra_fill, c.nvls_efficiency, c.nvls_fill) == (1.0, 1.0, 1.0, 1.0)


def _small_sizes(tmp_path: Path) -> Path:
    """Azure's header with a ring-only sweep of 8 B-4 KiB at 25 us a row (latency-bound)."""
    head = (FIXTURES / "azure-nd-h100-v5-allreduce.log").read_text().splitlines()[:20]
    rows = []
    for k in range(3, 13):
        size, algbw = 1 << k, (1 << k) / 25e3
        cols = f"{25:7.2f}  {algbw:6.2f}  {algbw * 1.75:6.2f}       0"
        rows.append(f"{size:12d}  {size // 4:12d}     float     sum      -1  {cols}  {cols}")
    path = tmp_path / "small.log"
    path.write_text("\n".join(head + rows) + "\n")
    return path


@pytest.mark.skipif(not NATIVE, reason=WHY)
@pytest.mark.parametrize(
    "topology, algo, families",
    [
        ("rail:node=dgx-h100", None, ()),  # NVLS could run: two families, the rings kept
        ("rail:node=dgx-h100,nvls=false", None, ("intra",)),  # one family: fitted on what there is
        ("rail:node=dgx-h100", "ring+tree", ("intra",)),  # NCCL_ALGO without NVLS: one family
        ("rail:node=dgx-a100", None, ("intra",)),  # no NVLink SHARP: one family
    ],
)
def test_a_family_seen_only_in_latency_bound_rows_is_fitted_only_where_it_is_the_regimes_one(
    tmp_path: Path, topology: str, algo: Optional[str], families: tuple[str, ...]
) -> None:
    """An H100 node has two families (NVLS and the rest): a sweep of latency-bound ring rows
    (8 B-4 KiB) keeps the rings at NCCL's figures. It fitted ``intra_efficiency=2`` (the rule
    counted the families present in the rows, one), and a 1 GiB all-gather on the calibrated
    node ran at 689 GB/s, past NVLink's 450 GB/s. Where the regime has one family for the logs
    (no NVLS on the node, or under the logs' NCCL_ALGO), that family is fitted even so."""
    run = parse_log(str(_small_sizes(tmp_path)))
    result = fit([run], topology, None, "rdma", algo)
    assert result.families == families and result.fitted == ("intra",)
    if families:
        return
    c = result.calibration
    assert (c.intra_efficiency, c.intra_fill) == (1.0, 1.0) and c.intra_latency_s > 0
    assert nccl_predict(result.topology, 8, "allgather", 1 << 30).busbw < 450e9


@pytest.mark.skipif(not NATIVE, reason=WHY)
def test_a_regime_no_round_improves_keeps_nccls_figures_and_says_so(tmp_path: Path) -> None:
    """Rows the uncalibrated model gives exactly: no round reproduces them better than NCCL's
    own figures (round zero), so the regime keeps them, reports no fitted family and is listed
    in ``kept``; the summary and the --out line say that nothing was fitted."""
    model = Model("rail:node=dgx-h100", None, "rdma", True)
    _write_log(tmp_path / "ar.log", model, Calibration(), 1)
    result = fit([parse_log(str(tmp_path / "ar.log"))], "rail:node=dgx-h100", None, "rdma")
    assert result.kept == ("intra",) and result.fitted == ("intra",) and result.families == ()
    assert result.calibration == Calibration()
    assert all(r.after == r.before for r in result.rows)
    out = tmp_path / "c.json"
    p = subprocess.run(
        [sys.executable, "-m", "tensorwire", "calibrate", "nccl-tests", str(tmp_path / "ar.log"), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "Nothing was fitted to the single-node rows" in p.stdout
    assert p.stderr == f"tensorwire: wrote {out} (nothing fitted: NCCL's own figures)\n"


def _objective(result: Fit, after: bool) -> float:
    """The least-squares objective (sum of squared relative errors in time) of the fitted
    ``result``'s rows, after the fit or before it (NCCL's figures)."""
    return sum(
        ((r.measured_seconds - (r.after if after else r.before).seconds) / r.measured_seconds) ** 2 for r in result.rows
    )


@pytest.mark.skipif(not NATIVE, reason=WHY)
def test_a_full_sweep_from_8_bytes_is_fitted_by_least_squares() -> None:
    """NVIDIA's DGX H100 sweep from 8 B (nvidia-llmb fixture): some of its rows no parameter
    can move (a 68 us stall at 32 B, small rings faster than the model with no added latency,
    the 1 MiB ring at -23%). Rounds judged by their largest error all lost to NCCL's figures,
    so every parameter was written as NCCL's, exit 0; judged by the least squares the rounds
    solve, NVLS's efficiency and fill are fitted and the objective drops."""
    run = parse_log(str(FIXTURES / "nvidia-llmb-dgx-h100-allreduce-8B-16G.log"))
    assert len(run.rows) == 32 and run.rows[0].size == 8
    result = fit([run], "rail:node=dgx-h100", None, "rdma")
    assert result.kept == () and result.fitted == ("intra",) and result.families == ("nvls",)
    assert result.calibration != Calibration()
    assert _objective(result, after=True) < 0.99 * _objective(result, after=False)
    big = [r for r in result.rows if r.size >= 64 << 20]
    assert max(abs(r.error) for r in big) < 0.05


@pytest.mark.skipif(not NATIVE, reason=WHY)
def test_a_family_a_round_does_not_fit_is_set_to_nccls_figures(tmp_path: Path) -> None:
    """A round solves the families it does not fit at NCCL's figures (1 and 1): it must set
    them so. It kept what an earlier round had fitted (a real 2 x 8 H100 log's round 1 set
    ``nvlstree_efficiency=2``, round 2 did not fit NVLS tree and won), and the cluster file
    carried 2 beside a fit that assumed 1, labelled "kept (NCCL's figure)": simulate gave 81
    GB/s for a 1 GiB all-reduce the fit put at 198. Here a round starts from NVLS figures no
    row can fit (rings only, latency-bound) and must leave them at 1."""
    from tensorwire.calibrate.fit import _fit_regime

    model = Model("rail:node=dgx-h100", None, "rdma", True)
    run = parse_log(str(_small_sizes(tmp_path)))
    pairs = [(run, row.size, row.seconds) for row in run.rows]
    start = Calibration(nvls_efficiency=1.5, nvls_fill=3.0)
    cal, families, improved = _fit_regime(model, pairs, start, "intra", False)
    assert improved and families == () and cal.intra_latency_s > 0
    assert (cal.nvls_efficiency, cal.nvls_fill, cal.intra_efficiency, cal.intra_fill) == (1.0, 1.0, 1.0, 1.0)


def test_the_logs_of_one_calibration_hold_max_rows_table_rows_together() -> None:
    """The fit's time grows with the rows (about a millisecond each): past MAX_ROWS table rows
    in all (rows of size 0 included) the logs are refused, naming the log that passes it."""
    from tensorwire.calibrate.fit import check_runs
    from tensorwire.calibrate.logs import MAX_ROWS

    run = parse_log(str(FIXTURES / "azure-nd-h100-v5-allreduce.log"))  # 14 rows
    big = replace(run, rows=run.rows * (MAX_ROWS // 14), path="big.log")  # 9,996
    check_runs([big, replace(run, rows=run.rows[:4], path="small.log")], "rail:node=dgx-h100", 8)
    for small in (replace(run, rows=run.rows[:5]), replace(run, rows=run.rows[:4], skipped=(40,))):
        with pytest.raises(InputError) as e:
            check_runs([big, replace(small, path="small.log")], "rail:node=dgx-h100", 8)
        assert e.value.args == (
            "log",
            "small.log: brings the logs' table rows to 10,001, past the 10,000 a calibration takes in all "
            "(a nccl-tests sweep prints about 30 a run)",
        )
