"""The grid's command-line options, defined once for ``tensorwire sweep`` and ``tensorwire report``.

Each takes a comma-separated list and is passed on as text: the grid's own parser
(:func:`tensorwire.sweep.grid.expand`, the code the Python API uses too) splits and validates
it. A command supplies its own defaults for the main axes (the report sweeps more workers
and rates by default than ``sweep``).
"""

from __future__ import annotations

import collections
from typing import Any, Callable, Optional, TypeVar

import click
from click.core import ParameterSource

from tensorwire.cli import options as shared
from tensorwire.cli.terminal import note
from tensorwire.strategy import Strategy
from tensorwire.sweep.grid import Config, expand
from tensorwire.sweep.run import LEFT_OUT, check_configs

F = TypeVar("F", bound=Callable[..., Any])


def planned_configs(ctx: click.Context, grid: dict[str, Any]) -> list[Config]:
    """The grid of ``tensorwire sweep`` or ``tensorwire report``, expanded and checked whole
    before anything is simulated (each point's scenario built by the core, none run), so that
    bad input is one line up front rather than after part of the grid ran. Where no strategy
    was named, points of a built-in strategy over the flow budget (or NCCL-timed under the
    analytical network model) are left out with a note
    (:func:`tensorwire.sweep.run.check_configs`). Without ``-b`` a
    rail keeps its NICs' rate, as does a ``--cluster`` file that gives one. Under NCCL-timed
    strategies ``--latency`` is refused where it changes no point and noted where it changes
    some (:func:`tensorwire.cli.options.check_latency_seen`)."""
    own = ctx.get_parameter_source("bandwidths") is not ParameterSource.COMMANDLINE
    own = bool(ctx.meta.get("tensorwire.cluster_own_rates", own))
    planned = expand(**grid, own_rates=own)
    left_out: dict[Config, str] = {}
    configs = check_configs(planned, default_strategies=grid.get("strategies") is None, left_out=left_out)
    for field, why in LEFT_OUT.items():
        counts = collections.Counter(c.strategy for c, f in left_out.items() if f == field)
        if counts:
            which = ", ".join(f"{spec} ({k} of its points)" for spec, k in counts.items())
            note(f"left out {which}: {why}; name strategies with -s to choose them")
    pairs = dict.fromkeys((c.strategy, c.topology) for c in configs)
    shared.check_latency_seen(ctx, [(Strategy(spec), topology) for spec, topology in pairs], "latencies")
    return configs


class ListOption(click.Option):
    """A comma-separated list that may also be given several times: ``-m resnet50 -m vgg16``
    is ``-m resnet50,vgg16`` (the last one given had won, silently dropping the others)."""

    def __init__(self, *args: Any, default: Optional[str] = None, **kwargs: Any) -> None:
        kwargs.update(multiple=True, default=None if default is None else (default,))
        super().__init__(*args, **kwargs)

    def type_cast_value(self, ctx: click.Context, value: Any) -> Any:
        values = super().type_cast_value(ctx, value)
        return ",".join(values) if values else None


#: Parameter names of the grid options; each is a keyword of :func:`tensorwire.sweep.run_grid`.
GRID_PARAMS = (
    "models",
    "workers",
    "bandwidths",
    "strategies",
    "latencies",
    "topologies",
    "networks",
    "gpus",
    "batches",
    "seq_lens",
    "mfus",
    "recompute",
    "compute_speedups",
    "seeds",
    "iterations",
    "workload_file",
    "workload_format",
    "max_flows",
)


