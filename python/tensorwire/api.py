"""``simulate``: one workload on one cluster under one strategy."""

from __future__ import annotations

import math
import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Union

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.cluster import Cluster
from tensorwire.failures import Failure
from tensorwire.limits import (
    U32_MAX,
    U64_MAX,
    as_items,
    check_int,
    check_real,
    is_int,
    is_real,
    items_of,
    wrong_type,
)
from tensorwire.result import Result, nccl_channels_text, without_sample_metrics
from tensorwire.strategy import Strategy
from tensorwire.units import format_seconds
from tensorwire.workload import Workload

#: The flow budget ``simulate`` and ``simulate_jobs`` use when given none (and the CLI's
#: ``--max-flows`` default): defined once, in the core (about 2 s of simulation; see
#: docs/simulator.md, "The flow budget").
DEFAULT_MAX_FLOWS: int = _core.DEFAULT_MAX_FLOWS


class UnseenOptionWarning(UserWarning):
    """A run took an option that changes nothing in it: a cluster's per-hop ``latency``
    (other than the default) under a strategy timed by NCCL's model (``nccl``, ``ddp``,
    sharded strategies on ``comm=nccl``), which has its own latencies (``inter_latency=``,
    ``intra_latency=`` on the topology add to them). The CLI refuses or notes such a
    ``--latency`` itself and ignores this warning; a ``--cluster`` file's latency is for the
    flow-level strategies that run beside them."""


def warn_unseen_latency(cluster: Cluster, strategy: Strategy, stacklevel: int = 3) -> None:
    """Warns (:class:`UnseenOptionWarning`) where ``cluster``'s latency is not the default
    and ``strategy`` is timed by NCCL's model, which does not see it."""
    if cluster.latency != _core.DEFAULT_LATENCY_S and strategy.core.timed_by_nccl(cluster.topology):
        warnings.warn(
            f"latency {format_seconds(cluster.latency)}/hop: {strategy.spec} {LATENCY_UNSEEN}",
            UnseenOptionWarning,
            stacklevel=stacklevel,
        )


#: Why a per-hop latency changes nothing under NCCL's timing (the API's warning, the CLI's refusal).
LATENCY_UNSEEN = (
    "times its collectives with NCCL's model, which has its own latencies (add to them on the topology: "
    "inter_latency=, intra_latency=); give a flow-level strategy (ring, hierarchical, fsdp:comm=flows) to simulate "
    "a latency per hop"
)


@dataclass(frozen=True)
class Progress:
    """How far a running simulation has got (passed to ``simulate(progress=...)``)."""

    iterations_done: int
    iterations: int
    simulated_s: float
    events: int
    flows: int


