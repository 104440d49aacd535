"""``tensorwire validate``: measured against predicted iteration times on the testbed.

The command object :data:`validate` is registered in the main CLI. It prints a table (or
JSON with ``--json``) and, with ``--out DIR``, writes ``results.json``, a self-contained
``results.html`` and ``results.md`` (the table of docs/fidelity.md) there. The folder and
the three paths are checked before the run (minutes; :func:`check_out_dir`), the results
are printed before anything is written, and the three files are written all or none
(:func:`tensorwire.io.write_atomic_all`).
"""

from __future__ import annotations

import html
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import click

from tensorwire._core import InputError
from tensorwire.io import check_output, write_atomic_all
from tensorwire.testbed.validate import summary, within_10pct

#: What ``--out DIR`` writes into DIR.
OUT_FILES = ("results.json", "results.html", "results.md")


def check_out_dir(out_dir: str) -> list[Path]:
    """The paths of :data:`OUT_FILES` in ``out_dir``, after refusing (:class:`InputError`
    naming ``out``), before the run, a folder or file that could not be written: ``out_dir``
    an existing non-folder or under a file, an output path that is a folder, a folder
    without write permission. Creates nothing."""
    if not out_dir:
        raise InputError("out", "the folder name is empty; give a folder such as results")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise InputError("out", f"cannot write into {out_dir}: it is a file, not a folder")
    return [check_output(Path(out_dir) / name, "out") for name in OUT_FILES]


def _table(results: Sequence[dict[str, Any]]) -> None:
    from rich.table import Table

    from tensorwire.cli.terminal import stdout_console

    console = stdout_console()
    t = Table(title="testbed (measured) against simulator (predicted), steady-state iteration time")
    for col, just in (
        ("scenario", "left"),
        ("measured", "right"),
        ("predicted", "right"),
        ("error", "right"),
        ("spread", "right"),
    ):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in results:
        t.add_row(
            r["scenario"],
            f"{r['measured_s'] * 1e3:.1f} ms",
            f"{r['predicted_s'] * 1e3:.1f} ms",
            f"{r['error']:+.1%}",
            f"{r.get('spread', 0.0):.1%}",
        )
    console.print(t)
    s = summary(results)
    console.print(
        f"{s['scenarios']} scenarios: median |error| {s['median_abs_error']:.1%}, "
        f"max |error| {s['max_abs_error']:.1%}, within 10%: {s['within_10pct']:.0%}"
    )


def render_markdown(results: Sequence[dict[str, Any]]) -> str:
    """The results as the Markdown tables of docs/fidelity.md: one row per scenario (with the
    spec the simulator predicted), then the error summary of the testbed's own jobs, of the
    runtime's modes, of each mode and of all scenarios.

    >>> row = {"scenario": "ring/vgg/2x1Gbps", "strategy": "ring", "runtime": False, "predicted_spec": "ring",
    ...        "measured_s": 0.3, "predicted_s": 0.303, "error": 0.01, "spread": 0.004}
    >>> print(render_markdown([row]).splitlines()[2])
    | ring/vgg/2x1Gbps | testbed job | `ring` | 300.0 | 303.0 | +1.0% | 0.4% |
    """
    lines = [
        "| scenario | runs | spec predicted | measured (ms) | predicted (ms) | error | spread |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['scenario']} | {'runtime' if r.get('runtime') else 'testbed job'} | "
            f"`{r.get('predicted_spec', r.get('spec', ''))}` | {r['measured_s'] * 1e3:.1f} | "
            f"{r['predicted_s'] * 1e3:.1f} | {r['error']:+.1%} | {r.get('spread', 0.0):.1%} |"
        )
    lines += ["", "| set | scenarios | median abs error | max abs error | within 10% |", "|---|---|---|---|---|"]
    sets = [
        ("`ring` and `ps` (testbed jobs)", [r for r in results if not r.get("runtime")]),
        ("runtime modes", [r for r in results if r.get("runtime")]),
        *(
            (f"`{m}`", [r for r in results if r.get("runtime") and r.get("strategy") == m])
            for m in ("fifo", "fusion", "priority")
        ),
        ("all", list(results)),
    ]
    for name, rows in sets:
        if rows:
            s = summary(rows)
            lines.append(
                f"| {name} | {s['scenarios']} | {s['median_abs_error']:.1%} | {s['max_abs_error']:.1%} | {s['within_10pct_count']} |"
            )
    again = [r["scenario"] for r in results if len(r.get("attempts", ())) > 1]
    if again:
        lines += ["", f"Run again because the machine changed speed during the first job: {', '.join(again)}."]
    return "\n".join(lines) + "\n"


