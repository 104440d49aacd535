"""``tensorwire import-trace``: a PyTorch profiler or Chakra trace to a workload file."""

from __future__ import annotations

import json
from typing import Optional

import click

from tensorwire.cli import options
from tensorwire.cli.render import short
from tensorwire.io import check_output
from tensorwire.workloads.formats import detect_format, load_workload


@click.command("import-trace")
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Workload file to write (tensorwire-workload/1 JSON).")
@options.workload_format
@click.option("--step", type=click.IntRange(min=0), default=None, help="ProfilerStep#N to use (default: the last complete one).")
@click.option("--name", default=None, help="Name of the workload (default: from the first file's name).")
@click.option("--json", "as_json", is_flag=True, help="Print the workload as JSON too.")
def import_trace(traces: tuple[str, ...], out: str, workload_format: str, step: Optional[int], name: Optional[str], as_json: bool) -> None:
    """Read TRACE... (one file per rank of the same job) and write a workload file.

    Kineto (PyTorch profiler) JSON or .json.gz, or Chakra execution traces; several ranks
    give median per-layer times and must have launched the same collectives. The file is
    written atomically. `tensorwire simulate --workload FILE` reads it (or the traces).
    """
    check_output(out, "out")
    fmt = detect_format(traces[0]) if workload_format == "auto" else workload_format
    workload = load_workload(list(traces), fmt, step=step, name=name)
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
    click.echo(f"  total: {len(workload.layers)} layers, {len(workload.tensors)} tensors, {workload.total_bytes:,} B, compute {workload.compute_time_s * 1e3:.3f} ms, batch {workload.batch_size}")
