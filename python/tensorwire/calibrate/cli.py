"""``tensorwire calibrate nccl-tests LOG...``: fit the fabric to your own cluster's nccl-tests."""

from __future__ import annotations

import datetime
import json
from typing import Any, Optional

import click
from rich.table import Table

from tensorwire import _core
from tensorwire.calibrate import cluster_file
from tensorwire.calibrate.fit import (
    OWN_FAMILY_ALGO,
    Fit,
    RowFit,
    check_restriction,
    check_runs,
    default_topology,
    family_of,
    fit,
    logged_restriction,
    nccl_list,
    node_gpus,
    node_of_another_gpu,
    rail_node,
    topology_options,
    with_options,
)
from tensorwire.calibrate.logs import COLLECTIVES, Run, check_distinct
from tensorwire.calibrate.nccl_log import TRANSPORTS, agreed
from tensorwire.calibrate.reading import parse_log
from tensorwire.cli import options, render
from tensorwire.io import check_output, clip
from tensorwire.strategy import gpu_fabric
from tensorwire.units import format_bytes, format_seconds


@click.group("calibrate")
def calibrate() -> None:
    """Fit the fabric's efficiencies and latencies to measurements of your own cluster."""


def _base_topology(given: Optional[str], runs: list[Run]) -> str:
    if given is not None:
        kind = _core.check_topology(given)
        if not gpu_fabric(given):
            raise _core.InputError(
                "topology",
                f"{clip(given)!r} is a {kind} fabric; calibration fits NCCL's model of GPU nodes: give "
                "rail[:node=NAME,...] or nodes[:machine=NAME]",
            )
        return given
    names = [p["name"] for p in _core.NODE_PRESETS]
    return default_topology(runs, names)


def _transport(given: Optional[str], topology: str, logged: Optional[tuple[str, str]] = None) -> tuple[str, str]:
    """The transport the fit assumes and the base topology that carries it: ``--transport``,
    else the topology's ``transport=``, else the one NCCL's network in the logs is (``logged``:
    the transport and where the log said it, :func:`_logged_transport`), else ``rdma``. A
    ``tcp`` that only ``--transport`` or the logs gave is added to the topology
    (``transport=tcp``), so that the cluster file's topology carries it to every strategy run
    with ``--cluster``. Two of them given, and different: refused.

    >>> _transport("tcp", "rail:node=a3-mega"), _transport(None, "rail:transport=tcp")
    (('tcp', 'rail:node=a3-mega,transport=tcp'), ('tcp', 'rail:transport=tcp'))
    >>> _transport(None, "rail", ("tcp", "ar.log:12 logged NCCL's network Socket"))
    ('tcp', 'rail:transport=tcp')
    """
    own = topology_options(topology).get("transport")
    if given is not None and own is not None and given != own:
        raise _core.InputError(
            "transport", f"--transport {given} differs from the topology's transport={clip(own)}; give one of them"
        )
    stated = given or own
    if logged is not None and stated is not None and stated != logged[0]:
        option = f"--transport {given}" if given is not None else f"the topology's transport={clip(own or '')}"
        raise _core.InputError(
            "transport", f"{option} differs from what NCCL used: {logged[1]}, which is {logged[0]}; drop it"
        )
    chosen = stated or (logged[0] if logged is not None else "rdma")
    if chosen == "tcp" and own is None:
        topology = with_options(topology, "transport=tcp")
    return chosen, topology


def _logged_transport(runs: list[Run]) -> Optional[tuple[str, str]]:
    """The transport NCCL's network in the logs is (``Using network IB`` is ``rdma``,
    ``Socket`` is ``tcp``: :data:`~tensorwire.calibrate.nccl_log.TRANSPORTS`) and where a log
    said it; None where no log names one tensorwire knows (a plugin's, or no INFO lines).
    Logs of both: refused (one calibration fits one network)."""
    logged = [(run, s) for run in runs if (s := run.nccl_network) is not None and s.value in TRANSPORTS]
    s = agreed([(run.path, s) for run, s in logged], "NCCL's network", lambda a, b: TRANSPORTS[a] == TRANSPORTS[b])
    if s is None:
        return None
    return TRANSPORTS[s.value], f"{logged[0][0].path}:{s.line} logged NCCL's network {s.value}"


