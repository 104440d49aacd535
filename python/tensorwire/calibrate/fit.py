"""Fitting a fabric's calibration to nccl-tests runs.

The calibration is twelve numbers the topology spec carries (``rail``/``nodes`` options), four
per regime: ``intra_efficiency`` and ``inter_efficiency``, factors on the bandwidths NCCL's
model gives inside a node and across nodes; ``intra_latency`` and ``inter_latency``, added
to each single-node and multi-node collective; ``intra_fill`` and ``inter_fill``, factors on
NCCL's pipeline fill and drain (``nccl/pipeline.rs``: how much of the fill the measured
cluster shows; 1 = the depths and chunk sizes of NCCL's source, 0 = none); ``intra_step`` and
``inter_step``, the cost of each pipeline step (a hand-off between two GPUs on a channel:
a synchronisation whose cost is the hardware's, which NCCL publishes no figure for; 0 =
none); and single-node NVLS's own efficiency and fill, ``nvls_efficiency`` and ``nvls_fill``
(NVLS reduces in the NVSwitches through a pipeline of warp-group stages, where rings, trees
and PAT copy over the links through FIFOs; NCCL too gives it its own efficiency), and likewise
multi-node NVLS tree's, ``nvlstree_efficiency`` and ``nvlstree_fill``. Single-node runs fix
the intra four and NVLS's two, multi-node runs the inter four and NVLS tree's two (with the
intra ones fixed first).

Each regime's rows fall into efficiency families (:data:`FAMILIES`: inside a node NVLS and the
rest, across nodes NVLS tree and the rest) that share the latency and step cost. A family's efficiency and fill are fitted
only where at least :data:`MIN_BANDWIDTH_ROWS` of its rows spend half their time or more on
the transfer; a family seen only in latency-bound rows keeps NCCL's figures (1 and 1). So an
all-reduce sweep on an NVLS node (a ring at 1 MiB, NVLS above) fits NVLS and leaves the rings
that all-gather and reduce-scatter run at NCCL's bandwidth, rather than carrying NVLS's factor
over to them.

The method is small and exact rather than a general optimiser. For a fixed choice of
algorithm, protocol and channels, NCCL's time for a row is ``t = c + L + k * (w + F * f) +
S * n`` with ``k`` the inverse efficiency of the row's family, ``L`` the added latency, ``F`` the fill factor,
``w`` the transfer and ``f`` the fill at NCCL's figures, ``S`` the step cost and ``n`` the
steps a channel runs: affine in ``L``, ``a = k``, ``b = k * F`` and ``S``. For each regime,
at the current parameters, the model's own choice for every row is taken, the slopes are
read off the model by finite differences (exact for an affine model), and ``L``, ``a``,
``b`` and ``S`` (an ``a`` and ``b`` per fitted family) follow from weighted linear least squares of the measured times with
weights 1/t (relative errors, so that 1 MiB rows count as much as 8 GiB rows) within the
ranges the topology specs take: ``L >= 0``, ``a >= 1/2`` (efficiency at most 2), ``0 <= b <=
10 a`` (fill in [0, 10]), ``0 <= S <= 1 ms``. Every way of pinning the unknowns to those
bounds is solved and the feasible solution of least squares kept, which is exact for this
convex problem; clamping an unbounded solution instead can land far from the best point
within the bounds (on GCP A3 Mega's log it left every row from 64 MiB up 25% slow).
Since the choice depends on the parameters, this repeats until none changes (at most
:data:`MAX_ITERATIONS` rounds), and the round of the smallest least-squares objective (the sum
of every row's squared relative error, :func:`_objective`, NCCL's own figures being round
zero) is kept: the objective the solve minimises, so that a row no parameter can move (a
stalled measurement, a size faster than the model with no added latency) weighs by its
residual instead of deciding alone, as it did when rounds were judged by their largest error
(a DGX H100 sweep from 8 B kept NCCL's figures for every parameter). A family that a round does
not fit is solved, and set, at NCCL's figures (1 and 1). On a core without the options the
fill stays at 1 (``Model.native``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from typing import Callable, Optional, Sequence

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.calibrate.logs import MAX_ROWS, Run
from tensorwire.calibrate.nccl_log import Choice, Setting, agreed, allows
from tensorwire.calibrate.predict import (
    CALIBRATION_OPTIONS,
    POINT_TO_POINT,
    Prediction,
    calibration_supported,
    nccl_predict,
)
from tensorwire.io import clip
from tensorwire.workload import bus_factor

#: Rounds of (choose, fit) at most.
MAX_ITERATIONS = 30
#: The largest efficiency factor the topology specs take (``intra_efficiency``/``inter_efficiency``).
MAX_EFFICIENCY = 2.0
#: The largest fill factor the topology specs take (``intra_fill``/``inter_fill``).
MAX_FILL = 10.0
#: The largest step cost the topology specs take (``intra_step``/``inter_step``), seconds.
MAX_STEP_S = 1e-3
#: The node presets of each GPU family (the first the core has is ``--topology``'s default
#: for the family's SXM part, :data:`PRESET_GPU`; ``hgx-h200`` falls back to ``dgx-h100`` where
#: the core has no such preset).
GPU_NODES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("H200", ("hgx-h200", "dgx-h100")),
    ("H100", ("dgx-h100",)),
    ("A100", ("dgx-a100",)),
)
#: A family's name as a word of a GPU's name: ``NVIDIA H100 PCIe`` is an H100; ``NVIDIA GH200
#: 480GB`` (Grace Hopper) is no H200.
_FAMILY_WORD = re.compile(r"\b(" + "|".join(family for family, _ in GPU_NODES) + r")\b", re.IGNORECASE)
#: The names CUDA gives (``cudaDeviceProp.name``, as nccl-tests prints it) to the parts the node
#: presets hold, SXM modules on NVSwitch: ``NVIDIA A100-SXM4-80GB`` (and -40GB, ``A100-SXM-80GB``),
#: ``NVIDIA H100 80GB HBM3``, ``NVIDIA H200``. A PCIe card (``NVIDIA H100 PCIe``), an NVL pair
#: (``NVIDIA H100 NVL``) or Grace Hopper (``NVIDIA GH200 480GB``) has other links, and no preset
#: node is its.
PRESET_GPU = re.compile(r"(?:NVIDIA )?(?:A100-SXM4?-[0-9]+GB|H100 [0-9]+GB HBM3|H200(?: [0-9]+GB HBM3e)?)")


@dataclass(frozen=True)
class Calibration:
    """Factors on NCCL's bandwidths and latencies (seconds) added to its collectives."""

    intra_efficiency: float = 1.0
    inter_efficiency: float = 1.0
    intra_latency_s: float = 0.0
    inter_latency_s: float = 0.0
    intra_fill: float = 1.0
    inter_fill: float = 1.0
    intra_step_s: float = 0.0
    inter_step_s: float = 0.0
    #: Single-node NVLS's own efficiency and fill factor (``nvls_efficiency``, ``nvls_fill``):
    #: ``intra_efficiency`` and ``intra_fill`` cover the other single-node algorithms.
    nvls_efficiency: float = 1.0
    nvls_fill: float = 1.0
    #: Multi-node NVLS tree's own efficiency and fill factor (``nvlstree_efficiency``,
    #: ``nvlstree_fill``): ``inter_efficiency`` and ``inter_fill`` cover the other multi-node
    #: algorithms.
    nvlstree_efficiency: float = 1.0
    nvlstree_fill: float = 1.0

    def rounded(self) -> Calibration:
        """As :meth:`options` writes it: efficiencies and fill factors to 6 significant
        digits (efficiencies at most :data:`MAX_EFFICIENCY`, fill factors in [0,
        :data:`MAX_FILL`]: the ranges the topology specs take), latencies to whole nanoseconds (the
        engine's unit), step costs to picoseconds (a step is a fraction of a microsecond, and
        large operations run thousands of them) in [0, :data:`MAX_STEP_S`]."""
        return Calibration(
            float(f"{min(self.intra_efficiency, MAX_EFFICIENCY):.6g}"),
            float(f"{min(self.inter_efficiency, MAX_EFFICIENCY):.6g}"),
            round(self.intra_latency_s * 1e9) / 1e9,
            round(self.inter_latency_s * 1e9) / 1e9,
            float(f"{min(max(self.intra_fill, 0.0), MAX_FILL):.6g}"),
            float(f"{min(max(self.inter_fill, 0.0), MAX_FILL):.6g}"),
            round(min(max(self.intra_step_s, 0.0), MAX_STEP_S) * 1e12) / 1e12,
            round(min(max(self.inter_step_s, 0.0), MAX_STEP_S) * 1e12) / 1e12,
            float(f"{min(self.nvls_efficiency, MAX_EFFICIENCY):.6g}"),
            float(f"{min(max(self.nvls_fill, 0.0), MAX_FILL):.6g}"),
            float(f"{min(self.nvlstree_efficiency, MAX_EFFICIENCY):.6g}"),
            float(f"{min(max(self.nvlstree_fill, 0.0), MAX_FILL):.6g}"),
        )

    def options(self) -> str:
        """The topology options, e.g. ``intra_efficiency=0.8,...,inter_step=0ns``; NVLS's and
        NVLS tree's pairs where they are not NCCL's own (both 1).

        >>> Calibration(0.8, 0.95, 2.5e-6, 1e-5, 0.5, intra_step_s=4.25e-7).options()
        'intra_efficiency=0.8,inter_efficiency=0.95,intra_latency=2500ns,inter_latency=10000ns,intra_fill=0.5,inter_fill=1,intra_step=425ns,inter_step=0ns'
        >>> Calibration(nvls_efficiency=1.07).options().split(",")[-2:]
        ['nvls_efficiency=1.07', 'nvls_fill=1']
        >>> Calibration(nvlstree_fill=2.5).options().split(",")[-2:]
        ['nvlstree_efficiency=1', 'nvlstree_fill=2.5']
        """
        r = self.rounded()
        nvls = (r.nvls_efficiency, r.nvls_fill) != (1.0, 1.0)
        nvlstree = (r.nvlstree_efficiency, r.nvlstree_fill) != (1.0, 1.0)
        return (
            f"intra_efficiency={r.intra_efficiency:.6g},inter_efficiency={r.inter_efficiency:.6g},"
            f"intra_latency={round(r.intra_latency_s * 1e9)}ns,inter_latency={round(r.inter_latency_s * 1e9)}ns,"
            f"intra_fill={r.intra_fill:.6g},inter_fill={r.inter_fill:.6g},"
            f"intra_step={_ns(r.intra_step_s)}ns,inter_step={_ns(r.inter_step_s)}ns"
            + (f",nvls_efficiency={r.nvls_efficiency:.6g},nvls_fill={r.nvls_fill:.6g}" if nvls else "")
            + (
                f",nvlstree_efficiency={r.nvlstree_efficiency:.6g},nvlstree_fill={r.nvlstree_fill:.6g}"
                if nvlstree
                else ""
            )
        )

    def at_upper_bounds(self) -> list[str]:
        """The parameters at the largest value the topology specs take (efficiency
        :data:`MAX_EFFICIENCY`, fill :data:`MAX_FILL`, step :data:`MAX_STEP_S`): where the
        fit stops there, the measured curve has a shape NCCL's model does not give, and the
        numbers describe that shape rather than the fabric (docs/calibration.md)."""
        r = self.rounded()
        return [
            name
            for name, value, bound in (
                ("intra_efficiency", r.intra_efficiency, MAX_EFFICIENCY),
                ("intra_fill", r.intra_fill, MAX_FILL),
                ("intra_step", r.intra_step_s, MAX_STEP_S),
                ("nvls_efficiency", r.nvls_efficiency, MAX_EFFICIENCY),
                ("nvls_fill", r.nvls_fill, MAX_FILL),
                ("inter_efficiency", r.inter_efficiency, MAX_EFFICIENCY),
                ("inter_fill", r.inter_fill, MAX_FILL),
                ("inter_step", r.inter_step_s, MAX_STEP_S),
                ("nvlstree_efficiency", r.nvlstree_efficiency, MAX_EFFICIENCY),
                ("nvlstree_fill", r.nvlstree_fill, MAX_FILL),
            )
            if value >= bound * (1 - 1e-9)
        ]

    def as_dict(self) -> dict[str, float]:
        r = self.rounded()
        return {
            "intra_efficiency": r.intra_efficiency,
            "inter_efficiency": r.inter_efficiency,
            "intra_latency_s": r.intra_latency_s,
            "inter_latency_s": r.inter_latency_s,
            "intra_fill": r.intra_fill,
            "inter_fill": r.inter_fill,
            "intra_step_s": r.intra_step_s,
            "inter_step_s": r.inter_step_s,
            "nvls_efficiency": r.nvls_efficiency,
            "nvls_fill": r.nvls_fill,
            "nvlstree_efficiency": r.nvlstree_efficiency,
            "nvlstree_fill": r.nvlstree_fill,
        }