def grid_options(*, models: str, workers: str, bandwidths: str, strategies: Optional[str]) -> Callable[[F], F]:
    """The grid options with these defaults for the main axes (``strategies=None``: every built-in one)."""
    every = " [default: every built-in strategy]" if strategies is None else ""
    decorators: list[Callable[[F], F]] = [
        click.option(
            "--model",
            "-m",
            "models",
            default=None,
            metavar="LIST",
            cls=ListOption,
            help=f"{shared.model_help} Comma-separated list. [default: {models}, or none with --workload]",
        ),
        shared.workload_file,
        click.option(
            "--workers",
            "-n",
            default=workers,
            show_default=True,
            metavar="LIST",
            cls=ListOption,
            help="Numbers of workers, e.g. 4,8,16,32.",
        ),
        click.option(
            "--bandwidth",
            "-b",
            "bandwidths",
            default=bandwidths,
            show_default=True,
            metavar="LIST",
            cls=ListOption,
            help="Host link rates per direction, e.g. 1Gbps,10Gbps,100Gbps; on a rail fabric each GPU's "
            "NIC rate (without -b: the node preset's NICs).",
        ),
        click.option(
            "--strategies",
            "-s",
            default=strategies,
            show_default=strategies is not None,
            metavar="LIST",
            cls=ListOption,
            help="Strategy specs NAME[:key=value,...], comma-separated (see `tensorwire strategies`), e.g. "
            "'ps,ring,ring:partition=4MiB,credit=8MiB'. Speedups are over plain ps (for LLMs and on rail or nodes "
            "fabrics plain ddp), or the first listed where that is not in the list, as in `compare`." + every,
        ),
        click.option(
            "--latency",
            "latencies",
            default="5us",
            show_default=True,
            metavar="LIST",
            cls=ListOption,
            help="Latencies per hop (ns/us/ms/s); strategies timed by NCCL's model (nccl, ddp, sharded ones on GPU "
            "fabrics) take NCCL's own instead.",
        ),
        click.option(
            "--topology",
            "topologies",
            default="star",
            show_default=True,
            metavar="LIST",
            cls=ListOption,
            help=f"Topologies: {shared.topology_help}.",
        ),
        click.option(
            "--network",
            "networks",
            default="flow",
            show_default=True,
            metavar="LIST",
            cls=ListOption,
            help="Network models: flow (max-min fair sharing), analytical (alpha-beta, no contention).",
        ),
        click.option(
            "--gpu",
            "gpus",
            default=None,
            metavar="LIST",
            cls=ListOption,
            help=f"Devices: {shared.gpu_help}. [default: each model's own]",
        ),
        click.option(
            "--batch",
            "batches",
            default=None,
            metavar="LIST",
            cls=ListOption,
            help="Per-worker batch sizes: for a zoo model samples, for an LLM the micro-batch in sequences. "
            "[default: the measured one; 1 for an LLM]",
        ),
        click.option(
            "--seq-len",
            "seq_lens",
            default=None,
            metavar="LIST",
            cls=ListOption,
            help=f"{shared.seq_len_help}; comma-separated, e.g. 2048,8192.",
        ),
        click.option(
            "--mfu",
            "mfus",
            default=None,
            metavar="LIST",
            cls=ListOption,
            help=f"{shared.mfu_help}; comma-separated, e.g. 0.3,0.5.",
        ),
        shared.recompute,
        click.option(
            "--compute-speedup",
            "compute_speedups",
            default="1",
            show_default=True,
            metavar="LIST",
            cls=ListOption,
            help="What-if: compute this many times faster, e.g. 1,2,4.",
        ),
        click.option(
            "--seed",
            "seeds",
            default="0",
            show_default=True,
            metavar="LIST",
            cls=ListOption,
            help="Seeds of the random streams.",
        ),
        click.option(
            "--iterations",
            type=click.IntRange(min=1),
            default=3,
            show_default=True,
            help="Iterations to simulate (the first is warm-up).",
        ),
        shared.max_flows,
    ]

    def apply(f: F) -> F:
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


jobs = click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Simulations at once on this machine. [default: every core]",
)
ray = click.option(
    "--ray",
    "ray_address",
    default=None,
    metavar="ADDRESS",
    help="Run on a Ray cluster instead of local cores: auto, ray://HOST:10001, or local (needs tensorwire[ray]).",
)
