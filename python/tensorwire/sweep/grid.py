"""The grid of a sweep: every axis validated up front, then expanded into configurations.

An axis is given as a list of values or as the command line's comma-separated text
(``"4,8,16"``, ``"1Gbps,25Gbps"``, ``"ps,ring:partition=4MiB,credit=1MiB"``); text is split
by the same rule in the API and the CLI (:func:`tensorwire.strategy.split_specs` for
strategies and topologies, whose specs contain commas themselves). Every value of every axis
is checked, and every strategy is tried once on every topology and worker count with a tiny
collective, before any simulation of the sweep starts: bad input fails in well under a
second, naming the field, instead of after minutes of work.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence, TypeVar, Union

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.api import DEFAULT_MAX_FLOWS
from tensorwire.cluster import per_hop
from tensorwire.io import InputWarning
from tensorwire.limits import U32_MAX, U64_MAX, check_int, check_real, is_int, is_real
from tensorwire.strategy import Strategy, latency_seen, probe, runs_on, split_specs
from tensorwire.strategy import strategies as builtin_strategies
from tensorwire.units import format_rate, to_rate, to_seconds
from tensorwire.workloads import device_on, llm, load_model
from tensorwire.workloads import models as zoo_models
from tensorwire.workloads.formats import load_workload, name_apart

T = TypeVar("T")

#: The ``gpu`` column of a workload read from a file (its compute times are the file's).
FILE_GPU = "file"

#: Why a built-in model's options beside a workload file alone are refused rather than ignored.
FILE_GIVES_ITERATION = "the file gives the iteration"

#: Most configurations one sweep runs (``grid`` is refused past it, before anything runs):
#: at a few milliseconds each, hours of simulation and a results file of ~30 MB.
MAX_POINTS = 100_000
Scalar = Union[str, int, float]
#: A built-in model or workload file as a row records it: name, gpu, batch, seq_len, mfu, recompute.
_Point = tuple[str, str, int, Optional[int], Optional[float], Optional[bool]]
Axis = Union[None, str, int, float, Iterable[Optional[Scalar]]]

#: Defaults of each axis when it is not given (a 32-worker, 25 Gbps star, as ``compare``);
#: strategies default to every built-in strategy.
DEFAULTS: dict[str, tuple[Optional[Scalar], ...]] = {
    "model": ("resnet50",),
    "workers": (32,),
    "bandwidth": ("25Gbps",),
    "latency": (_core.DEFAULT_LATENCY_S,),
    "topology": ("star",),
    "network": ("flow",),
    "gpu": (None,),
    "batch": (None,),
    "seq_len": (None,),
    "mfu": (None,),
    "compute_speedup": (1.0,),
    "seed": (0,),
}


@dataclass(frozen=True)
class Config:
    """One point of a grid: everything one :func:`tensorwire.simulate` call needs.

    ``gpu`` and ``batch`` are resolved (the model's default device and its measured batch
    size when not given), so that a row says exactly what was simulated; so are an LLM's
    ``seq_len``, ``mfu`` and ``recompute`` (:func:`llm_options`: its context length, 0.40,
    False), which are None for a zoo model or a workload file. ``bandwidth`` is bytes/s per
    direction of each host link, ``latency`` seconds per hop.
    """

    model: str
    gpu: str
    batch: int
    compute_speedup: float
    topology: str
    network: str
    latency: float
    workers: int
    bandwidth: float
    strategy: str
    iterations: int
    seed: int
    #: A workload file simulated instead of the zoo model ``model`` (then its name), and its format.
    workload_file: str = ""
    workload_format: str = "auto"
    #: Flow budget of each simulation (:func:`tensorwire.simulate`'s ``max_flows``, and its
    #: default, :data:`tensorwire.api.DEFAULT_MAX_FLOWS`); None: no limit.
    max_flows: Optional[int] = DEFAULT_MAX_FLOWS
    #: An LLM's tokens per sequence, model-FLOP utilisation and full recomputation; None for
    #: a zoo model or a workload file.
    seq_len: Optional[int] = None
    mfu: Optional[float] = None
    recompute: Optional[bool] = None

    def describe(self) -> str:
        """One line naming the configuration, for error messages (without the latency where
        the strategy is timed by NCCL's model, which does not see it)."""
        hop = per_hop(self.latency, latency_seen([self.strategy], self.topology))
        tokens = "" if self.seq_len is None else f" x {self.seq_len} tokens"
        tokens += "" if self.mfu is None else f", MFU {self.mfu:g}"
        tokens += ", recompute" if self.recompute else ""
        return (
            f"{self.model} ({self.gpu}, batch {self.batch}{tokens}, compute x{self.compute_speedup:g}) on "
            f"{self.workers} workers, {format_rate(self.bandwidth)}{hop}, {self.topology}, {self.strategy}"
        )


def llm_options(
    model: str, seq_len: Optional[int], mfu: Optional[float], recompute: bool
) -> tuple[Optional[int], Optional[float], Optional[bool]]:
    """The ``seq_len``, ``mfu`` and ``recompute`` a row of built-in ``model`` records, as its
    workload was built (:func:`tensorwire.workloads.load_model`, which has checked them): an
    LLM's given values or its defaults (the context length, :data:`llm.DEFAULT_MFU`); None
    for each where ``model`` is not an LLM.

    >>> llm_options("llama3_8b", None, None, False), llm_options("resnet50", None, None, False)
    ((8192, 0.4, False), (None, None, None))
    """
    if model not in llm.names():
        return None, None, None
    return llm.tokens_per_sample(model, seq_len), llm.check_mfu(llm.DEFAULT_MFU if mfu is None else mfu), recompute


def _items(value: Axis, field: str, specs: bool = False) -> list[Optional[Scalar]]:
    """The values of one axis: text is a comma-separated list, a number (numpy's too) one
    value, anything else an iterable. numpy's numbers become plain ``int``/``float`` (an
    ``np.int64`` was refused as a worker count and ``np.int64(8)`` alone was "not iterable");
    ``True``/``False`` stay as given, for the checks to refuse by name."""
    if value is None:
        return list(DEFAULTS[field])
    if isinstance(value, str):
        items: list[Optional[Scalar]] = list(split_specs(value, field) if specs else _split(value, field))
    elif isinstance(value, (int, float)) or is_real(value):  # numpy's scalars are not iterable
        items = [_plain(value)]
    else:
        items = []
        for v in value:
            if isinstance(v, str) and not specs and "," in v:
                items.extend(_split(v, field))
            elif isinstance(v, str) and specs:
                items.extend(split_specs(v, field))
            else:
                items.append(_plain(v))
    if not items:
        raise InputError(field, "give at least one value")
    return items


def _plain(value: Any) -> Any:
    """A number (numpy's too, not a ``bool``) as a plain ``int`` or ``float``; anything else
    as it is."""
    if is_int(value):
        return int(value)
    if is_real(value):
        return float(value)
    return value


def _split(text: str, field: str) -> list[str]:
    """The items of a comma-separated list; an empty item (``4,,8``) is refused."""
    items = [p.strip() for p in text.split(",")]
    if text.strip() and not all(items):
        raise InputError(field, f"{text!r} has an empty item; separate values with single commas")
    return [p for p in items if p]


def refuse_model_options(given: Iterable[str], source: str = "--workload", why: str = FILE_GIVES_ITERATION) -> None:
    """Refuses the first of ``given``, options that build a built-in model's iteration
    (``--gpu``, ``--batch``, ...), beside ``source``, where nothing would use them: an
    ``InputError`` naming it. One wording for ``simulate``, ``compare`` (through
    ``tensorwire.cli.app``), ``sweep``, ``report`` and :func:`expand`: ``compare`` and the
    grid ignored them silently, ``sweep`` writing rows with gpu ``file`` and the file's batch.

    >>> refuse_model_options(["--batch"])
    Traceback (most recent call last):
    tensorwire.InputError: batch: applies to --model, not --workload (the file gives the iteration)
    """
    flag = next(iter(given), None)
    if flag is not None:
        raise InputError(flag.lstrip("-"), f"applies to --model, not {source} ({why})")


def _given(items: Sequence[Optional[Scalar]]) -> bool:
    """Whether an axis with a default of None (``gpu``, ``batch``) was given a value."""
    return any(v not in (None, "") for v in items)


def _unique(values: Iterable[T]) -> list[T]:
    """The values in first-seen order, each once."""
    return list(dict.fromkeys(values))


def _int(value: Any, field: str, minimum: int, maximum: int = U64_MAX) -> int:
    """An integer in ``[minimum, maximum]`` (the core's type: workers, iterations and batch
    are 32-bit, seeds and flow budgets 64-bit; past it the core raised OverflowError)."""
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise InputError(field, f"{value!r} is not an integer") from None
    if not is_int(value) or value < minimum:  # numpy's integers too (as plain ints); not a bool
        raise InputError(field, f"{value!r} is not allowed; need an integer >= {minimum}")
    return check_int(field, value, minimum, maximum)


def _parsed(value: Optional[Scalar], field: str, kind: Union[type[int], type[float]]) -> Any:
    """``value`` with text parsed as ``kind``, where a value's checks are the workload's own
    (an LLM's ``seq_len`` and ``mfu``: :func:`tensorwire.workloads.load_model` words them as
    for ``simulate``); text that is not a number is refused here, naming ``field``."""
    if not isinstance(value, str):
        return _plain(value)
    try:
        return kind(value.strip())
    except ValueError:
        raise InputError(field, f"{value!r} is not {'an integer' if kind is int else 'a number'}") from None


def _positive_float(value: Optional[Scalar], field: str) -> float:
    """A finite number > 0 (numpy's too), or text of one, as a plain ``float``."""
    if isinstance(value, str):
        try:
            x = float(value)
        except ValueError:
            raise InputError(field, f"{value!r} is not a number") from None
    else:
        # check_real: an integer past a float (10**400) was an OverflowError.
        x = check_real(field, value) if is_real(value) else math.nan
    if not x > 0 or math.isinf(x):
        raise InputError(field, f"{value!r} is not allowed; need a number > 0")
    return x


def expand(
    models: Axis = None,
    workers: Axis = None,
    bandwidths: Axis = None,
    strategies: Axis = None,
    *,
    latencies: Axis = None,
    topologies: Axis = None,
    networks: Axis = None,
    gpus: Axis = None,
    batches: Axis = None,
    seq_lens: Axis = None,
    mfus: Axis = None,
    recompute: bool = False,
    compute_speedups: Axis = None,
    seeds: Axis = None,
    iterations: int = _core.DEFAULT_ITERATIONS,
    workload_file: Optional[str] = None,
    workload_format: str = "auto",
    max_flows: Optional[int] = DEFAULT_MAX_FLOWS,
    own_rates: Optional[bool] = None,
) -> list[Config]:
    """Validates every axis and returns the cross product, strategies varying fastest.

    An axis left out takes its :data:`DEFAULTS` value; ``strategies`` left out is every
    built-in strategy (an alias once, under its target's name) at each topology and worker
    count where it runs, with an :class:`~tensorwire.io.InputWarning` naming where it does
    not. ``workload_file`` (any format
    :func:`tensorwire.workloads.formats.load_workload` reads) is simulated too, as a model named after
    the workload; with it, ``models`` left out means the file alone. ``max_flows`` is
    passed to every simulation: by default :data:`tensorwire.api.DEFAULT_MAX_FLOWS`, the
    budget of :func:`tensorwire.simulate` and of the CLI's ``--max-flows``; ``None`` for no
    budget. ``own_rates``: a fabric whose GPUs have NICs of their own
    (``rail``) is simulated at its NICs' rate instead of ``bandwidths``; by default where
    ``bandwidths`` is not given, as ``Cluster(bandwidth=None)`` and the commands without
    ``--bandwidth`` do, so that a default rate does not replace a preset's NICs (``run_grid``
    on ``rail:node=dgx-h100`` ran 25 Gbps NICs).

    ``seq_lens`` and ``mfus`` (axes) and ``recompute`` (one value for every point) build the
    LLMs as :func:`tensorwire.workloads.load_model` does, which checks them and refuses them
    for a zoo model, as ``simulate`` does; each LLM row records the values it ran with
    (:func:`llm_options`).

    Raises :class:`tensorwire.InputError` naming the field (``model``, ``gpu``, ``batch``,
    ``seq_len``, ``mfu``, ``recompute``, ``workers``, ``bandwidth``, ``latency``,
    ``topology``, ``network``, ``strategy``, ``compute_speedup``, ``seed``, ``iterations``)
    for the first bad value; ``gpu``, ``batch`` and the LLM options too where
    ``workload_file`` is given without ``models``, since a file gives its own iteration
    (:func:`refuse_model_options`).

    >>> [(c.workers, c.strategy) for c in expand("vgg16", "4,8", "10Gbps", "ps,ring")]
    [(4, 'ps'), (4, 'ring'), (8, 'ps'), (8, 'ring')]
    """
    iters = _int(iterations, "iterations", 1, U32_MAX)
    if max_flows is not None:
        max_flows = _int(max_flows, "max_flows", 1)
    model_names = [] if models is None and workload_file else _unique(str(m).strip() for m in _items(models, "model"))
    gpu_items, batch_items = _items(gpus, "gpu"), _items(batches, "batch")
    seq_items, mfu_items = _items(seq_lens, "seq_len"), _items(mfus, "mfu")
    if workload_file and not model_names:
        # The file alone: only models' rows take a device, a batch and an LLM's options;
        # whatever the values (a device that does not exist too), they would change nothing.
        given = [("--gpu", _given(gpu_items)), ("--batch", _given(batch_items)), ("--seq-len", _given(seq_items))]
        given += [("--mfu", _given(mfu_items)), ("--recompute", bool(recompute))]
        refuse_model_options(flag for flag, yes in given if yes)
    gpu_names = _unique(None if g in (None, "") else str(g).strip() for g in gpu_items)
    batch_sizes = _unique(None if b in (None, "") else _int(b, "batch", 1, U32_MAX) for b in batch_items)
    seq_values = _unique(None if s in (None, "") else _parsed(s, "seq_len", int) for s in seq_items)
    mfu_values = _unique(None if u in (None, "") else _parsed(u, "mfu", float) for u in mfu_items)
    speedups = _unique(_positive_float(x, "compute_speedup") for x in _items(compute_speedups, "compute_speedup"))
    topos = _unique(str(t).strip() for t in _items(topologies, "topology", specs=True))
    for t in topos:
        _core.check_topology(t)
    nets = _unique(str(n).strip() for n in _items(networks, "network"))
    for n in nets:
        if n not in _core.NETWORK_MODELS:
            raise InputError("network", f"{n!r} is not a network model; choose {' or '.join(_core.NETWORK_MODELS)}")
    lats = _unique(
        to_seconds(v if isinstance(v, (int, float)) else str(v), "latency") for v in _items(latencies, "latency")
    )
    ns = _unique(_int(n, "workers", 1, _core.MAX_WORKERS) for n in _items(workers, "workers"))
    rates = _unique(
        to_rate(v if isinstance(v, (int, float)) else str(v), "bandwidth") for v in _items(bandwidths, "bandwidth")
    )
    if own_rates is None:
        own_rates = bandwidths is None
    rates_of = {t: [_core.host_rate(t)] if own_rates and _own_rate(t) else rates for t in topos}
    # Which (strategy, topology, workers) run: every given strategy everywhere (a point it
    # cannot run is refused below), a built-in default where it runs (left out elsewhere,
    # with a warning naming where: it was dropped from every point silently).
    runs: Optional[dict[tuple[str, str, int], bool]] = None
    if strategies is None:
        runs = {
            (s.name, t, n): runs_on(s.name, n, t)
            for s in builtin_strategies()
            if s.alias_of is None
            for t, n in itertools.product(topos, ns)
        }
        specs = _unique(spec for (spec, _, _), ok in runs.items() if ok)
        _warn_left_out(runs, specs)
    else:
        specs = _unique(Strategy(str(s)).spec for s in _items(strategies, "strategy", specs=True))
    seed_values = _unique(_int(s, "seed", 0) for s in _items(seeds, "seed"))

    # Every (model, gpu, batch, seq_len, mfu) must load; resolve the defaults so rows say
    # what ran (an LLM without a GPU computes on its rail's node GPU: `device_on`). A zoo
    # model refuses the LLM options as `simulate` refuses them (load_model).
    default_device = {m.name: m.default_device for m in zoo_models()}
    resolved: list[tuple[str, str, int, Optional[int], Optional[float], Optional[bool], str]] = []
    sizes: dict[tuple[str, Optional[str], Optional[int], Any, Any], int] = {}  # each model loaded once per device
    for name, gpu, batch, seq, mfu, topo in itertools.product(
        model_names, gpu_names, batch_sizes, seq_values, mfu_values, topos
    ):
        device = device_on(name, gpu, topo)
        key = (name, device, batch, seq, mfu)
        if key not in sizes:  # raises InputError (model, gpu, batch, seq_len, mfu, recompute)
            sizes[key] = load_model(name, device, batch, seq_len=seq, mfu=mfu, recompute=recompute).batch_size
        options = llm_options(name, seq, mfu, recompute)
        resolved.append((name, device or default_device[name], sizes[key], *options, topo))
    resolved = _unique(resolved)
    files: list[_Point] = []
    if workload_file:
        w = load_workload(workload_file, workload_format)  # raises InputError (workload...)
        files.append((name_apart(w.name, model_names, workload_file), FILE_GPU, w.batch_size, None, None, None))

    # Refused before anything runs: a grid past this is hours of simulation and a results
    # file of hundreds of megabytes (1,000 worker counts x 1,000 rates ran a minute without
    # a line of output).
    points = (
        (sum(len(rates_of[t]) for *_, t in resolved) + len(files) * sum(len(rates_of[t]) for t in topos))
        * len(speedups)
        * len(nets)
        * len(lats)
        * len(ns)
        * len(specs)
        * len(seed_values)
    )
    if points > MAX_POINTS:
        raise InputError(
            "grid",
            f"{points:,} configurations, more than the {MAX_POINTS:,} a sweep runs; give fewer values on its "
            "axes (models, workers, bandwidths, strategies, topologies, latencies, seeds), or run it in parts",
        )

    if runs is None:
        _probe(specs, topos, ns)

    return [
        Config(
            model=name,
            gpu=device,
            batch=batch,
            compute_speedup=speedup,
            topology=topo,
            network=net,
            latency=lat,
            workers=n,
            bandwidth=rate,
            strategy=spec,
            iterations=iters,
            seed=seed,
            workload_file=str(workload_file) if (name, device, batch, seq, mfu, rec) in files else "",
            workload_format=workload_format,
            max_flows=max_flows,
            seq_len=seq,
            mfu=mfu,
            recompute=rec,
        )
        for (name, device, batch, seq, mfu, rec, topo), speedup, net, lat, n in itertools.product(
            resolved + [(*f, topo) for topo in topos for f in files], speedups, nets, lats, ns
        )
        for rate, spec, seed in itertools.product(rates_of[topo], specs, seed_values)
        if runs is None or runs[(spec, topo, n)]
    ]


def _own_rate(topology: str) -> bool:
    """Whether the fabric's hosts have a link rate of their own (a rail's NICs)."""
    try:
        _core.host_rate(topology)
    except InputError:
        return False
    return True


def _warn_left_out(runs: dict[tuple[str, str, int], bool], specs: Sequence[str]) -> None:
    """One warning per default strategy (``specs``: those that run somewhere) that does not
    run at some (topology, workers) of the grid, naming up to three of them: ``hsdp`` on 8
    and 12 workers ran at 8 and was missing from both, without a word. Network models are
    not asked: a strategy NCCL's model times runs under the flow model, and its points
    under ``analytical`` are left out one by one (:func:`tensorwire.sweep.run.check_configs`)."""
    nowhere = _unique(s for (s, _, _) in runs if s not in specs)
    if nowhere:
        warnings.warn(
            f"strategies: the built-in {', '.join(nowhere)} {'runs' if len(nowhere) == 1 else 'run'} at no point "
            "of the grid; left out",
            InputWarning,
            stacklevel=3,
        )
    for spec in specs:
        where = [f"{n} workers on {t}" for (s, t, n), ok in runs.items() if s == spec and not ok]
        if where:
            shown = "; ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
            warnings.warn(
                f"strategies: the built-in {spec} does not run at {shown}; left out there "
                f"(`tensorwire simulate -s {spec}` there says why)",
                InputWarning,
                stacklevel=3,
            )


def _probe(specs: Sequence[str], topologies: Sequence[str], workers: Sequence[int]) -> None:
    """Tries each strategy on each topology and worker count, so that a combination the core
    rejects (multicast on a ring, ...) fails before the sweep starts. A network model a
    strategy does not use is the points' to refuse (:func:`tensorwire.sweep.run.check_configs`
    leaves out a built-in strategy's, refuses a named one's)."""
    for spec, topo, n in itertools.product(specs, topologies, workers):
        try:
            probe(spec, n, topo)
        except InputError as e:
            field, message = e.args if len(e.args) == 2 else ("strategy", str(e))
            raise InputError(field, f"{spec} with {n} workers on topology {topo!r}: {message}") from None