def _ns(seconds: float) -> str:
    """Seconds as nanoseconds to the picosecond, without trailing zeros: 4.25e-7 -> '425'."""
    return f"{seconds * 1e9:.3f}".rstrip("0").rstrip(".")


def topology_options(topology: str) -> dict[str, str]:
    """The ``key=value`` options of a topology spec, as written (``rail:node=dgx-h100,sharp=true``
    -> ``{"node": "dgx-h100", "sharp": "true"}``; ``star`` -> ``{}``).

    >>> topology_options("rail:node=dgx-a100, intra_step=500ns")
    {'node': 'dgx-a100', 'intra_step': '500ns'}
    """
    options: dict[str, str] = {}
    for part in topology.split(":", 1)[1].split(",") if ":" in topology else []:
        key, _, value = part.partition("=")
        options[key.strip()] = value.strip()
    return options


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
    #: NCCL_ALGO / NCCL_PROTO the logs were measured with (``algo=``/``proto=`` syntax), or
    #: None: NCCL's model chooses among every algorithm / protocol, as NCCL does by default.
    algo: Optional[str] = None
    proto: Optional[str] = None

    def topology_with(self, cal: Calibration) -> str:
        return with_options(self.topology, cal.options()) if self.native else self.topology

    def predict(
        self, run: Run, size: float, cal: Calibration, fixed: Optional[Prediction] = None, logged: bool = True
    ) -> Prediction:
        """``run``'s collective of ``size`` bytes at ``cal``: with the algorithm, protocol and
        channels of ``fixed`` where given, else with the algorithm and protocol NCCL logged it
        ran at that size (``logged``, :attr:`Run.choices`), else with NCCL's model's choice."""
        cal = cal.rounded()
        ran = run.choices.get(int(size)) if logged and fixed is None and float(size).is_integer() else None

        def core(topology: str, s: float, pin: Optional[Prediction]) -> Prediction:
            if pin is not None and pin.algo == POINT_TO_POINT:
                pin = None  # all-to-all: nothing to pin, NCCL_ALGO does not apply
            algo, proto, channels = (
                (pin.algo, pin.proto, pin.channels)
                if pin is not None
                else (ran.algo, ran.proto, None)
                if ran is not None
                else (self.algo, self.proto, None)
            )
            return nccl_predict(
                topology,
                run.ranks,
                run.collective,
                s,
                bandwidth=self.bandwidth,
                transport=self.transport,
                algo=algo,
                proto=proto,
                channels=channels,
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
        return replace(base, seconds=seconds, algbw=algbw, busbw=algbw * bus_factor(run.collective, run.ranks))


@dataclass(frozen=True)
class RowFit:
    """One measured row against the model before and after the fit."""

    run: Run
    size: int
    measured_busbw: float
    measured_seconds: float
    before: Prediction
    after: Prediction
    #: Where NCCL logged what it ran at this size (:attr:`Run.choices`): NCCL's model's own
    #: choice after the fit, which ``after`` does not run (None where nothing was logged).
    model_choice: Optional[Prediction] = None

    @property
    def logged(self) -> Optional[Choice]:
        """NCCL's logged choice at this size, which ``before`` and ``after`` run; None where the
        log says none."""
        return self.run.choices.get(self.size)

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
    fitted: tuple[str, ...]  # the regimes measured (latency and step cost): "intra", "inter"
    #: The efficiency families whose efficiency and fill were fitted (:data:`FAMILIES`):
    #: "intra" (single-node algorithms but NVLS, and all-to-all), "nvls", "inter" (multi-node
    #: algorithms but NVLS tree, and all-to-all), "nvlstree".
    families: tuple[str, ...] = ()
    #: The measured regimes where no round of the fit reproduced the rows better (by the sum
    #: of squared relative errors, :func:`_objective`) than NCCL's own figures, which they
    #: keep: nothing was fitted there.
    kept: tuple[str, ...] = ()

    @property
    def topology(self) -> str:
        """The calibrated topology spec (what the cluster file carries)."""
        return with_options(self.model.topology, self.calibration.options())


def gpu_family(name: str) -> Optional[str]:
    """The GPU family (a key of :data:`GPU_NODES`) a GPU's name says as a word, or None.

    >>> gpu_family("NVIDIA H100 PCIe"), gpu_family("a100-80gb"), gpu_family("NVIDIA GH200 480GB")
    ('H100', 'A100', None)
    """
    m = _FAMILY_WORD.search(name)
    return m.group(1).upper() if m else None


def default_topology(runs: Sequence[Run], node_names: Sequence[str]) -> str:
    """The ``rail`` fabric of the node preset for the runs' GPU (:data:`GPU_NODES`), where it
    is a part the presets hold (:data:`PRESET_GPU`); any other is refused, asking for
    ``--topology``: a preset's NVSwitch and NVLink SHARP fitted to a PCIe card's logs would fold
    the difference into the efficiencies."""
    gpu = runs[0].gpu
    family = gpu_family(gpu) if PRESET_GPU.fullmatch(gpu) else None
    presets = [p for p in dict(GPU_NODES).get(family or "", ()) if p in node_names]
    if presets:
        return f"rail:node={presets[0]}"
    raise InputError(
        "topology",
        f"{runs[0].path} ran on {clip(gpu)!r}, which no node preset holds (they hold SXM parts on NVSwitch: "
        "NVIDIA A100-SXM4-80GB, NVIDIA H100 80GB HBM3, NVIDIA H200); give --topology for its node "
        "(docs/fabrics.md)",
    )


def rail_node(topology: str) -> Optional[str]:
    """The node preset of a ``rail`` topology (``dgx-h100`` unless ``node=`` says; None for
    other fabrics)."""
    if _core.check_topology(topology) != "rail":
        return None
    return topology_options(topology).get("node", "dgx-h100")


def _node_family(preset: str) -> Optional[str]:
    """The GPU family of a node preset's GPUs (the hardware catalogue's), or None."""
    from tensorwire.workloads import hardware

    try:
        return gpu_family(hardware.node(preset).gpu)
    except InputError:
        return None


def node_of_another_gpu(gpu: str, topology: str) -> Optional[tuple[str, str, str, list[str]]]:
    """Where ``topology``'s ``rail`` node preset has GPUs of another family (A100, H100, H200)
    than ``gpu`` (the logs'), one the presets :data:`GPU_NODES` lists for ``gpu`` do not have
    either: the node's family, the node, ``gpu``'s family and the presets that fit it (those
    ``GPU_NODES`` lists first). None where they agree, and for a GPU or preset of no known
    family and other fabrics (not checked). ``calibrate`` refuses such a topology (the fit
    would fold the difference between the GPUs into the efficiencies), and ``--cluster`` a
    file that has one."""
    node = rail_node(topology)
    family = gpu_family(gpu)
    node_family = None if node is None else _node_family(node)
    if node is None or family is None or node_family is None:
        return None
    listed = dict(GPU_NODES)[family]
    allowed = {family} | {_node_family(n) for n in listed}
    if node_family in allowed:
        return None
    names = [p["name"] for p in _core.NODE_PRESETS]
    matching = [n for n in listed if n in names]
    matching += [n for n in names if n not in matching and _node_family(n) in allowed]
    return node_family, node, family, matching


def node_gpus(topology: str) -> Optional[int]:
    """GPUs per node of a ``rail`` topology's node preset or a ``nodes`` topology's machine
    (None for other fabrics)."""
    if _core.check_topology(topology) == "nodes":
        from tensorwire.gputopo.topology import Topology

        return Topology.preset(topology_options(topology).get("machine", "p3.16xlarge")).gpus
    node = rail_node(topology)
    return next((int(p["gpus"]) for p in _core.NODE_PRESETS if p["name"] == node), None)


def check_runs(runs: Sequence[Run], topology: str, gpus_per_preset: Optional[int]) -> None:
    """Refuses runs that do not describe one fabric: different GPUs, or GPUs per node the
    topology's nodes cannot hold (:func:`_check_gpus_per_node`); and runs of more than
    :data:`~tensorwire.calibrate.logs.MAX_ROWS` table rows together (the fit's time grows
    with the rows: 10,000 take about 12 s), naming the log that passes it."""
    total = 0
    for r in runs:
        total += len(r.rows) + len(r.skipped)
        if total > MAX_ROWS:
            raise InputError(
                "log",
                f"{r.path}: brings the logs' table rows to {total:,}, past the {MAX_ROWS:,} a calibration takes "
                "in all (a nccl-tests sweep prints about 30 a run)",
            )
    gpus = {r.gpu for r in runs}
    if len(gpus) > 1:
        raise InputError(
            "log",
            f"the logs are from different GPUs ({', '.join(clip(g) for g in sorted(gpus))}); calibrate one fabric at a time",
        )
    given = [o for o in CALIBRATION_OPTIONS if f"{o}=" in topology]
    if given:
        raise InputError("topology", f"{topology!r} carries {given[0]}=; give the uncalibrated spec, calibrate fits it")
    for r in runs:
        if r.ranks < 2:
            raise InputError("log", f"{r.path}: 1 rank; calibration needs collectives over 2 or more GPUs")
        if gpus_per_preset is not None:
            _check_gpus_per_node(r, topology, gpus_per_preset)


def _check_gpus_per_node(run: Run, topology: str, per_node: int) -> None:
    """Refuses a run whose hosts hold more ranks than the topology's nodes have GPUs
    (``per_node``), and a multi-node run with another number of GPUs per node: the model
    places ``per_node`` ranks on each node, so a run of 2 nodes x 4 GPUs would be modelled as
    one node of 8, and no cluster file can carry more GPUs per node than its node has."""
    if run.gpus_per_node > per_node:
        raise InputError(
            "log",
            f"{run.path}: {run.gpus_per_node} ranks on host {clip(run.hosts[0])!r}, more than the {per_node} GPUs of "
            f"a node of {clip(topology)}: nccl-tests prints a host name up to its first '.', so nodes named by IP "
            "address (10.0.0.5, 10.0.0.6: both '10') read as one host; run on host names that differ before "
            "their first '.', or edit the host names of its '#  Rank' lines to tell the nodes apart",
        )
    if run.nodes == 1 or run.gpus_per_node == per_node:
        return
    specs = _node_specs(topology)
    matching = [spec for spec, gpus in specs.items() if gpus == run.gpus_per_node]
    fix = (
        f"give --topology {' or '.join(matching)}"
        if matching
        else f"no node tensorwire models has {run.gpus_per_node} GPUs ({_core.check_topology(topology)}'s presets "
        f"have {', '.join(map(str, sorted(set(specs.values()))))} and no option sets a node's GPU count), so "
        f"multi-node runs of {run.gpus_per_node} GPUs per node are not supported: run nccl-tests with {per_node} "
        "GPUs per node"
    )
    raise InputError(
        "log",
        f"{run.path}: {run.gpus_per_node} GPUs per node on {run.nodes} nodes, where {clip(topology)} has {per_node}: "
        f"the model places {per_node} ranks on each node, so its ranks would be modelled on other nodes than they "
        f"ran on; {fix}",
    )


def _node_specs(topology: str) -> dict[str, int]:
    """The node of every preset of ``topology``'s fabric as a topology spec, and its GPUs:
    ``rail:node=NAME`` for each node preset, ``nodes:machine=NAME`` for each machine."""
    if _core.check_topology(topology) == "nodes":
        from tensorwire.gputopo.topology import PRESETS, Topology

        return {f"nodes:machine={name}": Topology.preset(name).gpus for name in PRESETS}
    return {f"rail:node={p['name']}": int(p["gpus"]) for p in _core.NODE_PRESETS}


def nccl_list(value: Optional[str]) -> Optional[str]:
    """An NCCL_ALGO / NCCL_PROTO value in the ``nccl`` strategy's syntax: NCCL's comma
    list as ``+``, lower case (``Ring,Tree`` -> ``ring+tree``, ``^NVLS`` -> ``^nvls``).

    A name given twice is written once (``Ring,ring`` -> ``ring``), as NCCL reads it.

    >>> nccl_list("Ring,Tree"), nccl_list("^NVLS,NVLSTree"), nccl_list("Ring, Tree"), nccl_list(None)
    ('ring+tree', '^nvls+nvlstree', 'ring+tree', None)
    >>> nccl_list("Ring,ring,RING")
    'ring'
    """
    if value is None:
        return None
    return "+".join(dict.fromkeys(item.strip() for item in value.strip().lower().split(",")))


def logged_restriction(
    runs: Sequence[Run], algo: Optional[str], proto: Optional[str]
) -> tuple[Optional[str], Optional[str]]:
    """The NCCL_ALGO / NCCL_PROTO restriction of a calibration (the ``nccl`` strategy's syntax):
    ``algo`` / ``proto`` as given (``--algo``, ``--proto``), else what the logs' NCCL logged
    (:attr:`Run.nccl_algo`, :attr:`Run.nccl_proto`). Logs that log none are taken as measured
    with the others' setting (NCCL prints it only at NCCL_DEBUG=INFO with the ENV subsystem).
    Refused, naming the lines: logs that logged different values, and an option that differs
    from what a log logged (as sets of names: ``Tree,Ring`` is ``ring+tree``)."""
    return (
        _one_setting(runs, "NCCL_ALGO", "algo", algo, lambda r: r.nccl_algo),
        _one_setting(runs, "NCCL_PROTO", "proto", proto, lambda r: r.nccl_proto),
    )


def _one_setting(
    runs: Sequence[Run], variable: str, option: str, given: Optional[str], of: Callable[[Run], Optional[Setting]]
) -> Optional[str]:
    logged = [(run, s) for run in runs if (s := of(run)) is not None]
    s = agreed([(run.path, s) for run, s in logged], variable, lambda a, b: _names(a) == _names(b))
    if s is None:
        return given
    run = logged[0][0]
    if given is not None and _names(given) != _names(s.value):
        raise InputError(
            option,
            f"--{option} {given} differs from {variable}={s.value} that {run.path}:{s.line} logged for "
            f"{run.collective}; drop --{option} (the log's setting is taken)",
        )
    return s.value


def _names(restriction: str) -> tuple[bool, frozenset[str]]:
    """A restriction as (excluding, names), so that ``tree+ring`` is ``ring+tree``."""
    return restriction.startswith("^"), frozenset(restriction.lstrip("^").split("+"))


def check_logged(model: Model, runs: Sequence[Run]) -> None:
    """Refuses a log whose NCCL ran, at some size, an algorithm and protocol that the
    restriction leaves out (``--algo``/``--proto`` against the log) or that NCCL's model
    cannot run on the calibration's fabric (CollNet without ``sharp=true``, NVLS where the
    node has none): ``InputError("log", ...)`` naming the line and the reason."""
    for run in runs:
        seen: set[tuple[str, str]] = set()
        for size, c in sorted(run.choices.items()):
            if (c.algo, c.proto) in seen:
                continue
            seen.add((c.algo, c.proto))
            where = f"{run.path}:{c.line}: NCCL ran {c.label()} for {run.collective} of {size:,} bytes"
            for option, name, restriction in (("algo", c.algo, model.algo), ("proto", c.proto, model.proto)):
                if not allows(restriction, name):
                    raise InputError(
                        "log",
                        f"{where}, outside the restriction {option}={restriction} (--{option}, or the "
                        f"NCCL_{option.upper()} a log printed)",
                    )
            try:
                model.predict(run, size, Calibration())
            except InputError as e:
                raise InputError(
                    "log", f"{where}, which NCCL's model of {clip(model.topology)} cannot run: {e.args[-1]}"
                ) from None


def check_restriction(
    runs: Sequence[Run],
    topology: str,
    bandwidth: Optional[float],
    transport: str,
    algo: Optional[str],
    proto: Optional[str],
) -> None:
    """Refuses an ``algo``/``proto`` restriction that NCCL's model cannot run on one of the
    runs (unknown names, or nothing allowed that runs there): ``InputError`` naming the
    option (``algo`` or ``proto``) with the core's reason."""
    if algo is None and proto is None:
        return
    for run in runs:
        try:
            nccl_predict(
                topology,
                run.ranks,
                run.collective,
                1 << 20,
                bandwidth=bandwidth,
                transport=transport,
                algo=algo,
                proto=proto,
            )
        except InputError as e:
            field, message = (e.args[0], e.args[-1]) if len(e.args) >= 2 else ("", str(e))
            name = "proto" if str(field).endswith("proto") else "algo"
            raise InputError(name, f"{run.path}: {message}") from None


def _lstsq(rows: Sequence[tuple[float, ...]]) -> Optional[list[float]]:
    """Weighted least squares of ``y = sum x_j * col_j`` over rows ``(y, col_0, ..., col_m,
    w)``, by the normal equations; None when they are singular.

    The columns are equilibrated first (the normal matrix scaled to a unit diagonal): their
    units differ by orders of magnitude (seconds per second of latency, per unit of inverse
    efficiency, per second of step cost: 1, 1e-5..1e-1 and 1..1e4), and unscaled the
    elimination would take a well-determined system for a singular one."""
    n = len(rows[0]) - 2
    a = [[sum(r[-1] ** 2 * r[1 + i] * r[1 + j] for r in rows) for j in range(n)] for i in range(n)]
    b = [sum(r[-1] ** 2 * r[1 + i] * r[0] for r in rows) for i in range(n)]
    if any(a[i][i] <= 0 for i in range(n)):
        return None  # a column of zeros: that unknown is not determined
    d = [a[i][i] ** 0.5 for i in range(n)]
    a = [[a[i][j] / (d[i] * d[j]) for j in range(n)] for i in range(n)]
    b = [b[i] / d[i] for i in range(n)]
    for c in range(n):  # Gaussian elimination with partial pivoting
        p = max(range(c, n), key=lambda r: abs(a[r][c]))
        if abs(a[p][c]) <= 1e-12:
            return None
        a[c], a[p], b[c], b[p] = a[p], a[c], b[p], b[c]
        for r in range(c + 1, n):
            m = a[r][c] / a[c][c]
            a[r] = [x - m * y for x, y in zip(a[r], a[c])]
            b[r] -= m * b[c]
    x = [0.0] * n
    for c in reversed(range(n)):
        x[c] = (b[c] - sum(a[c][j] * x[j] for j in range(c + 1, n))) / a[c][c]
    return [x[i] / d[i] for i in range(n)]


#: The kinds of unknown of :func:`_solve`: an added latency ``L``, an inverse efficiency ``a``,
#: ``b = a x fill`` (its ``a`` is the unknown just before it) and a step cost ``S``.
LATENCY, INVERSE_EFFICIENCY, FILL, STEP = "L", "a", "b", "S"
#: One efficiency family's unknowns: what a regime with one family fits.
ONE_FAMILY: tuple[str, ...] = (LATENCY, INVERSE_EFFICIENCY, FILL, STEP)

#: The ways each kind of unknown may be pinned at the solution: free (``None``), at a bound (a
#: number), or, for ``b = a x fill``, at the largest fill (``"ratio"``: ``b = MAX_FILL x a``).
#: The bounds are the ranges the topology specs take: ``L >= 0``, ``a >= 1 / MAX_EFFICIENCY``,
#: ``0 <= b <= MAX_FILL x a``, ``0 <= S <= MAX_STEP_S``.
_PINS: dict[str, tuple[object, ...]] = {
    LATENCY: (None, 0.0),
    INVERSE_EFFICIENCY: (None, 1 / MAX_EFFICIENCY),
    FILL: (None, 0.0, "ratio"),
    STEP: (None, 0.0, MAX_STEP_S),
}


def _feasible(x: Sequence[float], kinds: Sequence[str]) -> bool:
    """``x`` (unknowns of ``kinds``) within the specs' ranges (to rounding)."""
    tol = 1e-12
    for j, (v, kind) in enumerate(zip(x, kinds)):
        ok = {
            LATENCY: v >= -tol,
            INVERSE_EFFICIENCY: v >= 1 / MAX_EFFICIENCY * (1 - tol),
            FILL: -tol <= v <= MAX_FILL * x[j - 1] * (1 + tol),
            STEP: -tol * MAX_STEP_S <= v <= MAX_STEP_S * (1 + tol),
        }[kind]
        if not ok:
            return False
    return True


def _pinned_solution(
    rows: Sequence[tuple[float, ...]], kinds: Sequence[str], pins: Sequence[object]
) -> Optional[list[float]]:
    """Least squares of :func:`_solve`'s rows with the unknowns pinned as ``pins`` say
    (:data:`_PINS`) and the others free: each unknown is ``x_j = c_j + sum_k M_jk z_k`` in the
    free ``z``, the rows are rewritten in ``z`` and solved; None where they do not determine
    ``z``."""
    n = len(kinds)
    c = [0.0] * n
    m: list[list[float]] = []  # m[j]: x_j's coefficients on the free unknowns
    free = [j for j in range(n) if pins[j] is None]
    for j in range(n):
        pin = pins[j]
        if pin is None:
            m.append([1.0 if k == j else 0.0 for k in free])
        elif pin == "ratio":  # b = MAX_FILL x a (its a comes just before it)
            c[j] = MAX_FILL * c[j - 1]
            m.append([MAX_FILL * v for v in m[j - 1]])
        else:
            c[j] = float(pin)  # type: ignore[arg-type]
            m.append([0.0] * len(free))
    if not free:
        return c
    reduced = [
        (
            r[0] - sum(c[j] * r[1 + j] for j in range(n)),
            *(sum(m[j][k] * r[1 + j] for j in range(n)) for k in range(len(free))),
            r[-1],
        )
        for r in rows
    ]
    z = _lstsq(reduced)
    if z is None:
        return None
    return [c[j] + sum(m[j][k] * z[k] for k in range(len(free))) for j in range(n)]


def _solve(rows: Sequence[tuple[float, ...]], kinds: Sequence[str] = ONE_FAMILY) -> tuple[float, ...]:
    """Weighted least squares of ``y = sum x_j * col_j`` over rows ``(y, col_0, ..., w)``, the
    unknowns ``x`` of ``kinds`` (default ``L, a, b, S``: rows ``(y, dl, s, sf, sn, w)``)
    within the specs' ranges (:data:`_PINS`): every way of pinning the unknowns to their
    bounds is solved and the feasible solution of least squares kept (exact for this convex
    problem: its optimum is the least squares solution on its own active set). There always
    is one: every unknown at a bound is a feasible point."""
    n = len(kinds)
    best: Optional[tuple[float, tuple[float, ...]]] = None
    for pins in itertools.product(*(_PINS[k] for k in kinds)):
        x = _pinned_solution(rows, kinds, pins)
        if x is None or not _feasible(x, kinds):
            continue
        sse = sum(r[-1] ** 2 * (r[0] - sum(x[j] * r[1 + j] for j in range(n))) ** 2 for r in rows)
        if best is None or sse < best[0] - 1e-15 * abs(sse):
            clipped = [
                min(max(v, 0.0), MAX_STEP_S) if k == STEP else v if k == INVERSE_EFFICIENCY else max(v, 0.0)
                for v, k in zip(x, kinds)
            ]
            best = (sse, tuple(clipped))
    assert best is not None  # the point with every unknown pinned is always feasible
    return best[1]


def _objective(model: Model, pairs: Sequence[tuple[Run, int, float]], cal: Calibration) -> float:
    """The fit's least-squares objective at ``cal``: the sum of the rows' squared relative
    errors in time, ``((t - predicted) / t)^2`` (the weights 1/t of :func:`_solve`), with the
    model's own choice for every row."""
    return sum(((t - model.predict(run, size, cal).seconds) / t) ** 2 for run, size, t in pairs)


#: The efficiency families of each regime, by the :class:`Calibration` fields of their
#: efficiency and fill: inside a node NVLS has its own (``nvls_*``), every other algorithm and
#: all-to-all share ``intra_*``; across nodes NVLS tree has its own (``nvlstree_*``: the nodes'
#: NVSwitches reduce, and the tree's chains cross the NICs one hop per node), rings, trees,
#: CollNet and all-to-all share ``inter_*``.
FAMILIES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "intra": (("intra", "intra_efficiency", "intra_fill"), ("nvls", "nvls_efficiency", "nvls_fill")),
    "inter": (("inter", "inter_efficiency", "inter_fill"), ("nvlstree", "nvlstree_efficiency", "nvlstree_fill")),
}
#: The algorithm of each regime's second family, the family's name in :data:`FAMILIES`
#: (``nvls`` inside a node, ``nvlstree`` across nodes).
OWN_FAMILY_ALGO = {regime: families[1][0] for regime, families in FAMILIES.items()}
#: A family's efficiency and fill are fitted where at least this many of its rows spend at
#: least :data:`BANDWIDTH_BOUND` of their time on the transfer; one whose rows are all
#: latency-bound (an all-reduce sweep's 1 MiB ring row beside NVLS from 2 MiB up) says
#: nothing about its bandwidth and keeps NCCL's figures, unless it is the regime's only one
#: (:func:`_one_family`).
MIN_BANDWIDTH_ROWS = 2
BANDWIDTH_BOUND = 0.5


