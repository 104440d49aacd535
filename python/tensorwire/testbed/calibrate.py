"""Calibration: what the testbed's transport really delivers, as simulator parameters.

A short microbenchmark on a running testbed measures

- the **latency** of the network path: the median round-trip time of one-byte TCP
  messages between raw sockets, divided by four (two hops each way);
- the **payload efficiency**: Gloo ``send`` of a large message (0.15 s at the shaped
  rate) from host 0 to host 1, timed to the receiver's one-byte acknowledgement, minus
  one small-message time, fastest of several; efficiency = bytes / time / shaped rate;
- the **ring efficiency**: the same message sent by each of the all-reduce's hosts to the
  next at once (every uplink and downlink busy, as in a ring's steps), timed to the last
  arrival: on 8 emulated hosts the machine forwards 8 flows and delivers a few percent
  less than one flow gets;
- the **per-message overhead of point-to-point messages**: half the median round-trip
  time of a 4-byte Gloo ``send``/``recv`` ping-pong, minus the two hops' latency (what
  Gloo, its threads and Python add to each message);
- the **per-step overhead of all-reduce**: Gloo ``all_reduce`` over the workers at
  sizes from 2N x 16 floats upwards; :func:`step_overhead` takes it from the sizes whose
  segments are too small to hide it (Gloo keeps two segments in flight, so a ring step
  costs about latency + max(overhead, segment transfer): the simulator's
  ``segments=pipelined``). A free least-squares line ``t = a + b x bytes`` through all
  sizes gives the all-reduce's own efficiency from ``b``, reported as a cross-check.

:meth:`Calibration.cluster` turns these into a :class:`tensorwire.Cluster`:
``bandwidth`` = efficiency (the ring's for all-reduce) x shaped rate, ``latency`` per hop (plus the testbed's
emulated delay) and ``per_message_overhead`` for the strategy's kind of messages;
:meth:`Calibration.spec` adds what the strategy needs to describe Gloo's transport
(``segments=pipelined`` for all-reduce).
"""

from __future__ import annotations

import datetime
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Sequence

from tensorwire._core import InputError
from tensorwire.cluster import Cluster
from tensorwire.strategy import with_options
from tensorwire.testbed.testbed import Testbed

#: Strategies whose messages are point-to-point (the others are all-reduce steps).
P2P_STRATEGIES = ("ps",)


def _point_to_point(strategy: str) -> bool:
    """Whether ``strategy`` (a spec) sends point-to-point messages rather than all-reduce steps."""
    return strategy.split(":", 1)[0] in P2P_STRATEGIES