def simulate(
    workload: Workload,
    cluster: Cluster,
    strategy: Union[Strategy, str],
    *,
    iterations: int = _core.DEFAULT_ITERATIONS,
    seed: int = 0,
    stragglers: str = "none",
    spread: float = 0.0,
    slowdowns: Optional[Sequence[float]] = None,
    fold: bool = True,
    timeline: bool = False,
    max_flows: Optional[int] = DEFAULT_MAX_FLOWS,
    progress: Optional[Callable[[Progress], bool]] = None,
    failures: Optional[Sequence[Failure]] = (),
) -> Result:
    """Simulates ``iterations`` training iterations and reports the steady state.

    ``strategy`` is a spec (:class:`Strategy`, ``tensorwire strategies``): on GPU clusters
    (``rail``, ``nodes``) ``ddp`` for a PyTorch DDP job, ``nccl`` for one NCCL call per
    tensor (``nccl:fusion=64MiB,cycle=5ms`` for Horovod), ``fsdp``/``zero1``-``zero3``/``hsdp``
    for sharded jobs, all timed by NCCL 2.30.7's model; the seeds' ``ring``, ``ps`` and the
    other flow-level strategies anywhere.
    The first iteration is warm-up when there are several. ``stragglers`` is ``none``,
    ``normal`` (``spread`` = coefficient of variation), ``lognormal`` (``spread`` = sigma)
    ``fixed`` (``slowdowns`` = one compute multiplier per worker), ``empirical``
    (``slowdowns`` = measured multipliers, one drawn per worker and iteration) or ``one``
    (``slowdowns=[M]``: in every iteration one worker drawn at random computes M times as
    long, Li et al. 2019's injected imbalance); draws are seeded.
    A spread or slowdowns the core refuses (out of range, NaN, too few) are named as given
    (``spread``, ``slowdowns``). A ``spread`` other than 0 with another mode (``none``,
    ``fixed``, ``empirical``, ``one``) is refused (``InputError``, field ``spread``), as
    ``slowdowns`` are without ``fixed``, ``empirical`` or ``one``: it would change nothing. Numbers may be numpy's (``np.int64(8)``, ``np.float32(0.2)``);
    ``True`` and ``False`` are not numbers (a slowdown of ``True`` is refused, naming
    ``slowdowns[i]``).
    ``fold=False`` disables the shortcuts (folding ranks that behave alike; timing a
    collective whose messages each have links of their own by its step recurrence): the
    same answer, slower; for checking.
    ``max_flows`` refuses a run that would need more flows than that with an ``InputError``
    (field ``max_flows``) instead of running for minutes or out of memory: before anything
    is simulated, from a bound of the flows the run will simulate (after folding;
    messages timed by lanes count 1/64 of a flow; a flow of an unfolded parameter server or
    tree counts as the flows it shares links with; past 16.8 million step evaluations a
    schedule's ranks are sampled, an estimate), and again while running. The default,
    :data:`DEFAULT_MAX_FLOWS`, keeps a run within about 2 s; pass a larger number to allow
    longer runs, or ``None`` for no budget at all.
    ``progress`` is called every 65,536 events (and at least every 0.2 s) with a
    :class:`Progress` and stops the run (``InputError``, field ``interrupted``) when it
    returns False (any other result, None included, lets it go on); an exception it raises
    stops the run and is raised from ``simulate``; Ctrl-C stops a run within a second. ``failures`` lowers
    links' rates (or takes them down) at given times (:mod:`tensorwire.failures`; ``None``,
    like an empty list, is no failures); one
    timed after the run ended could change nothing and is refused (``InputError``, field
    ``failures[i].at_s``, saying when the run ended), so ``Result.failures_applied`` is
    every failure. A cluster's ``latency`` under a strategy NCCL's model times changes
    nothing and warns (:class:`UnseenOptionWarning`). A workload without compute (a
    collective microbenchmark) has no samples: its result's ``throughput_samples_per_s`` and
    ``scaling_factor`` are NaN; on one worker without a parameter server it has nothing to
    exchange and is refused (``InputError``, field ``workers``). An argument of the wrong kind
    (``spread="0.2"``) is an ``InputError`` that is also a ``TypeError``, naming it.

    >>> from tensorwire import Cluster, load_model
    >>> r = simulate(load_model("vgg16"), Cluster(32, "25Gbps"), "ring")
    >>> 0 < r.scaling_factor <= 1
    True
    """
    parsed = _as_strategy(strategy)
    _check_types(timeline=timeline)
    args, options = _run_args(
        workload, cluster, parsed, iterations, seed, stragglers, spread, slowdowns, fold, max_flows, failures, progress
    )
    warn_unseen_latency(cluster, parsed)
    # Only False stops: a callback that prints and returns None lets the run go on.
    report = None if progress is None else (lambda *p: progress(Progress(*p)) is not False)
    with _stragglers_named_as_given(stragglers):
        raw = _core.Scenario(*args, **options).simulate(timeline=timeline, progress=report)
    return _result(raw, workload, cluster.workers, cluster.bandwidth, parsed.spec)


