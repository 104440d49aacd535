"""Options shared by several commands, each defined once."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional, Sequence, TypeVar

import click
from click.core import ParameterSource

from tensorwire import _core
from tensorwire.api import LATENCY_UNSEEN
from tensorwire.cli.terminal import note
from tensorwire.io import InputWarning
from tensorwire.strategy import Strategy
from tensorwire.units import format_rate
from tensorwire.workloads import model_names
from tensorwire.workloads.formats import FORMATS

F = TypeVar("F", bound=Callable[..., Any])


def _stack(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(f: F) -> F:
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


def _rate(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[float]:
    return None if value is None else _core.parse_rate(param.name or "rate", value)


def _duration(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[float]:
    return None if value is None else _core.parse_duration(param.name or "duration", value)


def workload_name(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[str]:
    """``--name``: a workload's name, not empty (an empty one was taken as none given)."""
    if value is not None and not value.strip():
        raise _core.InputError("name", "is empty; give the workload a name, or leave --name out for the default")
    return value


def _positive(ctx: click.Context, param: click.Parameter, value: Optional[int]) -> Optional[int]:
    if value is not None and value < 1:
        raise _core.InputError(param.name or "value", f"{value} is not allowed; need an integer >= 1")
    return value


def check_latency_seen(ctx: click.Context, runs: Sequence[tuple[Strategy, str]], param: str = "latency") -> None:
    """Refuses a ``--latency`` given on the command line (``param``, the command's name for
    it) that no run of ``runs`` ((strategy, topology spec) pairs) would see: each timed by
    NCCL's closed-form model (``nccl``, ``ddp``, sharded under ``comm=nccl``;
    :meth:`tensorwire._core.Strategy.timed_by_nccl`), which takes its own latencies
    (``inter_latency=`` adds to them). Where some would, a note on stderr names the others.
    Nothing where ``--latency`` is its default or comes from a ``--cluster`` file, whose
    latency is for the flow-level strategies (docs/calibration.md)."""
    if ctx.get_parameter_source(param) is not ParameterSource.COMMANDLINE:
        return
    timed = [s for s, topology in runs if s.core.timed_by_nccl(topology)]
    unseen = ", ".join(dict.fromkeys(s.spec for s in timed))
    if timed and len(timed) == len(runs):
        raise _core.InputError("latency", f"{unseen}: {LATENCY_UNSEEN}")
    if timed:
        note(
            f"--latency applies to the flow-level strategies; {unseen} "
            "time their collectives with NCCL's own latencies (inter_latency= on the topology adds to them)"
        )


def warn_nic_past_its_path(runs: Sequence[tuple[Strategy, str]], bandwidth: Optional[float]) -> None:
    """One warning where ``bandwidth`` (a ``--bandwidth`` given, bytes/s: each GPU's NIC on a
    rail) carries more than NCCL's model lets through a GPU's PCIe path to its NIC, for a run
    of ``runs`` timed by that model: it then runs as at the path's rate, and the rate given
    changes nothing (800 Gbit/s on a DGX H100 ran exactly as 400, its title saying 800)."""
    if bandwidth is None:
        return
    for s, topology in runs:
        path = _core.Topology(topology).nic_past_its_path(bandwidth) if s.core.timed_by_nccl(topology) else None
        if path is not None:
            warnings.warn(
                f"--bandwidth {format_rate(bandwidth)}: under NCCL's model ({s.spec}) each GPU's NIC runs "
                f"behind its PCIe path to the NIC, {path / 1e9:,.0f} GB/s as NCCL's search counts it, which a "
                f"slower NIC already fills: the rate given past it changes nothing there",
                InputWarning,
                stacklevel=2,
            )
            return


#: The topologies a ``--topology`` takes, from the core's list (one text for every command).
topology_help = (
    " | ".join(t["name"] + "[:...]" * bool(t["options"]) for t in _core.topologies())
    + " (options: `tensorwire strategies`)"
)
#: What ``--gpu`` chooses, for a zoo model and for an LLM.
gpu_help = (
    "a zoo model's measured device (default v100), or for an LLM a GPU profile "
    "(v100, a100-40gb, a100-80gb, h100, h200; default h100)"
)

