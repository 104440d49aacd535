"""``tensorwire topology``: a machine's GPU links and the reduction trees tree all-reduce would use.

The main CLI registers :data:`topology` (a click command; this module needs click and rich,
never torch). It also runs alone: ``python -m tensorwire.gputopo.cli --detect``.

JSON (``--json``) contract::

    {"gpus": 8, "source": "p3.16xlarge", "adjacency": [[0, 2, ...], ...],
     "links": [[0, 1, 2], ...],                       # [i, j, weight], i < j
     "penalty": 0.7, "array_bound": 10000000,
     "trees": [{"root": 0, "edges": [[0, 1], ...],    # [parent, child]
                "levels": [1, ...], "weight": 20, "method": "exhaustive"}, ...]}

Tree 0 is the one used below ``array_bound`` elements; all of them, one slice each, from it on.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Optional, Sequence

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tensorwire._core import InputError
from tensorwire.gputopo import DEFAULT_ARRAY_BOUND, DEFAULT_PENALTY, LINK_NAMES, PRESETS, Topology, Tree

_STYLE = {0: "dim", 1: "yellow", 2: "cyan", 3: "bold green"}


def load(preset: Optional[str], adjacency: Optional[str], detect: bool) -> Topology:
    """The topology the options name; no option at all means ``--detect``."""
    given = [name for name, v in (("--preset", preset), ("--adjacency", adjacency), ("--detect", detect or None)) if v]
    if len(given) > 1:
        raise InputError("topology", f"give one of --preset, --adjacency or --detect, not {' and '.join(given)}")
    if preset is not None:
        return Topology.preset(preset)
    if adjacency is not None:
        return Topology.from_file(adjacency)
    return Topology.detect()


def to_json(topo: Topology, trees: Sequence[Tree], penalty: float, array_bound: int) -> dict[str, Any]:
    """The JSON document of ``tensorwire topology --json`` (see the module docstring)."""
    out = topo.to_dict()
    out.update(penalty=penalty, array_bound=array_bound, trees=[t.to_dict() for t in trees])
    return out


def _render(topo: Topology, trees: Sequence[Tree], penalty: float, console: Console) -> None:
    n = topo.gpus
    console.print(Text(f"GPU links: {topo.source}", style="bold"))
    links = Table()
    links.add_column("GPU", justify="right", style="bold")
    for j in range(n):
        links.add_column(str(j), justify="center")
    for i in range(n):
        cells = [
            "X" if i == j else Text(str(topo.weight(i, j)), style=_STYLE.get(topo.weight(i, j), "")) for j in range(n)
        ]
        links.add_row(str(i), *cells)
    console.print(links)
    if n == 1:
        console.print("1 GPU: nothing to reduce")
        return
    counts = {w: sum(1 for _, _, x in topo.links if x == w) for w in (3, 2, 1)}
    pairs = [f"{counts[w]} × {LINK_NAMES[w]} ({w})" for w in (3, 2, 1) if counts[w]]
    unlinked = n * (n - 1) // 2 - len(topo.links)
    if unlinked:
        pairs.append(f"{unlinked} unlinked (0)")
    console.print(f"{n} GPUs; weight 3 double NVLink, 2 NVLink, 1 PCIe, 0 none; pairs: {', '.join(pairs)}")
    t = Table(title=f"Reduction trees (link-usage penalty {penalty:g}); tree 0 alone below the array bound")
    t.add_column("tree", justify="right")
    t.add_column("root", justify="right")
    t.add_column("weight", justify="right")
    t.add_column("search")
    t.add_column("edges parent→child by level (level 1 = last reduce step)")
    for k, tree in enumerate(trees):
        levels = []
        for level in range(1, tree.height + 1):
            edges = ", ".join(f"{e.parent}→{e.child}" for e in tree.edges if e.level == level)
            levels.append(f"L{level}: {edges}")
        t.add_row(str(k), str(tree.root), str(tree.weight), tree.method, "   ".join(levels))
    console.print(t)


@click.command("topology")
@click.option("--preset", type=str, default=None, help=f"Built-in machine: {', '.join(PRESETS)}.")
@click.option(
    "--adjacency",
    type=click.Path(dir_okay=False),
    default=None,
    help='JSON file: {"gpus": n, "adjacency": [[...]]} or a square matrix of link weights (0-3).',
)
@click.option("--detect", is_flag=True, help="Read this machine's GPUs (NVML, else `nvidia-smi topo -m`); the default.")
@click.option(
    "--trees",
    "count",
    type=click.IntRange(min=1),
    default=None,
    help="Trees to show (default: one per GPU, as the multi-tree mode uses).",
)
@click.option(
    "--penalty",
    type=click.FloatRange(min=0.0, max=1.0, min_open=True),
    default=DEFAULT_PENALTY,
    show_default=True,
    help="Multiplicative link-usage penalty between successive trees, in (0, 1].",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (gpus, links, trees ...).")
def topology(
    preset: Optional[str], adjacency: Optional[str], detect: bool, count: Optional[int], penalty: float, as_json: bool
) -> None:
    """Show the GPU link topology and the reduction trees tree all-reduce would use."""
    topo = load(preset, adjacency, detect)
    trees = topo.trees(count, penalty)
    if as_json:
        click.echo(json.dumps(to_json(topo, trees, penalty, DEFAULT_ARRAY_BOUND), indent=1))
    else:
        from tensorwire.cli.terminal import stdout_console

        _render(topo, trees, penalty, stdout_console())


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs :data:`topology` alone, with the main CLI's error convention (one line, status 2)."""
    try:
        topology.main(
            args=list(argv) if argv is not None else None, prog_name="tensorwire topology", standalone_mode=False
        )
    except InputError as e:
        field, message = e.args if len(e.args) == 2 else ("input", str(e))
        click.echo(f"tensorwire: error: {field}: {message}", err=True)
        return 2
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except click.ClickException as e:
        click.echo(f"tensorwire: error: {e.format_message()}", err=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