def check_simulate(
    workload: Workload,
    cluster: Cluster,
    strategy: Union[Strategy, str],
    *,
    iterations: int = _core.DEFAULT_ITERATIONS,
    seed: int = 0,
    stragglers: str = "none",
    spread: float = 0.0,
    slowdowns: Optional[Sequence[float]] = None,
    fold: bool = True,
    max_flows: Optional[int] = DEFAULT_MAX_FLOWS,
    failures: Optional[Sequence[Failure]] = (),
) -> None:
    """Raises the :class:`InputError` that :func:`simulate` with these arguments would raise
    before simulating anything (the arguments, the strategy on the fabric with the workload,
    the flow budget), without simulating: the engine is built, no event runs. What only a run
    can find (a time past the horizon, a failure timed after the end) is not checked.

    >>> from tensorwire import Cluster, load_model
    >>> check_simulate(load_model("vgg16"), Cluster(32, "25Gbps"), "ring")
    >>> try:
    ...     check_simulate(load_model("gpt3_175b"), Cluster(4, "25Gbps"), "ring:partition=1MiB")
    ... except InputError as e:
    ...     print(e.args[0])
    max_flows
    """
    parsed = _as_strategy(strategy)
    args, options = _run_args(
        workload, cluster, parsed, iterations, seed, stragglers, spread, slowdowns, fold, max_flows, failures
    )
    with _stragglers_named_as_given(stragglers):
        _core.Scenario(*args, **options).check()


def _run_args(
    workload: Workload,
    cluster: Cluster,
    parsed: Strategy,
    iterations: int,
    seed: int,
    stragglers: str,
    spread: float,
    slowdowns: Optional[Sequence[float]],
    fold: bool,
    max_flows: Optional[int],
    failures: Optional[Sequence[Failure]],
    progress: Any = None,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Checks what :func:`simulate` and :func:`check_simulate` check in Python; returns the
    core's positional arguments of the run (workload, workers, strategy, bandwidth, latency,
    topology) and its keyword arguments, those of :class:`_core.Scenario`. Numbers (numpy's
    too) are passed on as plain ``int``/``float``."""
    _check_types(workload=workload, cluster=cluster, stragglers=stragglers, spread=spread, fold=fold, progress=progress)
    _check_exchange("workers", cluster.workers, workload, parsed)
    iterations, seed, max_flows, failures = _check_run(iterations, seed, max_flows, failures)
    spread = check_real("spread", spread)
    slowdowns = _slowdowns(slowdowns)
    # Which argument gives each kind's numbers (_STRAGGLER_NUMBERS): the other would change nothing.
    takes = _STRAGGLER_NUMBERS.get(stragglers)
    if slowdowns is not None and takes != "slowdowns":
        raise InputError(
            "slowdowns", f"apply only with stragglers='fixed', 'empirical' or 'one'; stragglers is {stragglers!r}"
        )
    if spread != 0 and (stragglers == "none" or takes == "slowdowns"):
        # Was ignored without a word, where slowdowns without 'fixed' are refused.
        raise InputError(
            "spread", f"{spread!r} applies only with stragglers='normal' or 'lognormal'; stragglers is {stragglers!r}"
        )
    options: dict[str, Any] = dict(
        network=cluster.network,
        iterations=iterations,
        seed=int(seed) % 2**64,
        per_message_overhead=cluster.per_message_overhead,
        copy_bandwidth=cluster.copy_bandwidth,
        stragglers=stragglers,
        spread=spread,
        slowdowns=slowdowns,
        allow_folding=fold,
        allow_lanes=fold,
        max_flows=max_flows,
        failures=[(f.target, f.at_s, f.rate) for f in failures] or None,
        placement=cluster.rank_placement,
    )
    return (workload.core, cluster.workers, parsed.core, cluster.bandwidth, cluster.latency, cluster.core), options


def _slowdowns(slowdowns: Any) -> Optional[list[float]]:
    """``slowdowns`` (None, or one compute multiplier per worker: any sequence, a generator
    taken once) as plain floats: numpy's numbers converted; an item that is no number, True
    and False among them (were taken as 1.0 and 0.0), and integers past a float (10**400)
    refused naming the item (``slowdowns[i]``). Their values the core checks."""
    if slowdowns is None:
        return None
    items = as_items("slowdowns", slowdowns, "a list of numbers, one compute multiplier per worker")
    for i, x in enumerate(items):
        if not is_real(x):
            raise wrong_type(f"slowdowns[{i}]", "a number (a compute multiplier)", x)
    return [check_real(f"slowdowns[{i}]", x) for i, x in enumerate(items)]


#: The argument that gives the numbers of each kind of stragglers: the core checks them and
#: names its own field, ``stragglers`` (the CLI's ``--stragglers``, which holds them).
_STRAGGLER_NUMBERS = {
    "normal": "spread",
    "lognormal": "spread",
    "fixed": "slowdowns",
    "empirical": "slowdowns",
    "one": "slowdowns",
}


@contextmanager
def _stragglers_named_as_given(stragglers: str) -> Iterator[None]:
    """Re-raises the core's refusal of the stragglers' numbers (field ``stragglers``: a
    spread out of range, NaN or inf, slowdowns too few or not > 0) naming the argument that
    gave them, ``spread`` or ``slowdowns``; a refusal of ``stragglers`` itself (an unknown
    kind) is left as it is."""
    try:
        yield
    except InputError as e:
        if e.field != "stragglers" or stragglers not in _STRAGGLER_NUMBERS:
            raise
        raise InputError(_STRAGGLER_NUMBERS[stragglers], e.message) from None


#: Fields of the core's Report that :class:`Result` does not keep, and why: the failures
#: timed after the run ended are refused before a Result exists (``simulate``) or kept on
#: purpose for baselines (``_run_jobs``), never shown.
DROPPED_REPORT_FIELDS: frozenset[str] = frozenset({"failures_unreached"})

#: Report fields that :class:`Result` keeps under another name (the old name is
#: deprecated there).
RENAMED_REPORT_FIELDS: dict[str, str] = {"nap": "active_processes"}


def report_fields() -> tuple[str, ...]:
    """The names of the core Report's fields (its getters)."""
    return tuple(n for n in dir(_core.Report) if not n.startswith("_"))


