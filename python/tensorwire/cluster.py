"""Cluster: the workers, the network between them and the host transport."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.limits import check_int
from tensorwire.units import counted, format_rate, format_seconds, to_rate, to_seconds

Number = Union[int, float]

#: Placements of ranks on hosts (:attr:`Cluster.rank_placement`), as the core names them.
PLACEMENTS: tuple[str, ...] = _core.PLACEMENTS

#: Network models (see :class:`Cluster`), as the core names them.
NETWORK_MODELS: tuple[str, ...] = _core.NETWORK_MODELS


@dataclass(frozen=True, init=False)
class Cluster:
    """Workers on a network.

    ``bandwidth`` is each host link's rate per direction (on ``rail`` each GPU's NIC rate;
    ``None`` there takes the node preset's or ``nic=``, which may not be given together
    with it; other fabrics need it) and ``latency`` the latency of each hop (a
    host-to-host path on a ``star`` has two hops). ``rank_placement`` puts the ranks on
    the hosts: ``packed`` (rank r on host r), ``spread`` (consecutive ranks on different
    leaves, groups or machines first) or ``random`` (seeded by ``simulate``'s seed); any
    other than packed is not folded. ``placement`` is its old name, still accepted as a
    keyword and readable as an attribute (not both given). Numbers are bytes/s and seconds;
    text such as ``"25Gbps"`` or ``"5us"`` is accepted. numpy's numbers are taken too and
    kept as plain ``int``/``float`` (a result's :meth:`~tensorwire.Result.to_dict` stays
    JSON-ready).

    >>> c = Cluster(workers=32, bandwidth="25Gbps")
    >>> c.bandwidth, c.latency
    (3125000000.0, 5e-06)
    >>> Cluster(8, "25Gbps", placement="spread").rank_placement
    'spread'
    """

    workers: int
    bandwidth: float
    latency: float
    topology: str
    network: str
    per_message_overhead: float
    copy_bandwidth: Optional[float]
    rank_placement: str
    #: The topology spec parsed once by the core; every run takes it as is.
    core: _core.Topology = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        workers: int,
        bandwidth: Union[Number, str, None],
        latency: Union[Number, str] = _core.DEFAULT_LATENCY_S,
        topology: str = "star",
        network: str = "flow",
        per_message_overhead: Union[Number, str] = 0.0,
        copy_bandwidth: Union[Number, str, None] = None,
        rank_placement: Optional[str] = None,
        *,
        placement: Optional[str] = None,
    ) -> None:
        # A plain int, also from numpy's integers: stored as given, np.int64 reached the
        # results and their to_dict(), which json.dumps refused.
        workers = check_int("workers", workers, 1, _core.MAX_WORKERS)
        if not isinstance(topology, str):
            raise InputError(
                "topology", f"{topology!r} is not a topology spec such as star or leaf-spine:hosts_per_leaf=8"
            )
        core = _core.Topology(topology)
        if network not in NETWORK_MODELS:
            raise InputError("network", f"{network!r} is not a network model; choose {' or '.join(NETWORK_MODELS)}")
        old = " (placement is its old name)" if placement is not None else ""
        if placement is not None and rank_placement is not None:
            raise InputError("rank_placement", f"given twice{old}")
        ranks = rank_placement if rank_placement is not None else placement if placement is not None else "packed"
        if ranks not in PLACEMENTS:
            raise InputError(
                "rank_placement", f"{ranks!r} is not a placement; choose one of {', '.join(PLACEMENTS)}{old}"
            )
        object.__setattr__(self, "rank_placement", ranks)
        object.__setattr__(self, "workers", workers)
        given = None if bandwidth is None else to_rate(bandwidth, "bandwidth")
        object.__setattr__(self, "bandwidth", core.host_rate(given))
        object.__setattr__(self, "latency", to_seconds(latency, "latency"))
        object.__setattr__(self, "topology", topology)
        object.__setattr__(self, "core", core)
        object.__setattr__(self, "network", network)
        object.__setattr__(self, "per_message_overhead", to_seconds(per_message_overhead, "per_message_overhead"))
        object.__setattr__(
            self, "copy_bandwidth", None if copy_bandwidth is None else to_rate(copy_bandwidth, "copy_bandwidth")
        )

    @property
    def placement(self) -> str:
        """The old name of :attr:`rank_placement` (read-only)."""
        return self.rank_placement

    def __getstate__(self) -> dict[str, Any]:
        """The fields without the parsed topology (a core object does not pickle)."""
        return {k: v for k, v in self.__dict__.items() if k != "core"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "placement" in state:  # pickled before the field was renamed rank_placement
            state = {("rank_placement" if k == "placement" else k): v for k, v in state.items()}
        for k, v in state.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "core", _core.Topology(state["topology"]))

    def describe(self, latency_seen: bool = True) -> str:
        """One line, e.g. ``32 workers, 25 Gbps, 5 us/hop, star`` (``, analytical network``
        added when flows are timed as if alone); without the latency where no run it heads
        sees it (``latency_seen``: :func:`tensorwire.strategy.latency_seen`).

        >>> Cluster(64, None, topology="rail:node=dgx-h100").describe(latency_seen=False)
        '64 GPUs, 400 Gbps NICs, rail:node=dgx-h100'
        """
        model = "" if self.network == "flow" else f", {self.network} network"
        hop = per_hop(self.latency, latency_seen)
        if self.topology.startswith("rail"):
            return f"{counted(self.workers, 'GPU')}, {format_rate(self.bandwidth)} NICs{hop}, {self.topology}{model}"
        return f"{counted(self.workers, 'worker')}, {format_rate(self.bandwidth)}{hop}, {self.topology}{model}"


def per_hop(latency: float, seen: bool = True) -> str:
    """A latency per hop as a one-line description lists it, after the rate; nothing where no
    run described sees it (``seen``: :func:`tensorwire.strategy.latency_seen`; NCCL's model
    takes its own latencies, and a title said ``5 us/hop`` of runs that never used it).

    >>> per_hop(5e-6), per_hop(5e-6, seen=False)
    (', 5 us/hop', '')
    """
    return f", {format_seconds(latency)}/hop" if seen else ""