@dataclass(frozen=True)
class Calibration:
    """Measured transport parameters of one testbed (seconds, bytes/s, fractions)."""

    hosts: int
    #: Hosts the all-reduce ran over.
    allreduce_workers: int
    rate_bytes_per_s: float
    delay_s: float
    #: Achieved payload rate of one large Gloo message over the shaped rate.
    payload_efficiency: float
    #: One hop of the network path (raw TCP round trip / 4), s.
    latency_s: float
    #: Gloo point-to-point cost per message beyond the path's latency, s.
    p2p_overhead_s: float
    #: Gloo all-reduce cost per ring step beyond the path's latency, s (0 when hosts < 2).
    allreduce_step_overhead_s: float
    #: 2(N-1)/N over (slope x shaped rate) of the all-reduce fit: the all-reduce's own efficiency.
    allreduce_efficiency: float
    #: Slope of the all-reduce fit, s/byte (0 when hosts < 2).
    allreduce_s_per_byte: float = 0.0
    #: Payload rate over the shaped rate when every worker sends to the next at once (a
    #: ring's steps); None: not measured (then ``payload_efficiency`` stands for it).
    ring_efficiency: Optional[float] = None
    #: The raw measurements (medians, seconds) behind the numbers.
    samples: dict[str, Any] = field(default_factory=dict)

    @property
    def effective_rate_bytes_per_s(self) -> float:
        """Payload rate a host link really carries, bytes/s."""
        return self.payload_efficiency * self.rate_bytes_per_s

    def bandwidth(self, strategy: str) -> float:
        """Payload rate of a host link for ``strategy``'s traffic, bytes/s: a ring's
        (every link busy at once: the machine forwards N flows) for all-reduce, one
        message's for point-to-point strategies.

        >>> c = Calibration(2, 2, 1e8, 0.0, 0.96, 1e-5, 0.0, 0.0, 1.0, ring_efficiency=0.9)
        >>> c.bandwidth("ring"), c.bandwidth("ps")
        (90000000.0, 96000000.0)
        """
        if _point_to_point(strategy) or self.ring_efficiency is None:
            return self.effective_rate_bytes_per_s
        return self.ring_efficiency * self.rate_bytes_per_s

    def per_message_overhead(self, strategy: str) -> float:
        """Overhead per message for ``strategy``'s messages: point-to-point or all-reduce steps."""
        return self.p2p_overhead_s if _point_to_point(strategy) else self.allreduce_step_overhead_s

    @staticmethod
    def spec(strategy: str) -> str:
        """``strategy`` as the simulator should run it on this transport: all-reduce steps
        with ``segments=pipelined`` (the overhead :func:`step_overhead` measured hides
        behind a step's transfer, as in Gloo's ring); point-to-point strategies unchanged.

        >>> Calibration.spec("ring"), Calibration.spec("ring:partition=1MiB"), Calibration.spec("ps")
        ('ring:segments=pipelined', 'ring:partition=1MiB,segments=pipelined', 'ps')
        """
        if _point_to_point(strategy) or "segments=" in strategy:
            return strategy
        return with_options(strategy, "segments=pipelined")

    def cluster(self, workers: int, strategy: str = "ring", *, network: str = "flow") -> Cluster:
        """The simulator's view of this testbed for ``workers`` workers under ``strategy``."""
        return Cluster(
            workers,
            bandwidth=self.bandwidth(strategy),
            latency=self.latency_s + self.delay_s,
            network=network,
            per_message_overhead=self.per_message_overhead(strategy),
        )

    def with_probe(self, probe: dict[str, Any]) -> Calibration:
        """This calibration with the overheads a job's own probe measured
        (:mod:`tensorwire.testbed.jobs.probe`); the rates and the latency stay."""
        p2p = self.p2p_overhead_s
        if "p2p_rtt_s" in probe:
            p2p = max(0.0, probe["p2p_rtt_s"] / 2 - 2 * self.latency_s)
        step = self.allreduce_step_overhead_s
        if probe.get("allreduce_s") and probe.get("allreduce_workers", 0) > 1:
            times = {int(size): t for size, t in probe["allreduce_s"].items()}
            step = step_overhead(times, int(probe["allreduce_workers"]), self.bandwidth("ring"), self.latency_s)
        samples = {**self.samples, "probe": dict(probe)}
        return replace(self, p2p_overhead_s=p2p, allreduce_step_overhead_s=step, samples=samples)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["effective_rate_bytes_per_s"] = self.effective_rate_bytes_per_s
        return d


def calibrate(
    testbed: Testbed, *, workers: Optional[int] = None, quick: bool = False, timeout_s: float = 120.0
) -> Calibration:
    """Runs the microbenchmark on ``testbed`` (at least 2 hosts) and returns its calibration.

    The all-reduce runs over the first ``workers`` hosts (default: all), as a ring job of
    that many workers would. Takes about 5 s plus the processes' start (``quick``: fewer
    repetitions).
    """
    from tensorwire.testbed.jobs.launcher import launch_ranks, require_torch

    if testbed.hosts < 2:
        raise InputError("hosts", "calibration needs a testbed of at least 2 hosts")
    group = testbed.hosts if workers is None else workers
    if isinstance(group, bool) or not isinstance(group, int) or not 2 <= group <= testbed.hosts:
        raise InputError("workers", f"{workers!r} must be an integer from 2 to {testbed.hosts}")
    require_torch()
    rtt = statistics.median(testbed.measure_rtt(0, 1, count=100 if quick else 300) for _ in range(1 if quick else 3))
    latency = rtt / 4
    out_dir = Path(tempfile.mkdtemp(prefix=f"tensorwire-calibrate-{testbed.run_id}-"))
    try:
        port = random.randint(20000, 29999)
        spec = {
            "master_addr": testbed.address(0),
            "master_port": port,
            "world": testbed.hosts,
            "group": group,
            "out": str(out_dir / "result.json"),
            "large_bytes": _round4(max(256 * 1024, testbed.rate * 0.15)),
            "large_reps": 3 if quick else 5,
            "ping_reps": 50 if quick else 150,
            "allreduce_sizes": _allreduce_sizes(group, testbed.rate),
            "allreduce_budget_s": 0.4 if quick else 1.0,
            "timeout_s": timeout_s,
        }
        spec_path = out_dir / "spec.json"
        spec_path.write_text(json.dumps(spec))
        launch_ranks(
            testbed,
            "tensorwire.testbed.calibrate",
            spec_path,
            testbed.hosts,
            out_dir,
            timeout_s,
            env={"MASTER_ADDR": testbed.address(0), "MASTER_PORT": str(port)},
        )
        raw = json.loads((out_dir / "result.json").read_text())
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    return _derive(testbed, group, latency, rtt, raw)