def _family(model: Model, regime: str, algo: str) -> int:
    """The index in ``FAMILIES[regime]`` of the family a row run with ``algo`` belongs to."""
    return 1 if model.native and algo == OWN_FAMILY_ALGO[regime] else 0


def family_of(model: Model, regime: str, algo: str) -> str:
    """The name (:data:`FAMILIES`) of the family a row of ``regime`` run with ``algo`` belongs to."""
    return FAMILIES[regime][_family(model, regime, algo)][0]


def _one_family(model: Model, runs: Sequence[Run], regime: str) -> bool:
    """Whether the regime has one efficiency family for ``runs``: NCCL's model can run the
    second's algorithm (:data:`OWN_FAMILY_ALGO`: NVLS, NVLS tree) for none of them, within the
    logs' NCCL_ALGO / NCCL_PROTO (an A100 node, ``nvls=false``, ``--algo Ring,Tree``,
    all-to-all), or the calibration is applied outside the core (:func:`_family`). Rows that
    are all latency-bound then fit that family, which no other family's figures could stand
    in for; where a second one could run, they keep NCCL's figures (docs/calibration.md: an
    H100 sweep of 8 B-4 KiB, rings only, had fitted ``intra_efficiency=2``)."""
    return not model.native or not any(_runs_algo(model, run, OWN_FAMILY_ALGO[regime]) for run in runs)


