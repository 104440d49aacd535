"""``tensorwire sweep``: the grid options, a progress bar, and one output file."""

from __future__ import annotations

import time
from typing import Any, Optional

import click

from tensorwire.calibrate.cluster_file import cluster_option, given_files
from tensorwire.cli import render
from tensorwire.io import check_output
from tensorwire.result import OVERLOAD
from tensorwire.sweep import options
from tensorwire.sweep.run import run_configs
from tensorwire.sweep.table import check_path, overloaded, write_rows


@click.command("sweep")
@cluster_option(topology="topologies", bandwidth="bandwidths", latency="latencies", lists=True)
@options.grid_options(models="resnet50", workers="32", bandwidths="25Gbps", strategies=None)
@click.option(
    "--out",
    "-o",
    required=True,
    metavar="FILE",
    help="Results file: .csv, .json or .parquet (chosen by the suffix), written atomically.",
)
@options.jobs
@options.ray
@click.pass_context
def sweep(ctx: click.Context, /, out: str, jobs: Optional[int], ray_address: Optional[str], **grid: Any) -> None:
    """Simulate every configuration of a grid; write one row per configuration.

    Every grid option (but --iterations and the --recompute flag) takes a comma-separated
    list and the grid is their cross product; --seq-len, --mfu and --recompute apply to the
    LLMs (a zoo model refuses them, as in `simulate`):

    \b
      tensorwire sweep -m resnet50,vgg16 -n 4,8,16,32 -b 1Gbps,10Gbps,25Gbps,100Gbps \\
          -s "ps,ring,ring:partition=4MiB" --out results.parquet

    `--workload FILE` sweeps your own workload or trace (alone, or beside --model). The whole
    grid is checked before any simulation starts (every point's scenario built, none
    simulated): bad input prints one line and nothing else. Columns: docs/sweep-and-report.md.
    """
    workload_file = grid.get("workload_file")
    inputs = {"workload files": [workload_file] if workload_file else [], "cluster files": given_files(ctx)}
    path = check_output(check_path(out), "out", inputs)
    configs = options.planned_configs(ctx, grid)
    started = time.perf_counter()
    with render.progress(len(configs), "simulating") as advance:

        def done(k: int) -> None:
            for _ in range(k):
                advance("configurations")

        rows = run_configs(configs, jobs=jobs, ray_address=ray_address, progress=done)
    write_rows(path, rows)
    where = f"Ray at {ray_address}" if ray_address else "local cores"
    click.echo(
        f"{path}: {len(rows)} configuration{'s' if len(rows) != 1 else ''} in {time.perf_counter() - started:.1f} s on {where}"
    )
    over = overloaded(rows)
    if over:
        click.echo(
            f"tensorwire: {OVERLOAD.format(strategies=', '.join(over))} (max_link_utilization above 1)", err=True
        )