def _round4(x: float) -> int:
    return int(x) // 4 * 4


def _allreduce_sizes(hosts: int, rate: float) -> list[int]:
    """Small sizes (every ring segment non-empty: at least 2N floats) up to ~20 ms of transfer."""
    smallest = 2 * hosts * 4 * 16
    top = max(smallest * 4, _round4(rate * 0.02))
    sizes = [smallest]
    while sizes[-1] * 4 <= top:
        sizes.append(sizes[-1] * 4)
    return sizes


def step_overhead(times: dict[int, float], n: int, rate: float, latency: float) -> float:
    """Per-step overhead of an N-rank ring all-reduce from its times at several sizes, s.

    The simulator with ``segments=pipelined`` costs an all-reduce of S bytes as
    ``2(N-1) (2 latency + max(o, S / (N rate)))``: Gloo keeps two segments in flight, so a
    step's overhead hides behind the transfer of a large segment (measured on 8 hosts at
    400 Mbit/s: 5.8 ms for 1 kB, 6.4 ms for 159 kB, 24.5 ms for 635 kB, where overhead and
    transfer in series would give 5.0, 10.7 and 28.0 ms). The smallest size is bound by
    the overhead; so is every size whose segment transfer is shorter than the smallest
    size's per-step time (minus latency), and ``o`` is the mean of their per-step times
    minus latency. Larger sizes are bound by their transfer and say nothing about ``o``.

    >>> round(step_overhead({1024: 0.0056, 65536: 0.0058, 1 << 20: 0.03}, 8, 50e6, 15e-6) * 1e6)  # 1 MiB: data-bound
    377
    """
    steps = 2 * (n - 1)
    sizes = sorted(times)
    if not sizes:
        return 0.0
    per_step = {size: times[size] / steps - 2 * latency for size in sizes}
    limit = per_step[sizes[0]]
    bound = [per_step[size] for size in sizes if size / n / rate <= limit]
    return max(0.0, statistics.fmean(bound))


def _fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares ``y = a + b x``; returns ``(a, b)``."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    return my - b * mx, b


def _derive(testbed: Testbed, n: int, latency: float, rtt: float, raw: dict[str, Any]) -> Calibration:
    one_way = raw["ping_rtt_s"] / 2
    large = raw["large_s"] - one_way
    efficiency = raw["large_bytes"] / large / testbed.rate if large > 0 else 1.0
    ring = raw.get("ring_s", 0.0) - one_way
    ring_efficiency = min(1.0, raw["large_bytes"] / ring / testbed.rate) if ring > 0 else None
    sizes = [float(s) for s in raw["allreduce"]]
    times = [raw["allreduce"][s] for s in raw["allreduce"]]
    a, b = _fit_line(sizes, times)
    steps = 2 * (n - 1)
    ar_eff = (steps / n) / (b * testbed.rate) if b > 0 else 1.0
    cal = Calibration(
        hosts=testbed.hosts,
        allreduce_workers=n,
        rate_bytes_per_s=testbed.rate,
        delay_s=testbed.delay,
        payload_efficiency=min(1.0, efficiency),
        latency_s=latency,
        p2p_overhead_s=max(0.0, one_way - 2 * latency),
        allreduce_step_overhead_s=0.0,  # fitted below, at the ring's rate
        allreduce_efficiency=ar_eff,
        allreduce_s_per_byte=b,
        ring_efficiency=ring_efficiency,
        samples={
            "tcp_rtt_s": rtt,
            "gloo_ping_rtt_s": raw["ping_rtt_s"],
            "large_bytes": raw["large_bytes"],
            "large_s": raw["large_s"],
            "ring_s": raw.get("ring_s"),
            "allreduce_s": raw["allreduce"],
            "allreduce_fit": {"intercept_s": a, "slope_s_per_byte": b},
        },
    )
    overhead = step_overhead({int(x): t for x, t in zip(sizes, times)}, n, cal.bandwidth("ring"), latency)
    return replace(cal, allreduce_step_overhead_s=overhead)


