"""Fitting a fabric's calibration to nccl-tests runs.

The calibration is four numbers the topology spec carries (``rail``/``nodes`` options):
``intra_efficiency`` and ``inter_efficiency``, factors on the bandwidths NCCL's model gives
inside a node and across nodes, and ``intra_latency`` and ``inter_latency``, added to each
single-node and multi-node collective. Single-node runs fix the intra pair, multi-node runs
the inter pair (with the intra pair fixed first).

The method is small and exact rather than a general optimiser. For a fixed choice of
algorithm, protocol and channels, NCCL's time for a row is affine in the inverse efficiency
``k`` and in the added latency ``L``: ``t = c + L + s * k``. For each regime, at the current
parameters, the model's own choice for every row is taken, ``s`` and the latency slope are
read off the model by finite differences (exact for an affine model), and ``L`` and ``k``
follow from weighted linear least squares of the measured times with weights 1/t (relative
errors, so that 1 MiB rows count as much as 8 GiB rows), ``L >= 0``. Since the choice
depends on the parameters, this repeats until neither changes (at most
:data:`MAX_ITERATIONS` rounds; the best round by largest relative error is kept).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional, Sequence

from tensorwire._core import InputError
from tensorwire.calibrate.logs import Run
from tensorwire.calibrate.predict import CALIBRATION_OPTIONS, Prediction, calibration_supported, nccl_predict

#: Rounds of (choose, fit) at most.
MAX_ITERATIONS = 30
#: nccl-tests' bus factor of each collective on n ranks (doc/PERFORMANCE.md).
BUS_FACTOR: dict[str, Callable[[int], float]] = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
}
#: The node preset for a GPU name in the log (the first that matches), as ``--topology``'s
#: default; ``hgx-h200`` falls back to ``dgx-h100`` where the core has no such preset.
GPU_NODES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("H200", ("hgx-h200", "dgx-h100")),
    ("H100", ("dgx-h100",)),
    ("A100", ("dgx-a100",)),
)


@dataclass(frozen=True)
class Calibration:
    """Factors on NCCL's bandwidths and latencies (seconds) added to its collectives."""

    intra_efficiency: float = 1.0
    inter_efficiency: float = 1.0
    intra_latency_s: float = 0.0
    inter_latency_s: float = 0.0

    def rounded(self) -> Calibration:
        """As :meth:`options` writes it: efficiencies to 6 significant digits, latencies to
        whole nanoseconds (the engine's unit)."""
        return Calibration(
            float(f"{self.intra_efficiency:.6g}"),
            float(f"{self.inter_efficiency:.6g}"),
            round(self.intra_latency_s * 1e9) / 1e9,
            round(self.inter_latency_s * 1e9) / 1e9,
        )

    def options(self) -> str:
        """The topology options, e.g. ``intra_efficiency=0.8,...,inter_latency=1500ns``.

        >>> Calibration(0.8, 0.95, 2.5e-6, 1e-5).options()
        'intra_efficiency=0.8,inter_efficiency=0.95,intra_latency=2500ns,inter_latency=10000ns'
        """
        r = self.rounded()
        return (
            f"intra_efficiency={r.intra_efficiency:.6g},inter_efficiency={r.inter_efficiency:.6g},"
            f"intra_latency={round(r.intra_latency_s * 1e9)}ns,inter_latency={round(r.inter_latency_s * 1e9)}ns"
        )

    def as_dict(self) -> dict[str, float]:
        r = self.rounded()
        return {
            "intra_efficiency": r.intra_efficiency,
            "inter_efficiency": r.inter_efficiency,
            "intra_latency_s": r.intra_latency_s,
            "inter_latency_s": r.inter_latency_s,
        }


def with_options(topology: str, options: str) -> str:
    """``topology`` with more options, e.g. ``rail:node=dgx-h100`` + ``a=1`` ->
    ``rail:node=dgx-h100,a=1``."""
    return f"{topology}{',' if ':' in topology else ':'}{options}"