def _runs_algo(model: Model, run: Run, algo: str) -> bool:
    """Whether NCCL's model can run ``run``'s collective (at its largest size) with ``algo``
    on the model's fabric, within the logs' restriction (``model.algo``, ``model.proto``)."""
    return runs_algo(model, run.ranks, run.collective, max((r.size for r in run.rows), default=1 << 30), algo)


def runs_algo(model: Model, ranks: int, collective: str, size: int, algo: str) -> bool:
    """Whether NCCL's model can run ``collective`` on ``ranks`` GPUs (``size`` bytes) with
    ``algo`` on the model's fabric, within the logs' restriction (``model.algo``,
    ``model.proto``). Whether it can does not depend on the size (the fabric, the collective,
    the ranks and the restriction decide), so a cluster file, which records no sizes, asks
    it at any (:mod:`~tensorwire.calibrate.cluster_file`)."""
    if not allows(model.algo, algo):
        return False  # NCCL_ALGO leaves it out
    try:
        p = nccl_predict(
            model.topology,
            ranks,
            collective,
            size,
            bandwidth=model.bandwidth,
            transport=model.transport,
            algo=algo,
            proto=model.proto,
        )
    except InputError:
        return False  # the fabric cannot (no NVLink SHARP), or not under the restriction
    return p.algo == algo  # all-to-all runs point-to-point whatever NCCL_ALGO says