def _result(raw: _core.Report, workload: Workload, workers: int, bandwidth: float, spec: str) -> Result:
    """A :class:`Result` from the core's Report: each field by name (see
    :data:`DROPPED_REPORT_FIELDS`, :data:`RENAMED_REPORT_FIELDS`), converted where Result
    keeps another container."""
    taken: dict[str, Any] = {
        RENAMED_REPORT_FIELDS.get(n, n): getattr(raw, n) for n in report_fields() if n not in DROPPED_REPORT_FIELDS
    }
    # NaN samples/s and scaling factor without compute (a collective microbenchmark): the
    # attributes stay floats; to_dict() gives None for them.
    without_sample_metrics(taken, math.nan)
    taken["link_utilization"] = dict(taken["link_utilization"])
    taken["completions_s"] = tuple(taken["completions_s"])
    taken["timeline"] = tuple(_spans(taken["timeline"], workload, workers))
    taken["nccl_choices"] = tuple(
        {
            "collective": pick[0],
            **_nccl_pick(pick),
            "count": count,
            "bytes": nbytes,
            "seconds": seconds,
            "fastest_seconds": fastest_seconds,
            "faster_algorithm": None if faster is None else faster[0],
            "faster_protocol": None if faster is None else faster[1],
        }
        for pick, count, nbytes, seconds, fastest_seconds, faster in taken["nccl_choices"]
    )
    return Result(model=workload.name, workers=workers, bandwidth=bandwidth, strategy=spec, **taken)


