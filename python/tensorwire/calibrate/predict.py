"""NCCL's choice and time for one collective, as the core's ``nccl`` model gives them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.limits import check_real, is_int
from tensorwire.units import to_rate

#: The topology options that carry a calibration (``rail`` and ``nodes`` specs): factors on
#: NCCL's intra-node and inter-node bandwidths, latencies added to each single-node and
#: multi-node collective, factors on NCCL's pipeline fill and drain, and the cost of each
#: pipeline step; single-node NVLS's and multi-node NVLS tree's own bandwidth and fill factors.
CALIBRATION_OPTIONS: tuple[str, ...] = (
    "intra_efficiency",
    "inter_efficiency",
    "intra_latency",
    "inter_latency",
    "intra_fill",
    "inter_fill",
    "intra_step",
    "inter_step",
    "nvls_efficiency",
    "nvls_fill",
    "nvlstree_efficiency",
    "nvlstree_fill",
)


#: The ``algo`` NCCL's model reports for all-to-all: point-to-point sends and receives, which
#: NCCL_ALGO, NCCL_PROTO and NCCL_MIN_NCHANNELS do not restrict.
POINT_TO_POINT = "p2p"


@dataclass(frozen=True)
class Prediction:
    """What NCCL runs for one collective and what nccl-tests would print for it: ``seconds``
    for one collective, ``algbw`` = size / seconds and ``busbw`` = algbw x the collective's
    bus factor (bytes/s; NVIDIA/nccl-tests doc/PERFORMANCE.md)."""

    algo: str
    proto: str
    channels: int
    seconds: float
    algbw: float
    busbw: float
    #: All-to-all: the channels each peer's send is striped over (NCCL's ``addP2pToPlan``);
    #: None for a collective algorithm.
    peer_channels: Optional[int] = None


def nccl_predict(
    topology: str,
    gpus: int,
    collective: str,
    size: float,
    *,
    bandwidth: Union[float, str, None] = None,
    transport: Optional[str] = None,
    algo: Optional[str] = None,
    proto: Optional[str] = None,
    channels: Optional[int] = None,
) -> Prediction:
    """NCCL's algorithm, protocol, channels and time for ``collective`` (``allreduce``,
    ``allgather``, ``reducescatter``, ``alltoall``, ``broadcast``) over a buffer of ``size``
    bytes (nccl-tests' "size": the whole buffer, also for all-gather and reduce-scatter) on
    ``gpus`` GPUs of ``topology`` (host links at ``bandwidth`` bytes/s or text such as
    ``"25Gbps"``, as :class:`~tensorwire.Cluster` takes it, or the fabric's own NICs), over
    ``transport`` (``rdma`` or ``tcp``; by default the topology's ``transport=``, else
    ``rdma``). ``algo``, ``proto`` and ``channels`` restrict the choice as NCCL_ALGO,
    NCCL_PROTO and NCCL_MIN_NCHANNELS do. All-to-all has no NCCL_ALGO algorithm: NCCL runs
    it as point-to-point sends and receives, reported as ``p2p``/``simple`` on NCCL's
    point-to-point channels, with the channels each peer's send is striped over
    (``peer_channels``, which grows with the size as NCCL's ``addP2pToPlan`` doubles it).
    ``gpus`` and ``channels`` are integers and ``size`` a
    number (numpy's too; ``True`` is not one GPU nor one byte). Bad input raises
    ``InputError(field, message)`` (the size's field is ``bytes``, as the core names it).

    >>> p = nccl_predict("rail:node=dgx-h100", 8, "allreduce", 1 << 30)
    >>> p.algbw == (1 << 30) / p.seconds and abs(p.busbw / p.algbw - 2 * 7 / 8) < 1e-12
    True
    >>> a2a = nccl_predict("rail:node=dgx-h100", 8, "alltoall", 1 << 30)
    >>> (a2a.algo == POINT_TO_POINT, a2a.proto, a2a.channels, a2a.peer_channels)
    (True, 'simple', 32, 8)
    >>> nccl_predict("rail", 8, "allreduce", 1e6, proto="fast")
    Traceback (most recent call last):
    tensorwire.InputError: strategy.proto: unknown "fast"; choose from ll, ll128, simple (a leading ^ excludes them instead)
    """
    # Booleans were taken as 1 GPU and 1 byte; numpy's integers pass as plain ints. The
    # ranges are the core's (it names gpus, bytes, channels).
    if not is_int(gpus):
        raise InputError("gpus", f"{gpus!r:.80} is not a number of GPUs; give an integer >= 1")
    if channels is not None and not is_int(channels):
        raise InputError("channels", f"{channels!r:.80} is not a number of channels; give an integer >= 1")
    d = _core.nccl_predict(
        topology,
        int(gpus),
        collective,
        # An integer as is: the core names one past a float (2**1100) by its size.
        int(size) if is_int(size) else check_real("bytes", size),
        # Text such as "25Gbps" was a bare TypeError.
        bandwidth=None if bandwidth is None else to_rate(bandwidth, "bandwidth"),
        transport=transport,
        algo=algo,
        proto=proto,
        channels=None if channels is None else int(channels),
    )
    return Prediction(
        algo=str(d["algo"]),
        proto=str(d["proto"]),
        channels=int(d["channels"]),
        seconds=float(d["seconds"]),
        algbw=float(d["algbw"]),
        busbw=float(d["busbw"]),
        peer_channels=None if d["peer_channels"] is None else int(d["peer_channels"]),
    )


def calibration_supported(topology: str = "rail:node=dgx-h100") -> bool:
    """Whether the core's topology specs take the calibration options
    (:data:`CALIBRATION_OPTIONS`) on ``topology``'s builder."""
    try:
        _core.check_topology(
            f"{topology}{',' if ':' in topology else ':'}intra_efficiency=1,inter_latency=0us,intra_fill=1,intra_step=0ns"
        )
    except InputError:
        return False
    return True