def render_html(results: Sequence[dict[str, Any]], command: str = "tensorwire validate") -> str:
    """A self-contained HTML page with the results table and the summary."""
    s = summary(results)
    rows = []
    for r in results:
        bad = not within_10pct(r["error"])
        rows.append(
            "<tr>"
            f"<td>{html.escape(str(r['scenario']))}</td>"
            f"<td>{r['workers']}</td>"
            f"<td>{r['rate_bps'] / 1e6:g} Mbit/s</td>"
            f"<td>{r['measured_s'] * 1e3:.1f}</td>"
            f"<td>{r['predicted_s'] * 1e3:.1f}</td>"
            f'<td class="{"bad" if bad else "ok"}">{r["error"]:+.1%}</td>'
            f"<td>{r.get('spread', 0.0):.1%}</td>"
            "</tr>"
        )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tensorwire validate</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; }}
th, td {{ padding: 0.3em 0.8em; border-bottom: 1px solid #ddd; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
td.ok {{ color: #1a7f37; }} td.bad {{ color: #cf222e; font-weight: bold; }}
code {{ background: #f4f4f4; padding: 0 0.3em; }}
</style></head><body>
<h1>Testbed against simulator</h1>
<p>Steady-state iteration time measured on the emulated cluster and predicted by
<code>tensorwire.simulate</code> on the calibrated cluster; error = (predicted &minus; measured) / measured.
Spread: coefficient of variation of the measured iteration times.</p>
<p>Command: <code>{html.escape(command)}</code> &middot; host: {html.escape(platform.node())}, {html.escape(platform.platform())}
&middot; {time.strftime("%Y-%m-%d %H:%M:%S %Z")}</p>
<table>
<thead><tr><th>scenario</th><th>workers</th><th>rate</th><th>measured (ms)</th><th>predicted (ms)</th><th>error</th><th>spread</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
<p>{s["scenarios"]} scenarios: median |error| {s["median_abs_error"]:.1%}, max |error| {s["max_abs_error"]:.1%},
within 10%: {s["within_10pct"]:.0%}.</p>
</body></html>
"""


def _cleanup(other_options: bool) -> None:
    """``validate --cleanup``: removes the leftovers of killed runs; one line either way."""
    from tensorwire.testbed.netns import cleanup_leftovers

    if other_options:
        raise click.UsageError("--cleanup takes no other option")
    if os.geteuid() != 0:
        raise InputError("cleanup", "needs root: the testbed's namespaces are root's; run it as root (sudo)")
    removed = cleanup_leftovers()
    if removed:
        click.echo(f"removed the leftovers of {len(removed)} testbed run(s): {', '.join(removed)}")
    else:
        click.echo("nothing to clean up: no testbed run was left behind")


@click.command("validate")
@click.option(
    "--quick",
    is_flag=True,
    help="Six scenarios (ring, ps and the runtime's priority mode, both workloads) on a 3-host testbed (about two minutes) instead of the full matrix.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON instead of a table.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    help="Write results.json, results.html and results.md into this folder.",
)
@click.option(
    "--cleanup",
    is_flag=True,
    help="Only remove what killed testbed runs left behind (namespaces, their processes, records), then exit. Needs root.",
)
def validate(quick: bool, as_json: bool, out_dir: Optional[str], cleanup: bool) -> None:
    """Run scenarios on the emulated testbed and in the simulator; compare iteration times.

    Needs root (network namespaces, tc) and torch. After a run was killed (SIGKILL),
    `tensorwire validate --cleanup` removes its leftovers (docs/testbed.md).
    """
    if cleanup:
        _cleanup(quick or as_json or out_dir is not None)
        return
    from tensorwire.testbed.jobs import JobFailed
    from tensorwire.testbed.netns import TestbedUnavailable
    from tensorwire.testbed.validate import validate as run

    paths = check_out_dir(out_dir) if out_dir is not None else []  # before a run of minutes
    command = "tensorwire validate" + (" --quick" if quick else "")
    try:
        results = run(quick, progress=lambda m: click.echo(f"validate: {m}", err=True))
    except TestbedUnavailable as e:
        raise click.ClickException(f"testbed unavailable: {e}") from None
    except JobFailed as e:
        raise click.ClickException(f"a testbed job failed: {e}") from None
    if as_json:
        click.echo(json.dumps(results, indent=1))
    else:
        _table(results)
    if paths:
        texts = (json.dumps(results, indent=1) + "\n", render_html(results, command), render_markdown(results))
        write_atomic_all(dict(zip(paths, texts)))


if __name__ == "__main__":  # ``python -m tensorwire.testbed.cli`` until the main CLI registers it
    try:
        validate.main(prog_name="tensorwire validate", standalone_mode=True)
    except InputError as e:
        click.echo(f"tensorwire: error: {e.args[0]}: {e.args[1] if len(e.args) > 1 else ''}", err=True)
        sys.exit(2)
