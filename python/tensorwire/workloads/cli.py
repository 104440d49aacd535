"""``tensorwire import-trace``: a PyTorch profiler or Chakra trace to a workload file."""

from __future__ import annotations

import json
import re
from typing import Optional

import click

from tensorwire.api import simulate
from tensorwire.cli import options
from tensorwire.cli.render import short
from tensorwire.cluster import Cluster
from tensorwire.io import check_workload_output
from tensorwire.limits import U32_MAX
from tensorwire.workload import Workload
from tensorwire.workloads.formats import detect_format, head_text, load_workload


@click.command("import-trace")
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "-o",
    required=True,
    type=click.Path(dir_okay=False),
    help="Workload file to write (tensorwire-workload/1 JSON).",
)
@options.workload_format
@click.option(
    "--step", type=click.IntRange(min=0), default=None, help="ProfilerStep#N to use (default: the last complete one)."
)
@click.option(
    "--name",
    default=None,
    callback=options.workload_name,
    help="Name of the workload (default: from the first file's name).",
)
@click.option(
    "--batch",
    type=click.IntRange(min=1, max=U32_MAX),
    default=None,
    help="Samples per worker and step (default: the leading dimension of the model's input in the trace, "
    "summed over gradient-accumulation micro-batches).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the workload as JSON too.")
def import_trace(
    traces: tuple[str, ...],
    out: str,
    workload_format: str,
    step: Optional[int],
    name: Optional[str],
    batch: Optional[int],
    as_json: bool,
) -> None:
    """Read TRACE... (one file per rank of the same job) and write a workload file.

    Kineto (PyTorch profiler) JSON or .json.gz, or Chakra execution traces; several ranks
    give median per-layer times and must have launched the same collectives. The file is
    written atomically. `tensorwire simulate --workload FILE` reads it (or the traces).
    """
    check_workload_output(out, "out", {"traces": traces})
    fmt = _detect(traces[0]) if workload_format == "auto" else workload_format
    workload = load_workload(list(traces), fmt, step=step, name=name, batch_size=batch)
    workload.save(out)
    if as_json:
        click.echo(json.dumps(workload.to_dict(), indent=1))
        return
    click.echo(f"{out}: {workload.name} from {len(traces)} {fmt} trace(s)")
    click.echo(f"  {short(workload.description)}")
    click.echo(f"  {'layer':<24} {'forward':>12} {'backward':>12} {'gradient bytes':>15}")
    for layer in workload.layers:
        size = sum(t.bytes for t in layer.tensors)
        click.echo(f"  {layer.name:<24} {layer.forward_s * 1e3:>9.3f} ms {layer.backward_s * 1e3:>9.3f} ms {size:>15,}")
    click.echo(
        f"  total: {len(workload.layers)} layers, {len(workload.tensors)} tensors, {workload.total_bytes:,} B, compute {workload.compute_time_s * 1e3:.3f} ms, batch {workload.batch_size}"
    )
    warning = credibility(workload, len(traces))
    if warning:
        click.echo(f"tensorwire: warning: {warning}", err=True)


def _detect(path: str) -> str:
    """:func:`detect_format`, except that a JSON object without a ``"format"`` key (so
    neither a workload file nor a Chakra trace) is read as a PyTorch profiler trace, whose
    reader says what a trace needs (``{}`` would otherwise be refused as a workload file
    missing its format)."""
    fmt = detect_format(path)
    if fmt == "tensorwire":
        text = head_text(path) or ""
        if text.lstrip().startswith("{") and '"format"' not in text:
            return "kineto"
    return fmt


#: A traced step and its simulation further apart than this factor get a warning.
CREDIBLE_RATIO = 2.0
_STEP_S = re.compile(r"step (\d+(?:\.\d*)?) s$")


def credibility(workload: Workload, ranks: int, bandwidth: str = "25Gbps") -> Optional[str]:
    """A warning when the measured step of the trace (the median over its ranks, at the end
    of the workload's description) and a simulation of the same ranks (ring all-reduce on a
    ``bandwidth`` star) differ by more than :data:`CREDIBLE_RATIO`; None when they agree or
    the trace states no step (docs/traces.md says what to do)."""
    m = _STEP_S.search(workload.description)
    if m is None or ranks < 2:
        return None
    measured = float(m.group(1))
    simulated = simulate(workload, Cluster(ranks, bandwidth), "ring").iteration_time_s
    if measured <= 0 or simulated <= 0 or max(measured / simulated, simulated / measured) <= CREDIBLE_RATIO:
        return None
    return (
        f"the traced step took {measured * 1e3:.3f} ms but simulating the {ranks} traced ranks (ring, {bandwidth} star) "
        f"gives {simulated * 1e3:.3f} ms ({max(measured / simulated, simulated / measured):.1f}x apart): the profiler's "
        "overhead, a CPU or Gloo backend, or a network unlike the simulated one; check before trusting projections "
        '(docs/traces.md, "Does the trace agree with the simulation?")'
    )