@dataclass(frozen=True)
class Model:
    """NCCL's model on a base fabric, with a calibration.

    ``native``: the core's topology specs take the calibration options, and every prediction
    is the core's with them. Otherwise (a core without them) the calibration is applied here
    to the uncalibrated model, as the core defines it: the bandwidth part of the time (read
    off the model at the same choice and twice the size) divided by the efficiency, the
    latency added; the regime is the run's (one node: intra, else inter)."""

    topology: str
    bandwidth: Optional[float]
    transport: str
    native: bool

    def topology_with(self, cal: Calibration) -> str:
        return with_options(self.topology, cal.options()) if self.native else self.topology

    def predict(self, run: Run, size: float, cal: Calibration, fixed: Optional[Prediction] = None) -> Prediction:
        cal = cal.rounded()

        def core(topology: str, s: float, pin: Optional[Prediction]) -> Prediction:
            return nccl_predict(
                topology,
                run.ranks,
                run.collective,
                s,
                bandwidth=self.bandwidth,
                transport=self.transport,
                algo=None if pin is None else pin.algo,
                proto=None if pin is None else pin.proto,
                channels=None if pin is None else pin.channels,
            )

        if self.native:
            return core(self.topology_with(cal), size, fixed)
        base = core(self.topology, size, fixed)
        slope = (core(self.topology, 2 * size, base).seconds - base.seconds) / size if size > 0 else 0.0
        fixed_part = base.seconds - slope * size
        eff, lat = (
            (cal.intra_efficiency, cal.intra_latency_s)
            if run.nodes == 1
            else (cal.inter_efficiency, cal.inter_latency_s)
        )
        seconds = fixed_part + lat + slope * size / eff
        algbw = size / seconds if seconds > 0 else 0.0
        return replace(base, seconds=seconds, algbw=algbw, busbw=algbw * BUS_FACTOR[run.collective](run.ranks))


@dataclass(frozen=True)
class RowFit:
    """One measured row against the model before and after the fit."""

    run: Run
    size: int
    measured_busbw: float
    measured_seconds: float
    before: Prediction
    after: Prediction

    @property
    def error(self) -> float:
        """(predicted - measured) / measured bus bandwidth after the fit (from the times,
        which nccl-tests prints with more digits than small bandwidths)."""
        return self.measured_seconds / self.after.seconds - 1

    @property
    def error_before(self) -> float:
        return self.measured_seconds / self.before.seconds - 1


@dataclass(frozen=True)
class Fit:
    """The fitted calibration, the model it belongs to and every row."""

    calibration: Calibration
    model: Model
    rows: tuple[RowFit, ...]
    fitted: tuple[str, ...]  # the regimes measured: "intra", "inter"

    @property
    def topology(self) -> str:
        """The calibrated topology spec (what the cluster file carries)."""
        return with_options(self.model.topology, self.calibration.options())


def default_topology(runs: Sequence[Run], node_names: Sequence[str]) -> str:
    """The ``rail`` fabric of the node preset for the runs' GPU (``GPU_NODES``)."""
    gpu = runs[0].gpu
    for key, presets in GPU_NODES:
        if key in gpu.upper():
            for preset in presets:
                if preset in node_names:
                    return f"rail:node={preset}"
    raise InputError(
        "topology",
        f"cannot tell the node from the GPU {gpu!r} in {runs[0].path}; give --topology, e.g. rail:node=dgx-h100",
    )


def check_runs(runs: Sequence[Run], topology: str, gpus_per_preset: Optional[int]) -> None:
    """Refuses runs that do not describe one fabric: different GPUs, or multi-node runs with
    another number of GPUs per node than the topology's nodes have."""
    gpus = {r.gpu for r in runs}
    if len(gpus) > 1:
        raise InputError(
            "log", f"the logs are from different GPUs ({', '.join(sorted(gpus))}); calibrate one fabric at a time"
        )
    given = [o for o in CALIBRATION_OPTIONS if f"{o}=" in topology]
    if given:
        raise InputError("topology", f"{topology!r} carries {given[0]}=; give the uncalibrated spec, calibrate fits it")
    for r in runs:
        if r.ranks < 2:
            raise InputError("log", f"{r.path}: 1 rank; calibration needs collectives over 2 or more GPUs")
        if gpus_per_preset is not None and r.nodes > 1 and r.gpus_per_node != gpus_per_preset:
            raise InputError(
                "log",
                f"{r.path}: {r.gpus_per_node} GPUs per node on {r.nodes} nodes, where {topology} has "
                f"{gpus_per_preset}; give --topology with that node",
            )


