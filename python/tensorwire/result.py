"""Result: what one simulation predicts."""

from __future__ import annotations

import heapq
import math
import re
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from tensorwire._core import InputError
from tensorwire.limits import is_int, wrong_type
from tensorwire.units import counted, short_repr


@dataclass(frozen=True, eq=False)
class Result:
    """Steady-state metrics of a simulated job (seconds, samples/s, fractions).

    ``throughput_samples_per_s`` and ``scaling_factor`` are NaN where the workload has no
    compute (a collective microbenchmark, ``compute_time_s`` 0): it has no samples to count and
    no compute to scale against (:data:`SAMPLE_METRICS`; :meth:`to_dict` gives None for them,
    as JSON has no NaN). Results compare by value (such NaNs compare equal) but are not
    hashable: they hold mappings and dicts (links, spans, NCCL's choices). ``repr`` gives the
    links, spans, completions and choices as their counts.

    With a partial collective (``partial=solo|majority``) fast workers run ahead, so
    ``iteration_time_s`` is the mean of each worker's own time per iteration, the
    throughput is the sum of the workers' rates, and ``active_processes`` is the mean number
    of active processes per round, NAP (the initiator and the ranks ready before it, seed
    002; ``nap`` is its deprecated old name, and its key in :meth:`to_dict`).

    ``scaling_factor`` is T_n / (n T_1) as seed 001 defines it: the job's throughput over
    n times the throughput of one worker that only computes the workload (its nominal
    compute / iteration where every worker waits for every other). Stragglers and compute
    interference lower it, as they lower a measured scaling factor; it passes 1 only where
    stragglers' multipliers below 1 make workers faster than the workload's compute (or, under
    partial collectives, fast workers' rates add up past n of them). ``compute_time_s`` is the
    compute an iteration waits for (with stragglers the slowest worker's, averaged over the
    measured iterations; every worker's own under partial collectives);
    ``compute_interference_s`` the compute time rank 0 lost per iteration to communication
    kernels running beside it (``compute_slowdown`` of the strategies timed by NCCL's model, 0
    otherwise); ``gradient_bytes_per_worker`` the gradient bytes each worker reduces per
    iteration, in the element type they are reduced in (``reduce_dtype``, else
    ``param_dtype``), before compression; ``exposed_comm_s`` the time per iteration covered by neither (iteration -
    compute - interference: communication that did not overlap, and waits for other workers);
    ``comm_time_s`` the time rank 0 had any message in flight; ``background_stopped_s`` (jobs
    of :func:`tensorwire.simulate_jobs` only) when another job, at least 64 times faster, stopped
    running as background load before this job's measured iterations ended, s (this job then
    saw less load than that job running on would have put on the fabric: its slowdown is a
    lower bound), None where every other job ran all along; ``sent_bytes_per_worker`` the
    bytes rank 0's host put on the wire per iteration (a multicast message counts once; a
    co-located server's copy to its own host is not on the wire; a tree's root, rank 0, sends
    more than the mean); ``simulated_ranks`` how many ranks' network part was simulated (1
    or a few when folded, every worker otherwise). ``link_utilization`` maps each directed
    link (``h0->sw``) to its utilisation over the steady-state window: the bytes it carried
    over the bytes it could have carried (its mean rate over its capacity, not the share of
    time it had a message in flight); it is empty when the collectives were timed in closed
    form by NCCL's model (``nccl``, ``ddp``, sharded strategies with ``comm=nccl``), which
    puts no flow on any link. It is read-only (a ``types.MappingProxyType`` over a copy of
    the mapping given: writing to it changed :attr:`max_link_utilization` of a frozen
    result); :meth:`to_dict` gives a plain dict.

    ``nccl_choices``: for collectives timed by NCCL's model, what NCCL chose for those rank
    0 started in one iteration (the last; a microbenchmark: its collective), one dict per
    choice (``collective``, ``algorithm``, ``protocol``, ``channels``, ``peer_channels``:
    for an all-to-all, which NCCL runs as point-to-point sends, the channels each peer's send
    is striped over, else None; ``count``, ``bytes``: the buffers' sizes together;
    ``seconds``: their times together, each alone on its links; ``fastest_seconds``: the same
    had each run the algorithm and protocol tensorwire times fastest for its size, where
    NCCL's tuning model may choose another (:func:`tensorwire.calibrate.nccl_predict` gives
    NCCL's choice; docs/collectives.md, "NCCL's choice and the fastest");
    ``faster_algorithm``, ``faster_protocol``: the pair saving the most of that difference, or
    None where NCCL's choice is the fastest), the most used first; empty otherwise. The timeline then holds each rank's collectives as spans of
    kind ``collective`` (with ``nccl``: the algorithm, protocol, channels and channels per
    peer).
    """

    model: str
    workers: int
    bandwidth: float
    strategy: str
    iteration_time_s: float
    throughput_samples_per_s: float
    scaling_factor: float
    compute_time_s: float
    comm_time_s: float
    exposed_comm_s: float
    link_utilization: Mapping[str, float]
    completions_s: tuple[float, ...]
    network_model: str
    folded: bool
    events: int
    flows: int
    timeline: tuple[dict[str, Any], ...] = ()
    active_processes: Optional[float] = None
    sent_bytes_per_worker: float = 0.0
    simulated_ranks: int = 0
    failures_applied: int = 0
    nccl_choices: tuple[dict[str, Any], ...] = ()
    compute_interference_s: float = 0.0
    gradient_bytes_per_worker: float = 0.0
    background_stopped_s: Optional[float] = None

    #: Not hashable (the mappings and dicts it holds are not; ``hash()`` raised "unhashable
    #: type: 'mappingproxy'" from a frozen dataclass's generated hash).
    __hash__ = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        object.__setattr__(self, "link_utilization", MappingProxyType(dict(self.link_utilization)))

    def __eq__(self, other: object) -> bool:
        """Every field equal, as a dataclass compares, with a NaN sample metric (a workload
        without compute) equal to another (NaN is not equal to itself): compared as
        :func:`without_sample_metrics` gives them."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        return without_sample_metrics(dict(self.__dict__)) == without_sample_metrics(dict(other.__dict__))

    def __repr__(self) -> str:
        """The fields, those that grow with the fabric and the run as their counts
        (``timeline=<1234 spans>``): a result of 1,024 workers printed 70 kB."""
        return short_repr(
            self,
            {"link_utilization": "link", "completions_s": "completion", "timeline": "span", "nccl_choices": "choice"},
        )

    def __getstate__(self) -> dict[str, Any]:
        """The fields, :attr:`link_utilization` as a plain dict (a mapping proxy does not pickle)."""
        return {**self.__dict__, "link_utilization": dict(self.link_utilization)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "link_utilization", MappingProxyType(dict(state["link_utilization"])))

    @property
    def links_measured(self) -> bool:
        """Whether links carried flows whose utilisation was measured (False for
        collectives timed in closed form, which put none on the links)."""
        return bool(self.link_utilization)

    @property
    def nap(self) -> Optional[float]:
        """Deprecated name of :attr:`active_processes` (NAP, "number of active processes")."""
        return self.active_processes

    @property
    def max_link_utilization(self) -> Optional[float]:
        """Busiest link's utilisation; None where no link was simulated (collectives timed by
        NCCL's model put no flows on links: not an idle network)."""
        return max(self.link_utilization.values(), default=None)

    def busiest_links(self, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` busiest links, busiest first, ties in natural order of their names (h2
        before h10). ``k`` is an integer >= 0 (0: none; more than there are: all of them);
        another value is an :class:`InputError` naming ``k``."""
        if not is_int(k) or k < 0:
            raise InputError("k", f"{k!r:.80} is not a count of links; give an integer >= 0")
        if k == 0:
            return []
        # The k-th largest utilisation first (a fabric can have millions of links, and the
        # natural key of every name cost 6 s of a 7 s command on 0.5 million); only the links
        # at or above it are ordered by name.
        cut = heapq.nlargest(k, self.link_utilization.values())[-1] if self.link_utilization else 0.0
        top = [kv for kv in self.link_utilization.items() if kv[1] >= cut]
        return heapq.nsmallest(k, top, key=lambda kv: (-kv[1], _natural(kv[0])))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict, as ``--json`` prints it: :attr:`active_processes` under its
        old key ``nap`` (kept so that JSON read by existing tools does not change), and
        :data:`SAMPLE_METRICS` None for a workload without compute (a collective
        microbenchmark: :func:`without_sample_metrics`)."""
        d = {("nap" if f.name == "active_processes" else f.name): _copied(getattr(self, f.name)) for f in fields(self)}
        d["completions_s"] = list(self.completions_s)
        d["max_link_utilization"] = self.max_link_utilization
        d["timeline"] = list(self.timeline)
        d["nccl_choices"] = list(self.nccl_choices)
        return without_sample_metrics(d)


#: The result's keys that count training samples; None (null, an empty CSV cell) for a
#: workload without compute, a collective microbenchmark, which has no samples to count and
#: no compute to scale against (it said 10,502 samples/s and a scaling factor of 0).
SAMPLE_METRICS = ("throughput_samples_per_s", "scaling_factor")


def without_sample_metrics(row: dict[str, Any], blank: Optional[float] = None) -> dict[str, Any]:
    """``row`` (a sweep row, a result's JSON dict, or a :class:`Result`'s fields as it is
    built) with :data:`SAMPLE_METRICS` set to ``blank`` where its workload has no compute
    (``compute_time_s`` 0): None in JSON and sweep rows, NaN on a :class:`Result`, whose
    attributes are floats. Returns ``row``.

    >>> without_sample_metrics({"compute_time_s": 0.0, "throughput_samples_per_s": 10502.0, "scaling_factor": 0.0})
    {'compute_time_s': 0.0, 'throughput_samples_per_s': None, 'scaling_factor': None}
    >>> without_sample_metrics({"compute_time_s": 0.1, "throughput_samples_per_s": 320.0, "scaling_factor": 1.0})
    {'compute_time_s': 0.1, 'throughput_samples_per_s': 320.0, 'scaling_factor': 1.0}
    """
    if row["compute_time_s"] == 0:
        row.update(dict.fromkeys(SAMPLE_METRICS, blank))
    return row


def speedup(base: Union[Result, Mapping[str, Any]], run: Union[Result, Mapping[str, Any]]) -> float:
    """How many times faster ``run`` is than ``base`` (each a :class:`Result`, or a sweep row
    or a result's JSON with ``iteration_time_s`` and ``throughput_samples_per_s``): the ratio
    of their samples per second where both have samples, else of their iteration times (a
    microbenchmark). Samples first: under a partial collective a job's rate is the sum of its
    workers' own rates, not n x batch over the mean pace, and it is the rate a speedup
    promises (ResNet-50 on 4 workers, one 3x slow, `ring:partial=solo` over `ps`: 3.49x,
    where the iteration times said 3.31x). A training run against a microbenchmark has no
    common measure: :class:`InputError`.

    >>> speedup({"iteration_time_s": 2.0, "throughput_samples_per_s": 100.0},
    ...         {"iteration_time_s": 1.0, "throughput_samples_per_s": 250.0})
    2.5
    >>> speedup({"iteration_time_s": 2.0, "throughput_samples_per_s": None}, {"iteration_time_s": 0.5, "throughput_samples_per_s": None})
    4.0
    """
    (base_time, base_rate), (run_time, run_rate) = _measure(base, "base"), _measure(run, "run")
    if base_rate is not None and run_rate is not None:
        return run_rate / base_rate
    if (base_rate is None) != (run_rate is None):
        raise InputError("run", "a training run and a microbenchmark (no samples) have no common measure of speed")
    return base_time / run_time


def ranked(results: Iterable[Union[Result, Mapping[str, Any]]]) -> list[Any]:
    """``results`` (:class:`Result` objects, or rows as :func:`speedup` takes them) fastest
    first, by :func:`speedup`'s measure: samples per second where they have samples (highest
    first), else iteration time (shortest first); training runs and microbenchmarks together
    have no common measure (:class:`InputError`)."""
    listed = list(results)
    measured = [_measure(r, f"results[{i}]") for i, r in enumerate(listed)]
    if len({rate is None for _, rate in measured}) > 1:
        raise InputError("results", "training runs and microbenchmarks (no samples) have no common measure of speed")
    order = sorted(range(len(listed)), key=lambda i: -measured[i][1] if measured[i][1] is not None else measured[i][0])  # type: ignore[operator]
    return [listed[i] for i in order]


def _measure(x: Union[Result, Mapping[str, Any]], field: str) -> tuple[float, Optional[float]]:
    """``(iteration time s, samples/s or None)`` of a :class:`Result` or a row, checked: a
    positive finite time (a zero time had divided by zero), samples/s where it has samples."""
    time: Any
    rate: Any
    if isinstance(x, Result):
        time, rate = x.iteration_time_s, x.throughput_samples_per_s
    elif isinstance(x, Mapping):
        if "iteration_time_s" not in x:
            raise InputError(field, "has no iteration_time_s; give a Result, a sweep row or a result's JSON")
        time, rate = x["iteration_time_s"], x.get("throughput_samples_per_s")
    else:
        raise wrong_type(field, "a Result, a sweep row or a result's JSON", x)
    if not (isinstance(time, (int, float)) and not isinstance(time, bool) and math.isfinite(time) and time > 0):
        raise InputError(field, f"iteration_time_s {time!r:.40} is not a positive number of seconds")
    return float(time), (float(rate) if _has_samples(rate) else None)


def _has_samples(rate: Any) -> bool:
    """Whether ``rate`` (samples/s: a float, NaN on a :class:`Result` without compute, None
    in rows and JSON) counts samples, the measure :func:`speedup` and :func:`ranked` take."""
    return isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0


def _copied(value: Any) -> Any:
    """``value`` with its dicts, lists and tuples copied (a mapping proxy as a dict), as
    ``dataclasses.asdict`` copies a field (it cannot copy a mapping proxy): the dict
    :meth:`Result.to_dict` returns shares nothing mutable with the result."""
    if isinstance(value, (dict, MappingProxyType)):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v) for v in value)
    return value


def _natural(name: str) -> tuple[tuple[int, str], ...]:
    """Sort key ordering the numbers in a name by value.

    >>> sorted(["h10->sw", "h2->sw", "h1->sw", "leaf0->spine1"], key=_natural)
    ['h1->sw', 'h2->sw', 'h10->sw', 'leaf0->spine1']
    """
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"(\d+)", name) if p)


#: What a result, a sweep and a report say where a link carried more than it can.
OVERLOAD = (
    "note: {strategies}: a link carries more than its capacity in this time (utilisation above 100%): the "
    "analytical model times every flow as if alone, so this time is too short wherever flows share a link; "
    "--network flow shares them"
)


def over_capacity(max_link_utilization: Optional[float]) -> bool:
    """Whether the busiest link carried more than its capacity allows (only the analytical
    model, which ignores contention, lets that happen; 0.1% above 1 is rounding).

    >>> over_capacity(4.0), over_capacity(1.0005), over_capacity(None)
    (True, False, False)
    """
    return max_link_utilization is not None and max_link_utilization > 1.001


def simulated_workers(spans: Iterable[Mapping[str, Any]]) -> list[int]:
    """The workers that own spans of a timeline (compute, or a flow or collective of their
    own): those the run simulated. Every worker of an unfolded run; the ranks standing for
    the others (worker 0 alone, for a symmetric collective) of a folded one.

    >>> simulated_workers([{"worker": 4}, {"worker": None}, {"worker": 0}, {"worker": 4}])
    [0, 4]
    """
    return sorted({int(s["worker"]) for s in spans if s.get("worker") is not None})


def ranks_in_words(ranks: Sequence[int]) -> str:
    """Workers by rank, as a trace or a report names those it shows: ``worker 0``,
    ``workers 0-7`` (consecutive), ``workers 0, 4``.

    >>> ranks_in_words([0]), ranks_in_words(range(8)), ranks_in_words([0, 4])
    ('worker 0', 'workers 0-7', 'workers 0, 4')
    """
    if len(ranks) == 1:
        return f"worker {ranks[0]}"
    if list(ranks) == list(range(ranks[0], ranks[-1] + 1)):
        return f"workers {ranks[0]}-{ranks[-1]}"
    return f"workers {', '.join(map(str, ranks))}"


def folded_shown(shown: Sequence[int], simulated: int, workers: int) -> str:
    """What a trace or timeline of a folded run shows: the ranks ``shown`` of the
    ``simulated`` ones the run kept, which stand for all ``workers``.

    >>> folded_shown([0], 1, 256)
    'worker 0 of 256: the run folded ranks that behave alike and simulated only this one'
    >>> folded_shown(range(8), 12, 256)
    'workers 0-7 of 256: the run folded ranks that behave alike and simulated 12'
    """
    text = f"{ranks_in_words(shown)} of {workers}: the run folded ranks that behave alike and simulated"
    if len(shown) < simulated:
        return f"{text} {simulated}"
    return f"{text} only {'this one' if len(shown) == 1 else 'these'}"


#: NCCL_ALGO's and NCCL_PROTO's spelling of the ``nccl`` strategy's names (NCCL reads
#: them in any case; these are its documentation's).
NCCL_NAMES = {
    "tree": "Tree",
    "ring": "Ring",
    "collnetdirect": "CollnetDirect",
    "collnetchain": "CollnetChain",
    "nvls": "NVLS",
    "nvlstree": "NVLSTree",
    "pat": "PAT",
    "ll": "LL",
    "ll128": "LL128",
    "simple": "Simple",
}


def nccl_settings(algorithm: str, protocol: str) -> str:
    """The environment that makes NCCL run ``algorithm`` with ``protocol``.

    >>> nccl_settings("nvlstree", "simple")
    'NCCL_ALGO=NVLSTree NCCL_PROTO=Simple'
    """
    return f"NCCL_ALGO={NCCL_NAMES[algorithm]} NCCL_PROTO={NCCL_NAMES[protocol]}"


def nccl_channels_text(choice: Mapping[str, Any]) -> str:
    """The channels of one of NCCL's choices as the CLI and the timeline say them: an
    all-to-all's point-to-point channels with the channels each peer's send is striped over.

    >>> nccl_channels_text({"channels": 24, "peer_channels": None})
    '24 channels'
    >>> nccl_channels_text({"channels": 32, "peer_channels": 4})
    '32 channels, 4 per peer'
    """
    text = counted(int(choice["channels"]), "channel")
    per_peer = choice.get("peer_channels")
    return text if per_peer is None else f"{text}, {per_peer} per peer"
