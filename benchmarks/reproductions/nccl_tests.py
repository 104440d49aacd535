"""Published nccl-tests results against tensorwire's predictions (docs/reproductions.md,
section "NCCL collectives against published nccl-tests results").

Every published figure, with its source URL, is in ``data/nccl_tests.json``. Each series is
run as a tensorwire collective microbenchmark: one collective of the published size S
(nccl-tests' "size" column, the whole buffer) on the cluster the source describes, with the
``nccl`` strategy (``nccl:algo=^nvls`` where the source ran with NCCL_NVLS_ENABLE=0,
``nccl:algo=ring`` where it forced NCCL_ALGO=RING). Bus bandwidth uses nccl-tests'
definitions (doc/PERFORMANCE.md): algbw = S / t, busbw = algbw x factor (all-reduce
2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n).

Targets: within 10% from 64 MiB up, within 25% below; where a source says which
algorithm NCCL chose, tensorwire chooses the same (from ``_core.nccl_predict`` when the
binding exists).

Until the ``nccl`` strategy and the ``hgx-h200`` / ``a3-mega`` presets exist, the script
says so and falls back (``--strategy ring`` runs everything with the seeds' ring, to check
the harness). ``--only ID`` and ``--max-rows N`` run a subset (the unit test does).
``--markdown PATH`` writes the tables for docs/reproductions.md.

Cross-calibration (column "cross-calibrated"): where two publishers measured the same node
(single-node A100: Azure ND A100 v4 and ml-engineering; single-node H100/H200: Azure ND
H100 v5, Azure ND H200 v5 and ml-engineering's H200) or the same class of cluster (H100
and H200 nodes with 8 x 400 Gbit/s NICs: nccl-tests#309's 8 nodes, xxrjun's 10 nodes,
NVIDIA's, CoreWeave's and Google's A3 Ultra), a series is also predicted with the
calibration ``tensorwire calibrate nccl-tests`` fits (``tensorwire.calibrate.fit.fit``) on
the *other* source's all-reduce sweep (:data:`CALIBRATE_ON`), written into the topology as
``intra_efficiency=...,intra_latency=...,intra_fill=...,intra_step=...`` (one node, with NVLS's
``nvls_efficiency=...,nvls_fill=...`` where the sweep ran NVLS) or
``inter_efficiency=...,inter_latency=...,inter_fill=...,inter_step=...`` (across nodes). A series is never
predicted with a calibration fitted on its own rows. This is what a user gets from
calibrating on their own cluster and predicting a run they have not measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import tensorwire as tw
from tensorwire import _core
from tensorwire.calibrate import logs as calibrate_logs
from tensorwire.calibrate.fit import fit as calibrate_runs
from tensorwire.calibrate.fit import nccl_list, with_options
from tensorwire.workload import bus_factor

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "nccl_tests.json"
MiB = 2**20


#: The tolerance the issue sets: 10% from 64 MiB up, 25% below.
def target(size: int) -> float:
    return 0.10 if size >= 64 * MiB else 0.25


def load(path: Path = DATA) -> list[dict[str, Any]]:
    series: list[dict[str, Any]] = json.loads(path.read_text())["series"]
    return series


def strategy_for(series: dict[str, Any], base: str) -> str:
    """The strategy spec that runs what the source ran: NCCL_ALGO=X -> algo=X (NCCL's
    comma list as ``+``, a ``coll:`` prefix dropped); otherwise NCCL_NVLS_ENABLE=0 -> every
    algorithm but NVLS and NVLS-tree; NCCL_PROTO=X -> proto=X; a transport other than RDMA
    -> transport=X (``tcp``: NCCL's socket transport).

    >>> strategy_for({"env": "NCCL_ALGO=Ring,Tree NCCL_PROTO=Simple NCCL_NVLS_ENABLE=0"}, "nccl")
    'nccl:algo=ring+tree,proto=simple'
    >>> strategy_for({"env": "NCCL_NVLS_ENABLE=0", "transport": "tcp"}, "nccl")
    'nccl:algo=^nvls+nvlstree,transport=tcp'
    """
    if base != "nccl":
        return base
    env = dict(word.split("=", 1) for word in series.get("env", "").split() if "=" in word and word.startswith("NCCL_"))
    options = []
    if "NCCL_ALGO" in env:
        options.append(f"algo={nccl_list(env['NCCL_ALGO'].split(':')[-1])}")
    elif env.get("NCCL_NVLS_ENABLE") == "0":
        options.append("algo=^nvls+nvlstree")
    if "NCCL_PROTO" in env:
        options.append(f"proto={nccl_list(env['NCCL_PROTO'])}")
    if series.get("transport", "rdma") != "rdma":
        options.append(f"transport={series['transport']}")
    return "nccl" + (":" + ",".join(options) if options else "")


#: The calibration source of each series that another publisher also measured (first prefix
#: that matches the series id): the series on the right is the all-reduce sweep the calibration
#: is fitted on. H100 and H200 share the node's NVLink 4 / NVSwitch (900 GB/s per GPU), so one
#: calibrates the other; Azure's H200 page is calibrated on Azure's H100 page (same publisher,
#: another machine and NCCL release), Azure's H100 on ml-engineering's H200. Across nodes the
#: class is the NICs' as well as the node's: H100/H200 nodes with 8 x 400 Gbit/s NICs. Two
#: publishers swept all-reduce on such clusters: nccl-tests#309 (8 nodes, InfiniBand) and
#: xxrjun (10 nodes, fabric not named). #309 is calibrated on xxrjun's sweep; every other
#: series of the class (xxrjun's, NVIDIA's, CoreWeave's, Google's A3 Ultra) on #309's, the
#: one whose fabric is named.
CALIBRATE_ON: tuple[tuple[str, str], ...] = (
    ("azure-nda100v4-allreduce", "mle-a100-allreduce"),
    ("mle-a100-allreduce", "azure-nda100v4-allreduce"),
    ("azure-ndh100v5-allreduce", "mle-h200-allreduce-sweep"),
    ("azure-ndh200v5-allreduce", "azure-ndh100v5-allreduce"),
    ("mle-h200-", "azure-ndh100v5-allreduce"),
    ("nccltests309-h100-8x8-allreduce", "xxrjun-h100-10x8-allreduce"),
    ("xxrjun-h100-10x8-", "nccltests309-h100-8x8-allreduce"),
    ("nvidia-h100-multinode-ring", "nccltests309-h100-8x8-allreduce"),
    ("nvidia-h100-6node-alltoall", "nccltests309-h100-8x8-allreduce"),
    ("coreweave-h100-12x8-sharp", "nccltests309-h100-8x8-allreduce"),
    ("gcp-a3ultra-2x8-allgather", "nccltests309-h100-8x8-allreduce"),
)
#: Short names of the calibration sources for the table.
SOURCE_NAME = {
    "mle-a100-allreduce": "ml-eng A100",
    "azure-nda100v4-allreduce": "Azure A100",
    "mle-h200-allreduce-sweep": "ml-eng H200",
    "azure-ndh100v5-allreduce": "Azure H100",
    "nccltests309-h100-8x8-allreduce": "#309 8x8 H100",
    "xxrjun-h100-10x8-allreduce": "xxrjun 10x8 H100",
}


def calibration_source(series: dict[str, Any]) -> Optional[str]:
    """The id of the series whose fit calibrates ``series`` (:data:`CALIBRATE_ON`), or None."""
    for prefix, source in CALIBRATE_ON:
        if series["id"].startswith(prefix) and source != series["id"]:
            return source
    return None


def as_run(series: dict[str, Any]) -> calibrate_logs.Run:
    """A published series as the nccl-tests run ``tensorwire calibrate nccl-tests`` would read
    from its log: out-of-place time = size x bus factor / busbw (float elements)."""
    n = series["nodes"] * series["gpus_per_node"]
    factor = bus_factor(series["collective"], n)
    rows = []
    for i, row in enumerate(series["rows"], start=1):
        size, busbw = int(row[0]), float(row[1]) * 1e9
        seconds = size * factor / busbw
        rows.append(calibrate_logs.Row(i, size, size // 4, "float", "sum", seconds, size / seconds, busbw, None, None))
    return calibrate_logs.Run(
        path=series["source"],
        collective=series["collective"],
        binary=None,
        ranks=n,
        nodes=series["nodes"],
        gpus_per_node=series["gpus_per_node"],
        hosts=tuple(f"node{k}" for k in range(series["nodes"])),
        gpu=series["system"],
        nccl_version=series.get("nccl"),
        rows=tuple(rows),
        avg_busbw=None,
    )


@dataclass(frozen=True)
class Calibrated:
    """A calibration fitted on one source's series (the options it adds to the topology) and
    how well it reproduces that series' own rows."""

    source: str
    options: str
    rows: int
    own_median: float
    own_max: float


def fit_calibration(series: dict[str, Any]) -> Calibrated:
    """``tensorwire calibrate nccl-tests``' fit on one series, as topology options: the
    intra-node efficiency, latency, fill and step cost of a single-node series, the inter-node
    ones of a multi-node series (its intra-node four stay NCCL's, as ``calibrate`` leaves them
    when no single-node log is given)."""
    f = calibrate_runs([as_run(series)], series["topology"], None, series.get("transport", "rdma"))
    regime = "intra" if series["nodes"] == 1 else "inter"
    # The fitted regime's options as calibrate writes them (the other regime keeps NCCL's).
    options = ",".join(
        o
        for o in f.calibration.options().split(",")
        if o.startswith(f"{regime}_") or o.startswith({"intra": "nvls_", "inter": "nvlstree_"}[regime])
    )
    errs = [abs(r.error) for r in f.rows]
    return Calibrated(series["id"], options, len(errs), statistics.median(errs), max(errs))


@dataclass
class Row:
    series: str
    collective: str
    gpus: int
    size: int
    published: float
    predicted: Optional[float]
    note: str
    algo_published: str
    algo_predicted: str
    counted: bool
    cross: Optional[float] = None
    cross_source: str = ""
    nodes: int = 1

    @property
    def error(self) -> Optional[float]:
        if self.predicted is None:
            return None
        return self.predicted / self.published - 1

    @property
    def within(self) -> Optional[bool]:
        e = self.error
        return None if e is None else abs(e) <= target(self.size)

    @property
    def cross_error(self) -> Optional[float]:
        return None if self.cross is None else self.cross / self.published - 1


def published_algo(series: dict[str, Any], size: int) -> str:
    """What the source says NCCL ran at ``size``: ``all`` (every row), ``upto_1MiB`` /
    ``from_2MiB``, ``large`` (the source names it for large sizes, shown from 64 MiB up) or
    ``from_bytes`` / ``algo`` (a debug log shows it from that size up; empty below)."""
    a = series.get("algo_published")
    if not a:
        return ""
    if "from_bytes" in a:
        return str(a["algo"]) if size >= int(a["from_bytes"]) else ""
    if "all" in a:
        return str(a["all"])
    if "upto_1MiB" in a:
        return str(a["upto_1MiB"] if size <= MiB else a["from_2MiB"])
    if "large" in a:
        return str(a["large"]) + " (large)" if size >= 64 * MiB else ""
    return ""


def cluster(series: dict[str, Any], gpus: int, options: str = "") -> tuple[tw.Cluster, str]:
    """The cluster for a series (with more topology ``options``, e.g. a calibration), falling
    back to ``fallback_topology`` (with a note) when a preset does not exist yet."""
    notes = []
    for topo in [series["topology"], series.get("fallback_topology")]:
        if topo is None:
            continue
        for spec in [with_options(topo, options) if options else topo]:
            try:
                c = tw.Cluster(gpus, None, topology=spec)
            except _core.InputError as e:
                notes.append(f"`{spec}` refused ({e.args[-1] if e.args else e})")
                continue
            return c, "; ".join(notes + ([f"ran `{spec}`"] if notes else []))
    raise SystemExit(f"nccl_tests.py: no topology for {series['id']}: {'; '.join(notes)}")


def predict_algo(series: dict[str, Any], topology: str, gpus: int, size: int, spec: str) -> str:
    """The algorithm/protocol tensorwire's NCCL model chooses, from the binding
    ``_core.nccl_predict`` when it exists (empty otherwise)."""
    fn = getattr(_core, "nccl_predict", None)
    if fn is None or not spec.startswith("nccl"):
        return ""
    options = dict(o.split("=", 1) for o in spec.partition(":")[2].split(",") if "=" in o)
    try:
        out = fn(
            topology,
            gpus,
            series["collective"],
            size,
            transport=series.get("transport", "rdma"),
            algo=options.get("algo"),
            proto=options.get("proto"),
        )
    except Exception as e:  # noqa: BLE001 - reported in the table, not fatal
        return f"? ({type(e).__name__})"
    return f"{out['algo']}/{out['proto']}".lower()


def busbw(series: dict[str, Any], c: tw.Cluster, spec: str, size: int) -> float:
    """Predicted bus bandwidth (GB/s) of one collective of ``size`` bytes on ``c``."""
    gpus = series["nodes"] * series["gpus_per_node"]
    w = tw.Workload.collective(f"{series['collective']}:{size}B")
    r = tw.simulate(w, c, spec, iterations=1, max_flows=None)
    return size / r.iteration_time_s * bus_factor(series["collective"], gpus) / 1e9


def run_series(
    series: dict[str, Any], base: str, max_rows: Optional[int], calibration: Optional[Calibrated] = None
) -> list[Row]:
    gpus = series["nodes"] * series["gpus_per_node"]
    c, note = cluster(series, gpus)
    calibrated = cluster(series, gpus, calibration.options)[0] if calibration else None
    spec = strategy_for(series, base)
    rows = series["rows"][:max_rows] if max_rows else series["rows"]
    out = []
    for row in rows:
        size, published = row[0], row[1]
        predicted: Optional[float]
        cross: Optional[float] = None
        try:
            predicted = busbw(series, c, spec, size)
            row_note = note
            if calibrated is not None:
                cross = busbw(series, calibrated, spec, size)
        except _core.InputError as e:
            predicted, row_note = None, f"{spec} refused: {e}"
        out.append(
            Row(
                series["id"],
                series["collective"],
                gpus,
                int(size),
                float(published),
                predicted,
                row_note,
                published_algo(series, int(size)),
                predict_algo(series, c.topology, gpus, int(size), spec),
                series.get("kind", "measurement") == "measurement",
                cross,
                calibration.source if calibration and cross is not None else "",
                series["nodes"],
            )
        )
    return out


def size_str(b: int) -> str:
    return f"{b // 2**30} GiB" if b >= 2**30 else f"{b // MiB} MiB"


def summary(rows: Sequence[Row]) -> dict[str, Any]:
    counted = [r for r in rows if r.counted and r.error is not None]
    errs = [abs(r.error) for r in counted if r.error is not None]
    algo_rows = [r for r in counted if r.algo_published and r.algo_predicted]
    same = sum(1 for r in algo_rows if r.algo_predicted.split("/")[0] in r.algo_published.split(" ")[0].split("/")[0])
    return {
        "rows": len(counted),
        "median_abs_error": statistics.median(errs) if errs else None,
        "max_abs_error": max(errs) if errs else None,
        "within_target": sum(1 for r in counted if r.within),
        "algo_checked": len(algo_rows),
        "algo_same": same,
    }


def cross_summary(rows: Sequence[Row]) -> dict[str, Any]:
    """Uncalibrated against cross-calibrated on the same rows (those with a calibration from
    another source): median and max |error|, rows within target, rows better and worse."""
    both = [r for r in rows if r.counted and r.error is not None and r.cross_error is not None]
    out: dict[str, Any] = {"rows": len(both)}
    for key, err in (("uncalibrated", lambda r: r.error), ("cross", lambda r: r.cross_error)):
        errs = [abs(err(r)) for r in both]
        out[key] = {
            "median_abs_error": statistics.median(errs) if errs else None,
            "max_abs_error": max(errs) if errs else None,
            "within_target": sum(1 for r in both if abs(err(r)) <= target(r.size)),
        }
    out["better"] = sum(1 for r in both if abs(r.cross_error or 0) < abs(r.error or 0) - 0.0005)
    out["worse"] = sum(1 for r in both if abs(r.cross_error or 0) > abs(r.error or 0) + 0.0005)
    return out


def cross_summary_lines(s: dict[str, Any]) -> list[str]:
    if not s["rows"]:
        return []
    n = s["rows"]
    lines = []
    for key, label in (("uncalibrated", "uncalibrated"), ("cross", "cross-calibrated")):
        e = s[key]
        lines.append(
            f"{label}: {n} rows; median |error| {e['median_abs_error']:.1%}, max {e['max_abs_error']:.1%};"
            f" {e['within_target']} of {n} within target"
        )
    lines.append(
        f"cross-calibration made {s['better']} of {n} rows better and {s['worse']} worse (by more than 0.05 points)"
    )
    return lines


def cross_cell(r: Row) -> str:
    if r.cross is None or r.cross_error is None:
        return ""
    ok = "" if abs(r.cross_error) <= target(r.size) else " **no**"
    return f"{r.cross:.1f} ({r.cross_error:+.1%}{ok}; {SOURCE_NAME.get(r.cross_source, r.cross_source)})"


def markdown(rows: Sequence[Row], strategy: str, calibrations: Sequence[Calibrated] = ()) -> str:
    lines = [
        f"Strategy: `{strategy}`. busbw in GB/s (1e9 B/s), nccl-tests' definitions; error = predicted / published - 1;"
        " target 10% from 64 MiB up, 25% below. Algorithms: published where the source says, ours from"
        " `_core.nccl_predict`. Cross-calibrated: predicted busbw (error; the source calibrated on) with the"
        " calibration fitted on another publisher's all-reduce sweep of the same node (one node) or of the same"
        " node and NICs (across nodes).",
        "",
        "| series | collective | GPUs | size | published | predicted | error | in target | NCCL chose | tensorwire chose"
        " | cross-calibrated |",
        "|---|---|---:|---:|---:|---:|---:|---|---|---|---|",
    ]
    for r in rows:
        pred = "refused" if r.predicted is None else f"{r.predicted:.1f}"
        err = "" if r.error is None else f"{r.error:+.1%}"
        ok = "" if r.within is None else ("yes" if r.within else "**no**")
        if not r.counted:
            ok += " (expectation, not counted)"
        lines.append(
            f"| {r.series} | {r.collective} | {r.gpus} | {size_str(r.size)} | {r.published:.1f} | {pred} | {err} | {ok}"
            f" | {r.algo_published} | {r.algo_predicted} | {cross_cell(r)} |"
        )
    s = summary(rows)
    lines += ["", "Summary: " + summary_line(s)]
    if calibrations:
        lines += [
            "",
            "Calibrations (`tensorwire calibrate nccl-tests`' fit on one source's all-reduce sweep; own fit: how well"
            " it reproduces the rows it was fitted on):",
            "",
            "| calibrated on | series | rows | topology options | own fit: median, max abs error |",
            "|---|---|---:|---|---|",
        ]
        for c in calibrations:
            lines.append(
                f"| {SOURCE_NAME.get(c.source, c.source)} | {c.source} | {c.rows} | `{c.options}`"
                f" | {c.own_median:.1%}, {c.own_max:.1%} |"
            )
        for label, group in (
            ("one node", [r for r in rows if r.nodes == 1]),
            ("across nodes", [r for r in rows if r.nodes > 1]),
        ):
            cross = cross_summary_lines(cross_summary(group))
            if cross:
                lines += ["", f"Cross-calibration, {label}, on the rows that have one:", ""] + [f"- {x}" for x in cross]
    notes = sorted({f"{r.series}: {r.note}" for r in rows if r.note})
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def summary_line(s: dict[str, Any]) -> str:
    if not s["rows"]:
        return "no rows ran"
    return (
        f"{s['rows']} measured rows; median |error| {s['median_abs_error']:.1%}, max {s['max_abs_error']:.1%};"
        f" {s['within_target']} of {s['rows']} within target; algorithm named by the source and predicted:"
        f" {s['algo_same']} of {s['algo_checked']} the same"
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--strategy", default="nccl", help="nccl (default) or a seed strategy such as ring, to check the harness"
    )
    ap.add_argument("--only", action="append", default=[], help="run only the series with this id (repeatable)")
    ap.add_argument("--max-rows", type=int, default=None, help="run only the first N sizes of each series")
    ap.add_argument("--markdown", metavar="PATH", help="also write the Markdown tables to PATH")
    ap.add_argument("--no-cross", action="store_true", help="skip the cross-calibrated column")
    ap.add_argument(
        "--no-plot", action="store_true", help="accepted for the golden runner; this script writes no plots"
    )
    ap.add_argument("--data", type=Path, default=DATA, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    series = [s for s in load(a.data) if not a.only or s["id"] in a.only]
    strategy = a.strategy
    if strategy == "nccl":
        try:
            probe = tw.Cluster(8, None, topology="rail:node=dgx-h100")
            tw.simulate(tw.Workload.collective("allreduce:1MiB"), probe, "nccl", iterations=1)
        except _core.InputError as e:
            print(
                f"nccl_tests.py: the nccl strategy is not available yet ({e}); pass --strategy ring to check the harness",
                file=sys.stderr,
            )
            return 2
    by_id = {s["id"]: s for s in load(a.data)}
    calibrations: dict[str, Calibrated] = {}
    rows: list[Row] = []
    for s in series:
        source = calibration_source(s) if strategy == "nccl" and not a.no_cross else None
        if source is not None and source not in calibrations:
            calibrations[source] = fit_calibration(by_id[source])
        rows += run_series(s, strategy, a.max_rows, calibrations.get(source) if source else None)
    text = markdown(rows, strategy, list(calibrations.values()))
    print(text)
    if a.markdown:
        Path(a.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