def check_node_gpu(runs: list[Run], topology: str) -> None:
    """Refuses a ``rail`` topology whose node preset has GPUs of another family (A100, H100,
    H200) than the logs ran on: the fit would fold the difference between the two GPUs into
    the efficiencies. Nodes of the families of the presets ``GPU_NODES`` lists for the log's
    GPU are accepted (an H200 log on an H100 node such as ``dgx-h100``, not the other way);
    an unrecognised GPU or preset, and other fabrics, are not checked
    (:func:`~tensorwire.calibrate.fit.node_of_another_gpu`)."""
    conflict = node_of_another_gpu(runs[0].gpu, topology)
    if conflict is None:
        return
    node_family, node, family, matching = conflict
    raise _core.InputError(
        "topology",
        f"{clip(topology)!r} has {node_family} nodes ({node}), but {runs[0].path} ran on {clip(runs[0].gpu)!r} "
        f"({family}): give --topology {_or([f'rail:node={n}' for n in matching])}",
    )


def _or(items: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return " or ".join(filter(None, (", ".join(items[:-1]), items[-1])))


def _gbs(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:,.2f}"


def _logs(result: Fit) -> list[tuple[Run, list[RowFit]]]:
    """Each log's run and its rows, in the order given; a log given twice once (the rows of
    its first run). Keyed by path and SHA-256, not by the :class:`Run`: hashing a frozen
    dataclass hashes every field, a run's every row among them, and keying the rows by their
    run made this quadratic in the rows (5,000 rows took 19 s, 100,000 past a minute)."""
    logs: dict[tuple[str, str], tuple[Run, list[RowFit]]] = {}
    for r in result.rows:
        run, rows = logs.setdefault((r.run.path, r.run.sha256), (r.run, []))
        if r.run is run:
            rows.append(r)
    return list(logs.values())


def _show(result: Fit) -> None:
    for run, run_rows in _logs(result):
        t = Table(
            title=f"{run.path}: {run.collective} on {run.nodes} node{'s' * (run.nodes > 1)} x {run.gpus_per_node} "
            f"{run.gpu}, busbw GB/s",
        )
        for column in ("size", "measured", "before", "after", "error", "algo/proto"):
            t.add_column(column, justify="left" if column == "algo/proto" else "right")
        for r in run_rows:
            miss = abs(r.error) > 0.05
            t.add_row(
                format_bytes(r.size),
                _gbs(r.measured_busbw),
                _gbs(r.before.busbw),
                _gbs(r.after.busbw),
                f"[red]{r.error:+.1%}[/red]" if miss else f"{r.error:+.1%}",
                f"{r.after.algo}/{r.after.proto}" + (" (logged)" if r.logged else ""),
            )
        render.console.print(t)
    render.console.print(_parameters(result))
    for line in _summary(result):
        click.echo(line)


def _parameters(result: Fit) -> Table:
    """The table of the twelve parameters: value, and where it comes from (:func:`_source`)."""
    c = result.calibration
    p = Table(
        title="fitted calibration"
        + ("" if result.model.native else " (applied outside the core: see docs/calibration.md)")
    )
    for column in ("parameter", "value", "from"):
        p.add_column(column)
    # (parameter, value, regime, family: the efficiency family a factor belongs to, or None
    # for the regime's shared latency and step cost)
    for name, value, regime, family in (
        ("intra_efficiency", f"{c.intra_efficiency:.4g}", "intra", "intra"),
        ("intra_latency", format_seconds(c.intra_latency_s), "intra", None),
        ("intra_fill", f"{c.intra_fill:.4g}", "intra", "intra"),
        ("intra_step", format_seconds(c.intra_step_s), "intra", None),
        ("nvls_efficiency", f"{c.nvls_efficiency:.4g}", "intra", "nvls"),
        ("nvls_fill", f"{c.nvls_fill:.4g}", "intra", "nvls"),
        ("inter_efficiency", f"{c.inter_efficiency:.4g}", "inter", "inter"),
        ("inter_latency", format_seconds(c.inter_latency_s), "inter", None),
        ("inter_fill", f"{c.inter_fill:.4g}", "inter", "inter"),
        ("inter_step", format_seconds(c.inter_step_s), "inter", None),
        ("nvlstree_efficiency", f"{c.nvlstree_efficiency:.4g}", "inter", "nvlstree"),
        ("nvlstree_fill", f"{c.nvlstree_fill:.4g}", "inter", "nvlstree"),
    ):
        if family == OWN_FAMILY_ALGO[regime] and not _ran(result, regime, family):
            continue  # no row of that algorithm: nothing to say about it
        p.add_row(name, value, _source(result, name, regime, family))
    return p


def _source(result: Fit, name: str, regime: str, family: Optional[str]) -> str:
    """Where the parameter ``name`` of ``regime`` (of the efficiency ``family``, or None for
    the regime's latency and step cost) comes from: fitted from the rows, or kept at NCCL's
    figure, and why. A parameter not fitted is NCCL's figure (the fit sets every family it does
    not fit to 1 and 1), so the value beside it is that figure."""
    if regime not in result.fitted:
        return "not measured (default)"
    if regime in result.kept:
        return "kept (NCCL's figure): nothing fitted, no round did better"
    if family is not None and family not in result.families:
        if not _ran(result, regime, family):
            return "kept (NCCL's figure): no row ran it"
        return "kept (NCCL's figure): too few bandwidth-bound rows"
    rows = {"nvls": "single-node NVLS rows", "nvlstree": "multi-node NVLS tree rows"}.get(
        family or "", "single-node rows" if regime == "intra" else "multi-node rows"
    )
    return rows + (", [red]at the specs' largest value[/red]" if name in result.calibration.at_upper_bounds() else "")


def _summary(result: Fit) -> list[str]:
    """The lines under the tables: how many rows the fit reproduces, and what to know of it."""
    within = sum(abs(r.error) <= 0.05 for r in result.rows)
    worst = max(result.rows, key=lambda r: abs(r.error))
    lines = [
        f"{within} of {len(result.rows)} rows within 5%; largest error {worst.error:+.1%} at {format_bytes(worst.size)} "
        f"({worst.run.path}). Topology: {result.topology}"
    ]
    at_bound = result.calibration.at_upper_bounds()
    if at_bound:
        lines.append(
            f"{', '.join(at_bound)} stopped at the largest value the topology specs take: the measured curve has "
            "a shape NCCL's model does not give, and the fit describes that shape, not the fabric "
            "(docs/calibration.md)"
        )
    over = _above_line_rate(result)
    if over:
        rate, rows = over
        lines.append(
            f"{len(rows)} single-node row{'s' * (len(rows) > 1)} run above the NVLink line rate of "
            f"{rate / 1e9:g} GB/s per GPU after the fit (largest {max(r.after.busbw for r in rows) / 1e9:.1f} GB/s): no "
            "ring, tree or point-to-point transfer carries more than its links, so these logs are probably not of "
            "this node (--topology)"
        )
    skipped = _skipped(result)
    if skipped:
        logs = ", ".join(dict.fromkeys(log for log, _ in skipped))
        lines.append(
            f"{len(skipped)} row{'s' * (len(skipped) > 1)} of size 0 skipped ({logs}): they time nothing "
            "(nccl-tests' -b 0)"
        )
    lines += _logged(result)
    strategy = _restricted_strategy(result)
    if strategy != "nccl":
        lines.append(f"Measured with NCCL's choice restricted: simulate with -s {strategy}")
    if result.model.transport == "tcp":
        lines.append(
            "Measured over NCCL's socket transport: the topology says transport=tcp, which every strategy run "
            "with --cluster takes unless it gives a transport= of its own"
        )
    for regime in result.kept:
        lines.append(
            f"Nothing was fitted to the {'single' if regime == 'intra' else 'multi'}-node rows: no round of the fit "
            "reproduced them better than NCCL's own figures (by the sum of squared relative errors), so its "
            "parameters are NCCL's figures, here and in a cluster file (docs/calibration.md)"
        )
    return lines


#: The sizes a summary line names at most, and the notes on NCCL's logging it prints at most.
MAX_NAMED = 4


def _logged(result: Fit) -> list[str]:
    """What the logs' NCCL lines said and what the fit made of it: the NCCL_ALGO / NCCL_PROTO
    they logged, the rows run with NCCL's logged choice and where NCCL's model (the release
    tensorwire follows) would have chosen otherwise, and the logged launches not taken."""
    lines: list[str] = []
    runs = [run for run, _ in _logs(result)]
    for variable, setting in (("NCCL_ALGO", "nccl_algo"), ("NCCL_PROTO", "nccl_proto")):
        logged = next(((run, s) for run in runs if (s := getattr(run, setting)) is not None), None)
        if logged is not None:
            run, s = logged
            lines.append(f"{run.path}:{s.line} logged {variable} ({s.value}): NCCL's choice is restricted to it")
    network = next(((run, s) for run in runs if (s := run.nccl_network) is not None), None)
    if network is not None:
        run, s = network
        known = TRANSPORTS.get(s.value)
        lines.append(
            f"{run.path}:{s.line} logged NCCL's network {s.value}: "
            + (
                f"fitted as transport={known}"
                if known is not None
                else f"a plugin tensorwire does not tell apart: fitted as transport={result.model.transport}"
            )
        )
    ran = [(r, own) for r in result.rows if r.logged is not None and (own := r.model_choice) is not None]
    if ran:
        other = [(r, own) for r, own in ran if (own.algo, own.proto) != (r.after.algo, r.after.proto)]
        named = ", ".join(
            f"{format_bytes(r.size)} ran {r.after.algo}/{r.after.proto}, model {own.algo}/{own.proto}"
            for r, own in other[:MAX_NAMED]
        )
        lines.append(
            f"NCCL logged what it ran for {len(ran)} of {len(result.rows)} rows, and the fit runs that (logged); "
            f"NCCL {_core.NCCL_VERSION}'s model chooses the same for {len(ran) - len(other)} of them"
            + (f" (not: {named}{', ...' * (len(other) > MAX_NAMED)})" if other else "")
        )
    modelled = _core.NCCL_VERSION.split(".")[:2]
    other_releases = sorted({v for run in runs if (v := run.nccl_version) and v.split(".")[:2] != modelled})
    if other_releases and not ran:
        lines.append(
            f"These logs ran NCCL {', '.join(other_releases)}; tensorwire follows NCCL {_core.NCCL_VERSION}'s "
            "choices, which can differ by release: with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING in "
            "the log, calibrate fits what NCCL ran at each size"
        )
    notes = [note for run in runs for note in run.choice_notes]
    lines += notes[:MAX_NAMED]
    if len(notes) > MAX_NAMED:
        lines.append(f"... and {len(notes) - MAX_NAMED} more such launches")
    return lines


def _above_line_rate(result: Fit) -> Optional[tuple[float, list[RowFit]]]:
    """The NVLink line rate of a ``rail`` node (bytes/s per GPU and direction) and the
    single-node rows whose fitted busbw passes it. Only NVLS, whose reductions happen in the
    NVSwitches, may: a ring, tree or point-to-point transfer's busbw is what each GPU's link
    carries. None where no row passes (or the fabric is not ``rail``)."""
    node = rail_node(result.model.topology)
    if node is None:
        return None
    own = topology_options(result.model.topology).get("nvlink")
    rate = (
        _core.parse_rate("nvlink", own)
        if own is not None
        else next(float(p["nvlink_bytes_per_s"]) for p in _core.NODE_PRESETS if p["name"] == node)
    )
    rows = [r for r in result.rows if r.run.nodes == 1 and r.after.algo != "nvls" and r.after.busbw > rate * 1.001]
    return (rate, rows) if rows else None


def _ran(result: Fit, regime: str, family: str) -> bool:
    """A row of ``regime`` (``intra``: one node, ``inter``: across nodes) ran an algorithm of
    ``family`` (:func:`family_of`) before or after the fit: that family's parameters then have
    something to say."""
    return any(
        (r.run.nodes > 1) == (regime == "inter")
        and family in (family_of(result.model, regime, r.before.algo), family_of(result.model, regime, r.after.algo))
        for r in result.rows
    )


def _restricted_strategy(result: Fit) -> str:
    """The ``nccl`` strategy as the logs were measured: with their NCCL_ALGO / NCCL_PROTO
    restriction (``--cluster`` carries the fabric, its transport included, not the strategy's
    options)."""
    return cluster_file.measured_strategy(result.model.algo, result.model.proto)


def _skipped(result: Fit) -> list[tuple[str, int]]:
    """(log, line) of every row of size 0 the runs skipped."""
    return [(run.path, line) for run, _ in _logs(result) for line in run.skipped]


def _cluster(result: Fit, runs: list[Run], latency: float) -> dict[str, Any]:
    """The keys of the cluster file of ``result`` (:class:`~tensorwire.calibrate.cluster_file.ClusterFile`,
    which :func:`~tensorwire.calibrate.cluster_file.write` validates them against)."""
    versions = sorted({r.nccl_version for r in runs if r.nccl_version})
    return {
        "tensorwire_cluster": cluster_file.FORMAT,
        "topology": result.topology,
        "bandwidth_bytes_per_s": result.model.bandwidth,
        "latency_s": latency,
        "transport": result.model.transport,
        "gpus_per_node": cluster_file.logs_gpus_per_node([(r.nodes, r.gpus_per_node) for r in runs]),
        "calibration": result.calibration.as_dict(),
        "nccl_version_modelled": _core.NCCL_VERSION,
        "nccl_version_measured": versions[0] if len(versions) == 1 else (versions or None),
        "sources": [
            {
                "path": r.path,
                "sha256": r.sha256,
                "collective": r.collective,
                "nodes": r.nodes,
                "gpus_per_node": r.gpus_per_node,
                "gpu": r.gpu,
                "rows": len(r.rows),
            }
            for r in runs
        ],
        "max_abs_error": max(abs(r.error) for r in result.rows),
        "measured_with": {
            "algo": result.model.algo,
            "proto": result.model.proto,
            "strategy": _restricted_strategy(result),
        },
        "created": datetime.datetime.now(datetime.timezone.utc).strftime(cluster_file.CREATED_FORMAT),
    }


def _latency(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[float]:
    """``--latency`` as seconds, below the simulation horizon that ``--cluster`` checks too."""
    seconds = options._duration(ctx, param, value)
    if seconds is not None and seconds >= _core.HORIZON_S:
        raise _core.InputError(
            "latency",
            f"{clip(str(value))} is past the simulation horizon; durations must be below {_core.HORIZON_S:.0f} s "
            "(2^53 ns, 104 days)",
        )
    return seconds


@calibrate.command("nccl-tests")
@click.argument("logs", nargs=-1, required=True, metavar="LOG...")
@click.option(
    "--topology",
    default=None,
    help="The uncalibrated fabric, e.g. rail:node=dgx-h100 [default: from the GPU in the logs, for the SXM parts "
    "the presets hold: A100-SXM4 dgx-a100, H100 80GB HBM3 dgx-h100, H200 hgx-h200 (or dgx-h100); other GPUs "
    "(PCIe, NVL, GH200) need --topology].",
)
@options.bandwidth
@click.option(
    "--latency",
    default=f"{_core.DEFAULT_LATENCY_S * 1e6:g}us",
    show_default=True,
    callback=_latency,
    help="Latency per hop, written to the cluster file for the flow-level strategies.",
)
@click.option(
    "--transport",
    type=click.Choice(("rdma", "tcp")),
    default=None,
    help="NCCL's network transport the logs were measured over [default: the topology's transport=, else the "
    "network NCCL logged (IB: rdma, Socket: tcp), else rdma]; "
    "tcp is written into the cluster file's topology (transport=tcp), which strategies then take.",
)
@click.option(
    "--collective",
    type=click.Choice(COLLECTIVES),
    default=None,
    help="The collective of a log that names no *_perf binary and whose table cannot tell (all-gather or all-to-all).",
)
@click.option(
    "--algo",
    default=None,
    metavar="LIST",
    help="NCCL_ALGO the logs were measured with (e.g. Ring,Tree or ^NVLS; default: what NCCL logged, if it did); "
    "NCCL's model then chooses only among these.",
)
@click.option(
    "--proto",
    default=None,
    metavar="LIST",
    help="NCCL_PROTO the logs were measured with (e.g. Simple; default: what NCCL logged, if it did); NCCL's model "
    "then chooses only among these.",
)
@click.option("--out", "-o", default=None, metavar="FILE", help="Write the cluster file (JSON) for --cluster FILE.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def nccl_tests(
    logs: tuple[str, ...],
    topology: Optional[str],
    bandwidth: Optional[float],
    latency: float,
    transport: Optional[str],
    collective: Optional[str],
    algo: Optional[str],
    proto: Optional[str],
    out: Optional[str],
    as_json: bool,
) -> None:
    """Read nccl-tests' standard output (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
    alltoall_perf; single- and multi-node), or the JSON its -J FILE.json writes, fit the fabric's efficiencies and latencies
    (single-node runs: inside a node; multi-node runs: across nodes), show how well the fit
    reproduces every row, and with --out write a cluster file for --cluster FILE. Run
    nccl-tests with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING and NCCL's own lines
    give the NCCL_ALGO / NCCL_PROTO it ran under, its network (IB or Socket) and what it ran
    at each size, which the fit then runs.

    \b
      all_reduce_perf -b 1M -e 8G -f 2 -g 8 > ar.log
      tensorwire calibrate nccl-tests ar.log --out mycluster.json
      tensorwire simulate --cluster mycluster.json -n 8 -s nccl --collective allreduce:1GiB
    """
    if out is not None:
        check_output(out, "out", {"logs": logs})
    runs = [parse_log(path, collective) for path in logs]
    check_distinct(runs)
    fit_transport, base = _transport(transport, _base_topology(topology, runs), _logged_transport(runs))
    check_runs(runs, base, node_gpus(base))
    check_node_gpu(runs, base)
    algo, proto = logged_restriction(runs, nccl_list(algo), nccl_list(proto))
    check_restriction(runs, base, bandwidth, fit_transport, algo, proto)
    result = fit(runs, base, bandwidth, fit_transport, algo, proto)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "topology": result.topology,
                    "native": result.model.native,
                    "calibration": result.calibration.as_dict(),
                    "at_upper_bounds": result.calibration.at_upper_bounds(),
                    "kept_regimes": list(result.kept),
                    "strategy": _restricted_strategy(result),
                    "rows": [
                        {
                            "log": r.run.path,
                            "collective": r.run.collective,
                            "nodes": r.run.nodes,
                            "gpus_per_node": r.run.gpus_per_node,
                            "size": r.size,
                            "measured_busbw": r.measured_busbw,
                            "before_busbw": r.before.busbw,
                            "after_busbw": r.after.busbw,
                            "error": r.error,
                            "algo": r.after.algo,
                            "proto": r.after.proto,
                            "channels": r.after.channels,
                            "logged": None
                            if r.logged is None
                            else {
                                "algo": r.logged.algo,
                                "proto": r.logged.proto,
                                "channels": r.logged.channels,
                                "line": r.logged.line,
                            },
                            "model_algo": None if r.model_choice is None else r.model_choice.algo,
                            "model_proto": None if r.model_choice is None else r.model_choice.proto,
                        }
                        for r in result.rows
                    ],
                    "skipped_rows": [
                        {"log": log, "line": line, "size": 0, "reason": "size 0 times nothing"}
                        for log, line in _skipped(result)
                    ],
                },
                indent=1,
            )
        )
    else:
        _show(result)
    if out is not None:
        cluster_file.write(out, _cluster(result, runs, latency))
        nothing = set(result.kept) == set(result.fitted)
        click.echo(f"tensorwire: wrote {out}" + (" (nothing fitted: NCCL's own figures)" * nothing), err=True)