workers = click.option("--workers", "-n", type=int, callback=_positive, help="Number of workers (data-parallel ranks).")
network_options = _stack(
    click.option(
        "--latency",
        default=f"{_core.DEFAULT_LATENCY_S * 1e6:g}us",
        show_default=True,
        callback=_duration,
        help="Latency per hop (ns/us/ms/s).",
    ),
    click.option("--topology", default="star", show_default=True, help=f"{topology_help}."),
    click.option(
        "--network",
        type=click.Choice(_core.NETWORK_MODELS),
        default="flow",
        show_default=True,
        help="flow: max-min fair sharing; analytical: alpha-beta without contention.",
    ),
    click.option("--overhead", default="0s", show_default=True, callback=_duration, help="Host overhead per message."),
    click.option(
        "--rank-placement",
        "--placement",
        "rank_placement",
        type=click.Choice(_core.PLACEMENTS),
        default="packed",
        show_default=True,
        help="Ranks on hosts: packed (rank r on host r), spread (consecutive ranks on different leaves/groups/machines), random (seeded). "
        "--placement is its old name.",
    ),
)
#: What ``--seq-len`` and ``--mfu`` set (``simulate`` and ``compare`` take one value, ``sweep``
#: and ``report`` a list); the values are checked where the LLM is built
#: (:func:`tensorwire.workloads.load_model`), in one wording for every command.
seq_len_help = "LLMs only: tokens per sequence (default: the context length)"
mfu_help = "LLMs only: model-FLOP utilisation in (0, 1] (default 0.40)"
#: ``--recompute``, one flag for ``simulate``, ``compare``, ``sweep`` and ``report``.
recompute = click.option(
    "--recompute",
    is_flag=True,
    default=False,
    help="LLMs only: full activation recomputation (+1 forward per block).",
)
compute_options = _stack(
    click.option(
        "--gpu",
        default=None,
        help=f"Device: {gpu_help}.",
    ),
    click.option(
        "--batch",
        type=int,
        callback=_positive,
        default=None,
        help="Per-worker batch size (default: the measured one); for an LLM the micro-batch in sequences (default 1).",
    ),
    click.option("--seq-len", type=int, default=None, help=f"{seq_len_help}."),
    click.option("--mfu", type=float, default=None, help=f"{mfu_help}."),
    recompute,
)


def _failures(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[Any, ...]:
    from tensorwire.failures import parse_failure

    return tuple(parse_failure(v) for v in value)


fail = click.option(
    "--fail",
    "failures",
    multiple=True,
    callback=_failures,
    metavar="TARGET@TIME[:rate=X]",
    help="A link (h3->sw, leaf0->spine1) or node (h3, spine1) keeps rate X of its nominal rate (default 0: down) from TIME on (a time before the run ends); repeatable. The result is shown beside the run without failures.",
)
max_flows = click.option(
    "--max-flows",
    type=int,
    callback=_positive,
    default=_core.DEFAULT_MAX_FLOWS,
    show_default=True,
    help="Refuse up front a run that needs more flows than this (the default keeps a run within about 2 s; "
    "messages timed by lanes count 1/64 of a flow).",
)
run_options = _stack(
    click.option(
        "--iterations",
        type=int,
        callback=_positive,
        default=_core.DEFAULT_ITERATIONS,
        show_default=True,
        help="Iterations to simulate (first is warm-up).",
    ),
    click.option(
        "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the random streams."
    ),
    click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables."),
)


def _speedup(ctx: click.Context, param: click.Parameter, value: Optional[float]) -> Optional[float]:
    if value is not None and not value > 0:
        raise _core.InputError("compute_speedup", f"{value} must be a number > 0")
    return value


whatif_options = _stack(
    click.option(
        "--compute-speedup",
        type=float,
        callback=_speedup,
        default=None,
        help="What if compute were X times faster (Chang et al., 'How to Train your DNN: The Network Operator Edition', section 8.6; docs/sources.md).",
    ),
    click.option(
        "--add-modules",
        default=None,
        help="Synthetic model: compute:N or network:N more Inception-v3 modules, or BLOCK:N (Chang et al. 2020, section 8.5; docs/sources.md).",
    ),
    click.option(
        "--stragglers",
        default="none",
        show_default=True,
        help="none | normal:CV | lognormal:SIGMA | fixed:M0,M1,... (MxN: N workers at M, e.g. fixed:1.5x8,1x24) | empirical:FILE | one:M (one random worker per iteration M times slower)",
    ),
)
workload_format = click.option(
    "--workload-format",
    type=click.Choice(("auto", *FORMATS)),
    default="auto",
    show_default=True,
    help="Format of the workload file(s): auto detects it from the content; tensorwire (workload JSON or "
    "five-attribute trace), kineto (PyTorch profiler JSON[.gz]), chakra (Chakra execution trace).",
)
workload_file = _stack(
    click.option(
        "--workload",
        "workload_file",
        type=click.Path(dir_okay=False),
        help="Workload file: tensorwire JSON, five-attribute trace, PyTorch profiler trace or Chakra trace.",
    ),
    workload_format,
)
bandwidth = click.option("--bandwidth", "-b", callback=_rate, help="Host link rate per direction, e.g. 25Gbps.")
model_help = f"Built-in model: {', '.join(model_names())}."