def _solve(rows: list[tuple[float, float, float, float]]) -> Optional[tuple[float, float]]:
    """Weighted least squares of ``y = dl * L + s * k`` over rows (y, dl, s, w), ``L >= 0``,
    ``k > 0``; None when the rows do not determine k."""
    a11 = sum(w * w * dl * dl for y, dl, s, w in rows)
    a12 = sum(w * w * dl * s for y, dl, s, w in rows)
    a22 = sum(w * w * s * s for y, dl, s, w in rows)
    b1 = sum(w * w * dl * y for y, dl, s, w in rows)
    b2 = sum(w * w * s * y for y, dl, s, w in rows)
    det = a11 * a22 - a12 * a12
    if det > 1e-12 * max(a11 * a22, 1e-300):
        lat = (b1 * a22 - b2 * a12) / det
        k = (a11 * b2 - a12 * b1) / det
        if lat >= 0 and k > 0:
            return lat, k
    if a22 <= 0:
        return None
    k = b2 / a22  # latency at its bound 0
    return (0.0, k) if k > 0 else None


def _score(model: Model, pairs: Sequence[tuple[Run, int, float]], cal: Calibration) -> float:
    return max(abs(t / model.predict(run, size, cal).seconds - 1) for run, size, t in pairs)


def _fit_regime(model: Model, pairs: Sequence[tuple[Run, int, float]], cal: Calibration, regime: str) -> Calibration:
    def set_(c: Calibration, eff: float, lat: float) -> Calibration:
        if regime == "intra":
            return replace(c, intra_efficiency=eff, intra_latency_s=lat).rounded()
        return replace(c, inter_efficiency=eff, inter_latency_s=lat).rounded()

    def get(c: Calibration) -> tuple[float, float]:
        return (c.intra_efficiency, c.intra_latency_s) if regime == "intra" else (c.inter_efficiency, c.inter_latency_s)

    best, best_score = cal, _score(model, pairs, cal)
    for _ in range(MAX_ITERATIONS):
        eff, lat = get(cal)
        k = 1 / eff
        system = []
        for run, size, measured in pairs:
            choice = model.predict(run, size, cal)
            t0 = choice.seconds
            t_k = model.predict(run, size, set_(cal, 1 / (2 * k), lat), choice).seconds
            t_l = model.predict(run, size, set_(cal, eff, lat + 1e-6), choice).seconds
            s = (t_k - t0) / k
            dl = (t_l - t0) / 1e-6
            system.append((measured - (t0 - dl * lat - s * k), dl, s, 1 / measured))
        solved = _solve(system)
        if solved is None:
            break
        new = set_(cal, 1 / solved[1], solved[0])
        score = _score(model, pairs, new)
        if score < best_score:
            best, best_score = new, score
        if new == cal:
            break
        cal = new
    return best


def fit(runs: Sequence[Run], topology: str, bandwidth: Optional[float], transport: str) -> Fit:
    """Fits the calibration of ``topology`` to ``runs`` (see the module's description)."""
    model = Model(topology, bandwidth, transport, calibration_supported(topology))
    start = Calibration()
    cal = start
    fitted = []
    for regime, chosen in (("intra", [r for r in runs if r.nodes == 1]), ("inter", [r for r in runs if r.nodes > 1])):
        pairs = [(run, row.size, row.seconds) for run in chosen for row in run.rows if row.size > 0]
        if pairs:
            cal = _fit_regime(model, pairs, cal, regime)
            fitted.append(regime)
    rows = tuple(
        RowFit(
            run=run,
            size=row.size,
            measured_busbw=row.busbw,
            measured_seconds=row.seconds,
            before=model.predict(run, row.size, start),
            after=model.predict(run, row.size, cal),
        )
        for run in runs
        for row in run.rows
        if row.size > 0
    )
    return Fit(cal, model, rows, tuple(fitted))