@dataclass(frozen=True)
class _Slopes:
    """One row at a round's choice of algorithm, protocol and channels: its measured time ``t``
    and the model's, ``c + L dl + a s + b sf + S sn`` (``a = k``, ``b = k F``: affine in the
    unknowns), of its efficiency family (an index in ``FAMILIES[regime]``); ``predicted`` is the
    model's time at the round's parameters."""

    family: int
    t: float
    c: float
    dl: float
    s: float
    sf: float
    sn: float
    predicted: float


def _slopes(model: Model, run: Run, size: int, t: float, cal: Calibration, regime: str) -> _Slopes:
    """The row (``run`` at ``size``, measured ``t``) at ``cal``'s choice, its slopes read off the
    model by finite differences (exact for an affine model)."""
    lat_field, step_field = f"{regime}_latency_s", f"{regime}_step_s"
    choice = model.predict(run, size, cal)
    family = _family(model, regime, choice.algo)
    eff_field, fill_field = FAMILIES[regime][family][1], FAMILIES[regime][family][2]
    k = 1 / float(getattr(cal, eff_field))
    lat = float(getattr(cal, lat_field))
    base = replace(cal, **{eff_field: 1 / k, fill_field: 0.0, step_field: 0.0})

    def at(c: Calibration) -> float:
        return model.predict(run, size, c.rounded(), choice).seconds

    t0 = at(base)
    sf = (at(replace(base, **{fill_field: 1.0})) - t0) / k
    s = (at(replace(base, **{eff_field: 1 / (2 * k)})) - t0) / k
    dl = (at(replace(base, **{lat_field: lat + 1e-6})) - t0) / 1e-6
    sn = (at(replace(base, **{step_field: 1e-6})) - t0) / 1e-6 if model.native else 0.0
    return _Slopes(family, t, t0 - dl * lat - s * k, dl, s, sf, sn, choice.seconds)