def _nccl_pick(pick: _core.PickTuple) -> dict[str, Any]:
    """What NCCL chose, as ``nccl_choices`` and a timed collective's span both name it:
    ``algorithm``, ``protocol``, ``channels``, ``peer_channels`` (None but for all-to-all)."""
    _, algorithm, protocol, channels, peer_channels = pick
    return {"algorithm": algorithm, "protocol": protocol, "channels": channels, "peer_channels": peer_channels}


def _spans(
    raw: list[tuple[str, int, list[int], str, list[str], float, float, float, Optional[_core.PickTuple]]],
    workload: Workload,
    workers: int,
) -> list[dict[str, object]]:
    """Core spans as dicts: compute per worker; flows per sender and per link. A flow's
    sender is ``worker`` (a rank) or ``server`` (a parameter server's index); the other is
    None, as both are on a link's copy of the flow. A collective timed by NCCL's model
    (kind ``collective``) is on its rank (``worker``), with no link, ``bytes`` its buffer
    and ``nccl`` what NCCL chose (algorithm, protocol, channels, channels per peer)."""

    def host(h: int) -> str:
        return f"worker {h}" if h < workers else f"server {h - workers}"

    out: list[dict[str, object]] = []
    for kind, src, to, label, links, start, end, nbytes, pick in raw:
        if kind == "collective":
            nccl = None if pick is None else _nccl_pick(pick)
            detail = "" if nccl is None else f" ({nccl['algorithm']}/{nccl['protocol']}, {nccl_channels_text(nccl)})"
            out.append(
                {
                    "kind": "collective",
                    "worker": src,
                    "server": None,
                    "link": None,
                    "name": f"{label}{detail}",
                    "start_s": start,
                    "end_s": end,
                    "bytes": nbytes,
                    "nccl": nccl,
                }
            )
            continue
        if kind != "flow":
            out.append(
                {
                    "kind": "compute",
                    "worker": src,
                    "server": None,
                    "link": None,
                    "name": f"{kind} {label}",
                    "start_s": start,
                    "end_s": end,
                    "bytes": None,
                }
            )
            continue
        name = f"{host(src)} -> {', '.join(host(t) for t in to) if len(to) < 4 else f'{len(to)} hosts'}"
        if label:
            name = f"{label}: {name}"
        out.append(
            {
                "kind": "flow",
                "worker": src if src < workers else None,
                "server": src - workers if src >= workers else None,
                "link": None,
                "name": name,
                "start_s": start,
                "end_s": end,
                "bytes": nbytes,
            }
        )
        for link in links:
            out.append(
                {
                    "kind": "flow",
                    "worker": None,
                    "server": None,
                    "link": link,
                    "name": name,
                    "start_s": start,
                    "end_s": end,
                    "bytes": nbytes,
                }
            )
    return out


#: What a job's name may be: ASCII letters, digits, ``_``, ``-`` and ``.`` (it is shown in
#: tables and named by the CLI's ``--job NAME:...`` and ``--place NAME=HOSTS``). One rule for
#: :class:`Job` and the CLI (:func:`job_name_problem`).
JOB_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def job_name_problem(name: str) -> Optional[str]:
    """What is wrong with ``name`` as a job's name (:data:`JOB_NAME`), or None; the words
    :class:`Job` and the CLI's ``--job`` both refuse it in.

    >>> job_name_problem("a-1.b"), job_name_problem("é")
    (None, "the name 'é' may use only ASCII letters, digits, '_', '-' and '.'")
    """
    if JOB_NAME.fullmatch(name):
        return None
    return f"the name {name!r:.80} may use only ASCII letters, digits, '_', '-' and '.'"