# -- the benchmark process ------------------------------------------------------------------
def _bench(spec: dict[str, Any], rank: int) -> None:
    import torch
    import torch.distributed as dist

    from tensorwire.testbed.jobs.compute import tighten_timer_slack
    from tensorwire.testbed.jobs.probe import ping_pong_rtt_s

    torch.set_num_threads(1)
    tighten_timer_slack()
    world = spec["world"]
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://{spec['master_addr']}:{spec['master_port']}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=spec["timeout_s"]),
    )
    result: dict[str, Any] = {}
    try:
        # Point-to-point ping-pong of 4 bytes between ranks 0 and 1.
        rtt = ping_pong_rtt_s(rank, 1, spec["ping_reps"], warmup=10, barrier_every=50)
        if rtt is not None:
            result["ping_rtt_s"] = rtt
        # One large message 0 -> 1, acknowledged with 4 bytes.
        tiny = torch.zeros(1)
        big = torch.zeros(spec["large_bytes"] // 4)
        larges = []
        for i in range(spec["large_reps"] + 1):
            dist.barrier()
            t = time.perf_counter()
            if rank == 0:
                dist.send(big, 1)
                dist.recv(tiny, 1)
            elif rank == 1:
                dist.recv(big, 0)
                dist.send(tiny, 0)
            if i > 0:
                larges.append(time.perf_counter() - t)
        if rank == 0:
            result["large_bytes"] = spec["large_bytes"]
            result["large_s"] = min(larges)  # the link's capability: noise only slows it
        # The same message from each of the first `group` ranks to the next at once, as in a
        # ring's steps (every host's uplink and downlink busy): time to the last arrival.
        group = spec["group"]
        if group > 1:
            inbox = torch.zeros_like(big)
            rings = []
            for i in range(spec["large_reps"] + 1):
                dist.barrier()
                t = time.perf_counter()
                if rank < group:
                    for work in (dist.irecv(inbox, (rank - 1) % group), dist.isend(big, (rank + 1) % group)):
                        if work is not None:
                            work.wait()
                elapsed = torch.tensor([time.perf_counter() - t if rank < group else 0.0])
                dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
                if i > 0:
                    rings.append(float(elapsed.item()))
            if rank == 0:
                result["ring_s"] = min(rings)
        # All-reduce over the first `group` ranks at several sizes.
        made = dist.new_group(list(range(group))) if group < world else None  # every rank must call it
        pg = made if isinstance(made, dist.ProcessGroup) else None
        ar: dict[str, float] = {}
        for size in spec["allreduce_sizes"] if rank < group else []:
            buf = torch.zeros(size // 4)
            dist.all_reduce(buf, group=pg)
            dist.all_reduce(buf, group=pg)
            t = time.perf_counter()
            dist.all_reduce(buf, group=pg)
            first = time.perf_counter() - t
            reps = int(max(3, min(200, spec["allreduce_budget_s"] / max(first, 1e-4))))
            reps_t = torch.tensor([float(reps)])
            dist.broadcast(reps_t, 0, group=pg)  # every rank runs the same count
            samples = []
            for _ in range(int(reps_t.item())):
                t = time.perf_counter()
                dist.all_reduce(buf, group=pg)
                samples.append(time.perf_counter() - t)
            ar[str(size)] = statistics.median(samples)
        if rank == 0:
            result["allreduce"] = ar
            Path(spec["out"]).write_text(json.dumps(result))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m tensorwire.testbed.calibrate SPEC RANK`` (started by :func:`calibrate`)."""
    import warnings

    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    args = list(sys.argv[1:] if argv is None else argv)
    spec = json.loads(Path(args[0]).read_text())
    _bench(spec, int(args[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