def _free_families(rows: Sequence[_Slopes], one_family: bool) -> list[int]:
    """The families the rows determine (:data:`MIN_BANDWIDTH_ROWS` of them bandwidth-bound);
    the regime's only family (``one_family``) even on latency-bound rows."""
    present = sorted({r.family for r in rows})
    bandwidth_rows = {f: sum(r.family == f and r.s >= BANDWIDTH_BOUND * r.predicted for r in rows) for f in present}
    free = [f for f in present if bandwidth_rows[f] >= MIN_BANDWIDTH_ROWS]
    return present if not free and one_family else free


def _solved(model: Model, rows: Sequence[_Slopes], cal: Calibration, regime: str, free: Sequence[int]) -> Calibration:
    """``cal`` with the regime's parameters of least squares (:func:`_solve`) over ``rows``: the
    latency, the step cost and the ``free`` families' efficiency and fill; every other family of
    the regime is solved at NCCL's figures (``a = 1``, ``b = 1``), and so set to them (a value
    an earlier round fitted would otherwise be written beside a fit that assumed 1)."""
    families = FAMILIES[regime]
    kinds = [LATENCY] + [kind for _ in free for kind in (INVERSE_EFFICIENCY, FILL)] + [STEP]
    system = []
    for r in rows:
        y = r.t - r.c if r.family in free else r.t - r.c - r.s - r.sf  # a kept family: a = 1, b = 1
        cols: list[float] = []
        for f in free:
            cols += [r.s, r.sf] if f == r.family else [0.0, 0.0]
        system.append((y, r.dl, *cols, r.sn, 1 / r.t))
    x = _solve(system, kinds)
    changes = {field: 1.0 for f in range(len(families)) if f not in free for field in families[f][1:]}
    changes[f"{regime}_latency_s"] = x[0]
    if model.native:
        changes[f"{regime}_step_s"] = x[-1]
    for i, f in enumerate(free):
        a, b = x[1 + 2 * i], x[2 + 2 * i]
        changes[families[f][1]] = 1 / a
        if model.native:
            changes[families[f][2]] = b / a
    return replace(cal, **changes).rounded()