@dataclass(frozen=True)
class Job:
    """One job of :func:`simulate_jobs`: a workload on ``workers`` ranks under ``strategy``;
    ``hosts`` pins its ranks to fabric hosts, one per rank, then one per parameter server
    (default: the run's placement decides); any sequence of integers (a generator, numpy's
    array), kept as a tuple of plain ints, so that a job is hashable and compares equal
    whichever sequence gave its hosts. ``name`` is unique in a run, and made of ASCII letters,
    digits, ``_``, ``-`` and ``.`` (:data:`JOB_NAME`, as the CLI's ``--job`` takes it).

    Every field is checked when the job is made, as :func:`simulate` checks its arguments
    (the strategy spec parsed, its options included), and refused naming ``jobs.<field>``
    (``jobs.strategy``, ``jobs.strategy.credit``; a wrong kind is an
    :class:`~tensorwire.limits.InputTypeError`); :func:`simulate_jobs` names the job,
    ``jobs[i].<field>``.
    """

    name: str
    workload: Workload
    workers: int
    strategy: Union[Strategy, str]
    hosts: Optional[Sequence[int]] = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise wrong_type("jobs.name", "a job name (text such as 'a')", self.name)
        problem = job_name_problem(self.name)
        if problem is not None:
            raise InputError("jobs.name", problem)
        _check_types("jobs.", workload=self.workload)
        # Kept as a plain int (numpy's reached the results' to_dict(), which json refused).
        object.__setattr__(self, "workers", check_int("jobs.workers", self.workers, 1, U32_MAX))
        # Parsed here, as simulate parses its own: a bad spec was taken and refused only by
        # simulate_jobs, naming "strategy" and not the job.
        with _job_fields():
            _as_strategy(self.strategy)
        _check_exchange("jobs.workers", self.workers, self.workload, self.strategy)
        if self.hosts is not None:
            object.__setattr__(self, "hosts", _job_hosts(self.hosts))

    @property
    def hosts_needed(self) -> int:
        """Fabric hosts the job takes: one per worker and one per parameter server.

        >>> import tensorwire as tw
        >>> tw.Job("a", tw.load_model("resnet50"), 16, "ps:num_ps=4").hosts_needed
        20
        """
        return self.workers + _as_strategy(self.strategy).servers


def _renamed(e: InputError, field: str) -> InputError:
    """``e`` naming ``field`` instead, of the same class (an
    :class:`~tensorwire.limits.InputTypeError` stays one); ``e`` itself where it names no
    field (``InputError(message)``)."""
    return e if e.message is None else type(e)(field, e.message)


@contextmanager
def _job_fields() -> Iterator[None]:
    """Re-raises a refusal of a job's strategy (``strategy``, ``strategy.credit``) naming it
    as a field of the job (``jobs.strategy``, ``jobs.strategy.credit``)."""
    try:
        yield
    except InputError as e:
        raise _renamed(e, f"jobs.{e.field}") from None


@contextmanager
def _job_named(i: int) -> Iterator[None]:
    """Re-raises a refusal of job ``i``'s fields (``jobs.workers``, ``workload.layers[0].backward_s``)
    naming the job: ``jobs[i].workers``, ``jobs[i].workload.layers[0].backward_s``, as the
    core names its refusals of a job and the CLI its ``--job`` options."""
    try:
        yield
    except InputError as e:
        field = e.field or ""
        raise _renamed(e, f"jobs[{i}].{field.removeprefix('jobs.')}") from None


def _job_hosts(hosts: Any) -> tuple[int, ...]:
    """A job's ``hosts`` (any sequence, taken once) as a tuple of plain ints, each a host's
    number, else :class:`InputError` (field ``jobs.hosts``)."""
    given = as_items("jobs.hosts", hosts, "a list of host numbers (0, 1, ...)")
    if not all(is_int(h) and 0 <= h <= U32_MAX for h in given):
        raise InputError(
            "jobs.hosts", f"{list(given)!r:.200}: hosts are numbered 0, 1, ... (integers from 0 to {U32_MAX})"
        )
    return tuple(int(h) for h in given)


