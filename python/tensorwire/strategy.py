"""Strategy: how gradients are synchronised, written ``NAME[:key=value,...]``.

The strategies and their options are defined once, in the core; this module only exposes
them. See ``tensorwire strategies`` for the list, and docs/guide.md ("GPU clusters: which
strategy is which framework") for which one models what you run.

On GPU clusters (``rail`` and ``nodes`` fabrics) two strategies time every collective with
NCCL 2.30.7's tuning model (docs/simulator.md, "NCCL strategies"; docs/collectives.md,
"NCCL's collectives"):

- ``nccl[:algo=,proto=,channels=,pxn=,launch=,compute_slowdown=]``: each gradient tensor (or
  a microbenchmark's collective) is one NCCL call, calls one at a time on one communicator.
  ``algo`` is NCCL_ALGO (``tree``, ``ring``, ``collnetdirect``, ``collnetchain``, ``nvls``,
  ``nvlstree``, ``pat``; ``+``-separated, a leading ``^`` excludes), ``proto`` is NCCL_PROTO
  (``ll``, ``ll128``, ``simple``), ``channels=N`` is NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS
  = N, ``pxn=true`` is NCCL_PXN (all-to-all only); without them NCCL's model picks per collective and size.
  ``fusion=SIZE,cycle=DURATION`` adds Horovod's Tensor Fusion (``nccl:fusion=64MiB,cycle=5ms``).
- ``ddp[:bucket=25MiB,first_bucket=1MiB,...]`` (and the ``nccl`` options): PyTorch
  DistributedDataParallel: gradients in reverse parameter order fill buckets (the first
  1 MiB, then ``bucket_cap_mb`` = 25 MiB), each bucket's all-reduce launched when its last
  gradient is ready, on one communicator.

Both slow compute by ``compute_slowdown`` (default 0.189, arXiv 2507.03114) while a
collective is in flight. What a fabric cannot run is refused, naming the option:

>>> runs_on("nccl:algo=nvls", 8, "rail:node=dgx-h100"), runs_on("nccl:algo=nvls", 8, "rail:node=dgx-a100")
(True, False)
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence, Union

from tensorwire import _core
from tensorwire.io import InputWarning
from tensorwire.limits import wrong_type


@dataclass(frozen=True)
class OptionInfo:
    """One option of a strategy; ``aliases``: its old spellings, still accepted (e.g.
    ``streams=fair|ordered`` for ``connections``)."""

    name: str
    accepts: str
    default: str
    help: str
    aliases: tuple[str, ...] = ()

    def described(self) -> dict[str, object]:
        """As ``strategies --json`` prints it: ``aliases`` only where there are some."""
        d: dict[str, object] = {"name": self.name, "accepts": self.accepts, "default": self.default, "help": self.help}
        if self.aliases:
            d["aliases"] = list(self.aliases)
        return d


@dataclass(frozen=True)
class StrategyInfo:
    """A built-in strategy: its own options (only those it takes), the names of the host
    options it takes, and the strategy it is another name for, if any (``alias_of``)."""

    name: str
    summary: str
    options: tuple[OptionInfo, ...]
    host_options: tuple[str, ...] = ()
    alias_of: Optional[str] = None


@dataclass(frozen=True)
class Strategy:
    """A validated strategy spec, parsed once by the core (``core`` holds the parsed
    object; its settings are the simulator's and the runtime's).

    >>> s = Strategy("ring:partition=4MiB")
    >>> s.name, s.core.partition_bytes
    ('ring', 4194304)

    NCCL as it runs, restricted as NCCL_ALGO=Ring,Tree NCCL_PROTO=LL128 NCCL_MIN_NCHANNELS=8
    would (options are checked here, and against the fabric when a run starts):

    >>> Strategy("nccl:algo=ring+tree,proto=ll128,channels=8").core.options
    [('algo', 'ring+tree'), ('proto', 'll128'), ('channels', '8')]
    >>> Strategy("nccl:algo=fast")
    Traceback (most recent call last):
    tensorwire.InputError: strategy.algo: unknown "fast"; choose from tree, ring, collnetdirect, collnetchain, nvls, nvlstree, pat (a leading ^ excludes them instead)

    PyTorch DDP (its default buckets, or ``bucket_cap_mb=100``) on two DGX A100 nodes:

    >>> from tensorwire import Cluster, load_model, simulate
    >>> rail = Cluster(16, None, topology="rail:node=dgx-a100")
    >>> r = simulate(load_model("resnet50"), rail, "ddp")
    >>> r.strategy, 0.9 < r.scaling_factor <= 1
    ('ddp', True)
    >>> Strategy("ddp:bucket=100MiB").core.options
    [('bucket', '100MiB')]
    >>> Strategy("ddp:fusion=64MiB")
    Traceback (most recent call last):
    tensorwire.InputError: strategy.fusion: does not apply to ddp: ddp buckets gradients with bucket=SIZE (fusion and cycle are Horovod's; use nccl:fusion=SIZE for Horovod over NCCL)
    """

    spec: str
    core: _core.Strategy = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.spec, str):
            raise wrong_type(
                "strategy",
                "a spec such as 'ring' or 'ps:num_ps=2' (tensorwire.strategies() lists them) or a Strategy",
                self.spec,
            )
        core = _core.Strategy(self.spec)
        object.__setattr__(self, "core", core)
        object.__setattr__(self, "spec", core.spec)
        unused = core.option_without_effect
        if unused is not None:
            # Valid (the runtime runs it), but the simulator's answer is the spec without it.
            warnings.warn(f"{unused[0]}: {core.spec}: {unused[1]}", InputWarning, stacklevel=2)

    def __getstate__(self) -> dict[str, Any]:
        """The spec alone: the core's parsed object does not pickle (``pickle`` and
        ``copy.deepcopy`` of a Strategy, or of a :class:`~tensorwire.Job` holding one, raised
        TypeError); :meth:`__setstate__` parses it again, as :class:`~tensorwire.Cluster`
        does its topology.

        >>> import pickle
        >>> pickle.loads(pickle.dumps(Strategy("ring:partition=4MiB"))).core.partition_bytes
        4194304
        """
        return {"spec": self.spec}

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "spec", state["spec"])
        object.__setattr__(self, "core", _core.Strategy(state["spec"]))

    @property
    def name(self) -> str:
        """The strategy name, before any options."""
        return self.core.name

    @property
    def servers(self) -> int:
        """Parameter servers it runs, each on a host of its own (0 for the other strategies).

        >>> Strategy("ps:num_ps=4").servers, Strategy("ring").servers
        (4, 0)
        """
        return self.core.servers

    def __str__(self) -> str:
        return self.spec


def with_options(spec: str, *options: str) -> str:
    """``spec`` with ``key=value`` options appended (not validated here).

    >>> with_options("ring", "execution=stream"), with_options("ring:partition=1MiB", "a=1", "b=2")
    ('ring:execution=stream', 'ring:partition=1MiB,a=1,b=2')
    """
    if not options:
        return spec
    return f"{spec}{',' if ':' in spec else ':'}{','.join(options)}"


def _option(o: dict[str, Any]) -> OptionInfo:
    return OptionInfo(o["name"], o["accepts"], o["default"], o["help"], tuple(o["aliases"]))


def strategies() -> list[StrategyInfo]:
    """Every built-in strategy with its options."""
    return [
        StrategyInfo(
            s["name"],
            s["summary"],
            tuple(_option(o) for o in s["options"]),
            tuple(s["host_options"]),
            s["alias_of"],
        )
        for s in _core.strategies()
    ]


def check(
    strategy: Union[Strategy, str], workers: int, topology: Union[str, _core.Topology] = "star", network: str = "flow"
) -> None:
    """Raises :class:`InputError` when the core refuses ``strategy`` for ``workers`` workers
    on ``topology`` under ``network`` (its checks of the fabric and of the worker count; e.g.
    ``multitree`` needs one multi-GPU machine), as a run would.

    >>> try:
    ...     check("multitree", 4)
    ... except _core.InputError as e:
    ...     print(e.field)
    topology
    """
    core = strategy.core if isinstance(strategy, Strategy) else _core.Strategy(strategy)
    topo = topology if isinstance(topology, _core.Topology) else _core.Topology(topology)
    _core.check(core, topo, workers, network)


#: The old name of :func:`check`.
probe = check


def runs_on(
    strategy: Union[Strategy, str], workers: int, topology: Union[str, _core.Topology] = "star", network: str = "flow"
) -> bool:
    """Whether :func:`check` accepts the combination.

    >>> runs_on("ring", 4), runs_on("multitree", 4)
    (True, False)
    """
    try:
        check(strategy, workers, topology, network)
    except _core.InputError:
        return False
    return True


def host_options() -> tuple[OptionInfo, ...]:
    """Options every strategy takes: partition, schedule, credit, fusion, compression, transport, ..."""
    return tuple(_option(o) for o in _core.host_options())


def split_specs(text: str, field: str = "strategies") -> list[str]:
    """Splits ``ps,ring:partition=4MiB,credit=1MiB`` into specs: a comma-separated piece that
    is ``key=value`` (no name before a colon) continues the previous spec's options. An empty
    text or an empty item (``ps,,ring``) is refused (:class:`InputError` naming ``field``).

    >>> split_specs("ps,ring:partition=4MiB,credit=1MiB,ps:num_ps=2")
    ['ps', 'ring:partition=4MiB,credit=1MiB', 'ps:num_ps=2']
    """
    if not isinstance(text, str):
        raise wrong_type(field, "comma-separated text such as 'ps,ring'", text)
    if not text.strip():
        raise _core.InputError(field, "give at least one strategy spec, e.g. ps,ring")
    specs: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            raise _core.InputError(field, f"{text!r} has an empty item; separate specs with single commas")
        if "=" in piece and ":" not in piece and specs:
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    return specs


def gpu_fabric(topology: str) -> bool:
    """Whether ``topology`` is a GPU fabric (``rail`` or ``nodes`` machines), where NCCL runs
    the collectives and ``nccl``/``ddp`` are the defaults: the core's rule
    (``TopologySpec::gpu_machines``), which also picks NCCL's compute slowdown.

    >>> gpu_fabric("rail:node=dgx-h100"), gpu_fabric("nodes"), gpu_fabric("leaf-spine")
    (True, True, False)
    """
    return _core.Topology(topology).gpu_machines


def baseline_spec(specs: Sequence[str], *, llms: bool, topology: str) -> str:
    """The strategy spec that speedups are over, as ``compare`` and ``sweep`` choose it: the
    data-parallel baseline, PyTorch DDP (plain ``ddp``) for LLMs (``llms``: every model
    compared is one) and on GPU fabrics, else (the seeds' question) one plain parameter
    server (``ps``; ``ps:num_ps=8`` is a strategy like any other); where ``specs`` (in the
    order given) lack it, the first of them.

    >>> baseline_spec(["ring", "ps"], llms=False, topology="star")
    'ps'
    >>> baseline_spec(["fsdp", "ddp"], llms=True, topology="star")
    'ddp'
    >>> baseline_spec(["ring", "ps:num_ps=2"], llms=False, topology="star")
    'ring'
    """
    preferred = "ddp" if llms or gpu_fabric(topology) else "ps"
    return preferred if preferred in specs else specs[0]


def latency_seen(specs: Iterable[str], topology: str) -> bool:
    """Whether a per-hop latency on ``topology`` changes a run of any of ``specs``: False
    where every one is timed by NCCL's closed-form model (``nccl``, ``ddp``, sharded
    strategies under ``comm=nccl``; :meth:`tensorwire._core.Strategy.timed_by_nccl`), which
    takes its own latencies, so that a title beside them shows no latency none of them used
    (True for no specs: nothing says the latency is unused).

    >>> latency_seen(["ddp", "fsdp"], "rail:node=dgx-h100"), latency_seen(["ddp", "ring"], "rail:node=dgx-h100")
    (False, True)
    >>> latency_seen(["fsdp"], "star")
    True
    """
    listed = list(specs)
    return not listed or not all(_core.Strategy(s).timed_by_nccl(topology) for s in listed)