def _fit_regime(
    model: Model, pairs: Sequence[tuple[Run, int, float]], cal: Calibration, regime: str, one_family: bool
) -> tuple[Calibration, tuple[str, ...], bool]:
    """The regime's calibration fitted to ``pairs``, the families whose efficiency and fill
    it fitted, and whether any round reproduced the rows better (by :func:`_objective`, the
    least squares the rounds solve) than ``cal`` did; where none did, ``cal`` comes back
    unchanged with no family.
    ``one_family``: the regime has one family (:func:`_one_family`)."""
    best, best_objective = cal, _objective(model, pairs, cal)
    best_families: tuple[str, ...] = ()
    improved = False
    for _ in range(MAX_ITERATIONS):
        rows = [_slopes(model, run, size, t, cal, regime) for run, size, t in pairs]
        free = _free_families(rows, one_family)
        new = _solved(model, rows, cal, regime, free)
        objective = _objective(model, pairs, new)
        if objective < best_objective:
            best, best_objective, improved = new, objective, True
            best_families = tuple(FAMILIES[regime][f][0] for f in free)
        if new == cal:
            break
        cal = new
    return best, best_families, improved


def fit(
    runs: Sequence[Run],
    topology: str,
    bandwidth: Optional[float],
    transport: str,
    algo: Optional[str] = None,
    proto: Optional[str] = None,
) -> Fit:
    """Fits the calibration of ``topology`` to ``runs`` (see the module's description), with
    NCCL's choice restricted to ``algo`` / ``proto`` where the runs were (NCCL_ALGO /
    NCCL_PROTO, in the ``nccl`` strategy's syntax; :func:`logged_restriction` reads them from
    the logs), and each row run with the algorithm and protocol NCCL logged for its size where
    it did (:attr:`Run.choices`; refused where the model cannot run it, :func:`check_logged`)."""
    model = Model(topology, bandwidth, transport, calibration_supported(topology), algo, proto)
    check_logged(model, runs)
    start = Calibration()
    cal = start
    fitted: list[str] = []
    families: list[str] = []
    kept: list[str] = []
    for regime, chosen in (("intra", [r for r in runs if r.nodes == 1]), ("inter", [r for r in runs if r.nodes > 1])):
        pairs = [(run, row.size, row.seconds) for run in chosen for row in run.rows if row.size > 0]
        if pairs:
            cal, regime_families, improved = _fit_regime(model, pairs, cal, regime, _one_family(model, chosen, regime))
            fitted.append(regime)
            families += regime_families
            if not improved:
                kept.append(regime)
    rows = tuple(
        RowFit(
            run=run,
            size=row.size,
            measured_busbw=row.busbw,
            measured_seconds=row.seconds,
            before=model.predict(run, row.size, start),
            after=model.predict(run, row.size, cal),
            model_choice=model.predict(run, row.size, cal, logged=False) if row.size in run.choices else None,
        )
        for run in runs
        for row in run.rows
        if row.size > 0
    )
    return Fit(cal, model, rows, tuple(fitted), tuple(families), tuple(kept))