def simulate_jobs(
    jobs: Sequence[Job],
    cluster: Cluster,
    *,
    iterations: int = _core.DEFAULT_ITERATIONS,
    seed: int = 0,
    failures: Optional[Sequence[Failure]] = (),
    max_flows: Optional[int] = DEFAULT_MAX_FLOWS,
) -> list[Result]:
    """Simulates several jobs sharing one fabric; one :class:`Result` per job.

    ``cluster.workers`` is the number of hosts of the fabric (at least the jobs' workers and
    parameter servers together, else ``InputError`` field ``workers``); its topology, rates,
    latency, network model and ``rank_placement`` apply to all jobs: a job's ``hosts`` where
    given, the others in
    the placement's order: ``packed`` gives job 0 the first free hosts, job 1 the next;
    ``spread`` interleaves them over leaves and machines; ``random`` shuffles (seeded). Two
    jobs of one name, hosts outside the fabric or given twice are refused, naming
    ``jobs[i].name`` or ``jobs[i].hosts``. Jobs sharing a fabric are never folded and never
    take lanes; a job's ``link_utilization`` is the whole fabric's. Every strategy runs as it
    does alone, with all its options; a parameter-server job's servers take hosts of their
    own after its workers' (:attr:`Job.hosts_needed`). A failure timed after the last job
    ended is refused as in :func:`simulate` (``failures=None``: none). ``max_flows`` is the
    budget of all the jobs together, as in :func:`simulate` (checked while running;
    ``None``: no budget).

    >>> import tensorwire as tw
    >>> w = tw.load_model("resnet50")
    >>> a, b = tw.simulate_jobs([tw.Job("a", w, 16, "ring"), tw.Job("b", w, 16, "ring")],
    ...                         tw.Cluster(32, "25Gbps", topology="leaf-spine:hosts_per_leaf=8,spines=1,uplink=25Gbps",
    ...                                    rank_placement="spread"))
    >>> a.iteration_time_s > tw.simulate(w, tw.Cluster(16, "25Gbps"), "ring").iteration_time_s
    True
    """
    return _run_jobs(jobs, cluster, iterations, seed, failures, max_flows, allow_failures_after_end=False)


def _as_strategy(strategy: Union[Strategy, str]) -> Strategy:
    """``strategy`` validated (a spec string becomes a :class:`Strategy`)."""
    return strategy if isinstance(strategy, Strategy) else Strategy(strategy)


def _check_max_flows(max_flows: Optional[int]) -> None:
    """Refuses a flow budget that is not a whole number >= 1 (``None``: no budget)."""
    if max_flows is not None:
        check_int("max_flows", max_flows, 1, U64_MAX)


#: What each argument of the API that takes one kind of object must be: a test of the value
#: and the words a refusal says it in (:func:`_check_types`).
ARGUMENT_KINDS: Mapping[str, tuple[Callable[[Any], bool], str]] = {
    "workload": (lambda v: isinstance(v, Workload), "a Workload (tensorwire.load_model, Workload.from_file, ...)"),
    "cluster": (lambda v: isinstance(v, Cluster), "a Cluster"),
    "stragglers": (lambda v: isinstance(v, str), "text: none, normal, lognormal, fixed, empirical or one"),
    # Any real number, numpy's included (np.float32(0.2) was "must be a number"); not a bool.
    "spread": (is_real, "a number"),
    "fold": (lambda v: isinstance(v, bool), "True or False"),
    "timeline": (lambda v: isinstance(v, bool), "True or False"),
    "progress": (lambda v: v is None or callable(v), "a function taking a Progress (or None)"),
}


def _check_types(_prefix: str = "", **given: Any) -> None:
    """Refuses the first argument (by name, the key of :data:`ARGUMENT_KINDS`) that is not of
    its kind, naming it (after ``_prefix``, e.g. ``jobs.``) and saying what it must be
    (:func:`~tensorwire.limits.wrong_type`: an :class:`InputError` that is also a
    ``TypeError``), instead of an ``AttributeError`` or a binding's message later."""
    for name, value in given.items():
        test, expected = ARGUMENT_KINDS[name]
        if not test(value):
            raise wrong_type(_prefix + name, expected, value)


