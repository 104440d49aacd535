"""``tensorwire report``: a sweep (read from a file, or run here) as one HTML page."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Optional

import click
from click.core import ParameterSource

from tensorwire._core import InputError
from tensorwire.calibrate.cluster_file import cluster_option, given_files
from tensorwire.cli import render
from tensorwire.io import check_output
from tensorwire.report.sweep_file import read_sweep
from tensorwire.sweep import options
from tensorwire.sweep.run import run_configs
from tensorwire.units import counted

#: What to do when plotly is missing: tensorwire is not on PyPI, so the extra works only from
#: a checkout; plain plotly works everywhere.
PLOTLY_HINT = (
    "the HTML report needs plotly: pip install plotly (in a checkout of tensorwire: make build, "
    "or pip install -e '.[report]')"
)

#: The sweep the report runs when it is given no --sweep file.
DEFAULT_WORKERS = "4,8,16,32,64"
DEFAULT_BANDWIDTHS = "1Gbps,10Gbps,25Gbps,40Gbps,100Gbps"


@click.command("report")
@cluster_option(topology="topologies", bandwidth="bandwidths", latency="latencies", lists=True)
@click.option(
    "--sweep",
    "sweep_file",
    default=None,
    metavar="FILE",
    help="Results of `tensorwire sweep` (.csv, .json or .parquet). Without it the report runs its own sweep "
    "of the grid options below; with it, --model picks models from the file.",
)
@options.grid_options(models="resnet50", workers=DEFAULT_WORKERS, bandwidths=DEFAULT_BANDWIDTHS, strategies=None)
@click.option(
    "--out", "-o", default="report.html", show_default=True, metavar="FILE", help="The HTML page, written atomically."
)
@click.option("--title", default="tensorwire report", show_default=True, help="Title of the page.")
@click.option(
    "--no-timeline", is_flag=True, help="Leave out the timeline of one iteration (one simulation per model less)."
)
@options.jobs
@options.ray
@click.pass_context
def report(
    ctx: click.Context,
    /,
    sweep_file: Optional[str],
    out: str,
    title: str,
    no_timeline: bool,
    jobs: Optional[int],
    ray_address: Optional[str],
    **grid: Any,
) -> None:
    """Write one self-contained HTML page with interactive plots of a sweep.

    Per model: speedup over ps against bandwidth and against workers for each strategy,
    the breakdown of an iteration (compute, overlapped and exposed communication), a
    ranked table, and a per-worker timeline of one iteration. The page needs no network.
    `--workload FILE` reports on your own workload or trace (alone, or beside --model).

    \b
      tensorwire report --model resnet50,vgg16 --out report.html
      tensorwire sweep -m vgg16 -n 8,16,32 -b 10Gbps,100Gbps -s ps,ring -o s.parquet
      tensorwire report --sweep s.parquet --out report.html
    """
    path = Path(out)
    if path.suffix.lower() not in (".html", ".htm"):
        raise InputError("out", f"{out!r}: the report is HTML; give a file ending in .html")
    check_output(path, "out")
    try:
        from tensorwire.report import timeline
        from tensorwire.report.page import build_report, write_report
    except ImportError as e:
        if not (e.name or "").startswith("plotly"):
            raise
        raise InputError("report", PLOTLY_HINT) from None
    if sweep_file is not None:
        flags = {p.name: max(p.opts, key=len) for p in ctx.command.params}
        given = [
            flags[name]
            for name in options.GRID_PARAMS
            if name != "models" and ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
        ]
        given += ["--cluster"] if given_files(ctx) else []
        if given or jobs is not None or ray_address is not None:
            raise click.UsageError(
                f"--sweep reads finished results; leave out {', '.join(given) or '--jobs/--ray'} (run `tensorwire sweep` for a new grid)"
            )
        rows = read_sweep(sweep_file)
        if ctx.get_parameter_source("models") is ParameterSource.COMMANDLINE:
            wanted = [m.strip() for m in str(grid["models"]).split(",") if m.strip()]
            present = {r["model"] for r in rows}
            absent = [m for m in wanted if m not in present]
            if absent:
                raise InputError(
                    "model", f"{', '.join(absent)} not in {sweep_file}; it has {', '.join(sorted(present))}"
                )
            rows = [r for r in rows if r["model"] in wanted]
    else:
        configs = options.planned_configs(ctx, grid)
        with render.progress(len(configs), "simulating") as advance:

            def done(k: int) -> None:
                for _ in range(k):
                    advance("configurations")

            rows = run_configs(configs, jobs=jobs, ray_address=ray_address, progress=done)
    # Rows of a workload file are re-simulated for the timeline from the file (a sweep file
    # does not name it).
    file, fmt = (None, "auto") if sweep_file is not None else (grid.get("workload_file"), grid["workload_format"])
    record = functools.partial(timeline.record, workload_file=file, workload_format=fmt)
    write_report(path, build_report(rows, title=title, record=record, with_timeline=not no_timeline))
    click.echo(f"{path}: report on {counted(len(rows), 'configuration')}")