def _check_exchange(field: str, workers: int, workload: Workload, strategy: Union[Strategy, str]) -> None:
    """Refuses one worker without a parameter server (a host of its own) for a workload
    without compute (a collective microbenchmark): it has nothing to exchange, and its
    iteration took no time (a throughput of inf). The CLI refused it; ``simulate`` ran it.
    One worker pushing to a server and pulling from it is a transfer, and runs."""
    if workers < 2 and not workload.has_compute and _as_strategy(strategy).servers == 0:
        raise InputError(
            field,
            f"{workers} worker has nothing to exchange; a collective (a workload without compute) needs 2 or more "
            "(or a parameter server: ps)",
        )


#: How a failure is made, for the refusal of one that is not a :class:`Failure`.
FAILURE_EXAMPLE = " (e.g. tensorwire.failures.parse_failure('h3@0s'))"


def _check_run(
    iterations: Any, seed: Any, max_flows: Any, failures: Any
) -> tuple[int, int, Optional[int], tuple[Failure, ...]]:
    """The arguments :func:`simulate` and :func:`simulate_jobs` share, in the core's ranges,
    returned as plain ints (numpy's converted) and a tuple of failures (taken once: a
    generator was used up by the check; ``None``: none)."""
    iterations = check_int("iterations", iterations, 1, U32_MAX)
    seed = check_int("seed", seed, 0, U64_MAX)
    _check_max_flows(max_flows)
    given = () if failures is None else items_of("failures", failures, Failure, FAILURE_EXAMPLE)
    return iterations, seed, None if max_flows is None else int(max_flows), given


def _job_core(i: int, job: Job) -> tuple[Strategy, _core.Workload]:
    """Job ``i``'s strategy and its workload as the core runs it; a refusal names the job
    (``jobs[i].strategy``, ``jobs[i].workload.layers[0].backward_s``), as the core's
    ``simulate_jobs`` does."""
    with _job_named(i):
        with _job_fields():
            strategy = _as_strategy(job.strategy)
        return strategy, job.workload.core


def _run_jobs(
    jobs: Sequence[Job],
    cluster: Cluster,
    iterations: int,
    seed: int,
    failures: Optional[Sequence[Failure]],
    max_flows: Optional[int],
    *,
    allow_failures_after_end: bool,
) -> list[Result]:
    """:func:`simulate_jobs`; ``allow_failures_after_end`` keeps failures timed after the run
    instead of refusing them, for baselines that share another run's failures (each job of
    ``tensorwire jobs`` alone: it ends before the jobs together do)."""
    # Taken once: a generator was used up by the check ("give at least one job").
    jobs = items_of("jobs", jobs, Job)
    _check_types(cluster=cluster)
    cores = [_job_core(i, j) for i, j in enumerate(jobs)]
    parsed = [s for s, _ in cores]
    iterations, seed, max_flows, failures = _check_run(iterations, seed, max_flows, failures)
    raws = _core.simulate_jobs(
        [(j.name, w, j.workers, s.core, None if j.hosts is None else list(j.hosts)) for j, (s, w) in zip(jobs, cores)],
        cluster.workers,
        cluster.bandwidth,
        cluster.latency,
        cluster.core,
        network=cluster.network,
        iterations=iterations,
        seed=int(seed) % 2**64,
        per_message_overhead=cluster.per_message_overhead,
        copy_bandwidth=cluster.copy_bandwidth,
        placement=cluster.rank_placement,
        failures=[(f.target, f.at_s, f.rate) for f in failures] or None,
        max_flows=max_flows,
        allow_failures_after_end=allow_failures_after_end,
    )
    return [_result(raw, j.workload, j.workers, cluster.bandwidth, s.spec) for raw, j, s in zip(raws, jobs, parsed)]
