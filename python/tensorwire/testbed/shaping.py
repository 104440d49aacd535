"""Shaping a veth like a switch port: HTB at the port rate on its egress, shared fairly.

The testbed shapes each host's link in both directions: the host-side veth's egress is the
host's uplink (host to switch) and the switch-side veth's egress is its downlink (switch to
host), so many-to-one traffic queues at the receiver's port, as in a real switch.

Sharing. A single FIFO behind the rate limit lets competing TCP flows share very unevenly
(five-to-one incast at 1 Gbit/s measured 390/39/503/39 Mbit/s). The simulator's flow model
shares max-min fairly, so each port gets one HTB class per peer host (by source address on
a downlink, by destination address on an uplink) under the port's class. The peer classes
borrow everything from the port's class, and HTB's deficit round robin shares it evenly
among the peers that have data (equal quanta). The kernel here has HTB and TBF but no fq, sfq or fq_codel.

HTB counts each packet's length including its 14-byte Ethernet header (not preamble, FCS
or inter-frame gap), so TCP carries at most 1448/1514 = 95.6% of the shaped rate as
payload with a 1500-byte MTU; :mod:`tensorwire.testbed.calibrate` measures what it really
carries.
"""

from __future__ import annotations

import subprocess
from typing import Optional, Sequence

from tensorwire.testbed.netns import CommandFailed

#: Most TCP payload per byte HTB counts with a 1500-byte MTU: 1448 payload bytes (1500 minus
#: 20 IP, 20 TCP and 12 timestamp-option bytes) per 1514-byte frame.
PAYLOAD_EFFICIENCY = 1448 / 1514
#: Token-bucket depth as time at the shaped rate, seconds (when more than two packets).
BURST_S = 0.1e-3
#: Segmentation-offload packet size as time at the shaped rate, seconds (see :func:`gso_bytes`).
GSO_S = 0.5e-3
#: DRR quantum of each class, bytes (at least one GSO packet so a round moves whole packets).
QUANTUM_BYTES = 96 * 1024
#: Above this many peers a port gets one class only (FIFO sharing) to bound the rule count.
MAX_FAIR_PEERS = 64


def gso_bytes(rate_bytes_per_s: float) -> int:
    """Largest segmentation-offload packet for a rate: ``rate x GSO_S`` within [16 KiB, 64 KiB].

    veth passes TCP's offloaded packets whole, and the token bucket must hold two of them,
    so after an idle period a port sends about two packets above its rate. Small packets
    make that burst short; big ones cost less CPU. 64 KiB at 1 Gbit/s (8 hosts need it on
    2 cores: 16 KiB dropped an 8-host ring to 560-810 Mbit/s a flow), 16 KiB at 100 Mbit/s.

    >>> gso_bytes(125e6), gso_bytes(12.5e6)
    (62500, 16384)
    """
    return max(16384, min(65536, int(rate_bytes_per_s * GSO_S)))


def burst_bytes(rate_bytes_per_s: float, packet_bytes: int = 65536) -> int:
    """Token-bucket depth: two packets and a little headroom, or ``rate x BURST_S`` if more."""
    return max(2 * packet_bytes + 2048, int(rate_bytes_per_s * BURST_S))


def port_commands(
    interface: str,
    rate_bytes_per_s: float,
    peers: Sequence[str] = (),
    match: str = "src",
    queue_packets: int = 1000,
    packet_bytes: int = 65536,
) -> list[str]:
    """``tc -batch`` lines that shape ``interface``'s egress to ``rate_bytes_per_s``.

    ``peers`` are the addresses that share the port fairly (one class each, matched on the
    IPv4 ``match`` address, ``src`` or ``dst``); anything else (ARP) goes to a default class.
    """
    if match not in ("src", "dst"):
        raise ValueError(f"match must be src or dst, not {match!r}")
    bits = int(round(rate_bytes_per_s * 8))
    burst = burst_bytes(rate_bytes_per_s, packet_bytes)
    fair = list(peers) if 0 < len(peers) <= MAX_FAIR_PEERS else []
    quantum = max(QUANTUM_BYTES, packet_bytes)
    # The port's class holds the rate and the only real token bucket. The per-peer classes
    # get a token rate of 0.1% and a one-frame bucket, so they (almost) always borrow from
    # the port: HTB lets a class with tokens of its own send without asking its parent, so
    # per-peer buckets would add up to a burst of (peers x burst) after every idle period.
    trickle = max(8000, bits // 1000)
    child = f"rate {trickle}bit ceil {bits}bit burst 1600b cburst {burst}b quantum {quantum}"
    lines = [
        f"qdisc replace dev {interface} root handle 1: htb default 2",
        f"class replace dev {interface} parent 1: classid 1:1 htb rate {bits}bit ceil {bits}bit burst {burst}b cburst {burst}b quantum {quantum}",
        f"class replace dev {interface} parent 1:1 classid 1:2 htb {child}",
        f"qdisc replace dev {interface} parent 1:2 handle 2: pfifo limit {queue_packets}",
    ]
    for i, addr in enumerate(fair):
        cid = 16 + i
        lines += [
            f"class replace dev {interface} parent 1:1 classid 1:{cid:x} htb {child}",
            f"qdisc replace dev {interface} parent 1:{cid:x} handle {cid:x}: pfifo limit {queue_packets}",
            f"filter add dev {interface} parent 1: protocol ip prio 1 u32 match ip {match} {addr}/32 flowid 1:{cid:x}",
        ]
    return lines


def apply(namespace: str, lines: Sequence[str]) -> None:
    """Runs ``tc`` lines in one batch inside ``namespace``."""
    run_batch(["tc", "-n", namespace], lines)


def run_batch(prefix: Sequence[str], lines: Sequence[str], timeout_s: float = 60.0) -> None:
    """Runs ``ip``/``tc`` lines in one batch (``-batch -``): one process, not one per line."""
    done = subprocess.run(
        [*prefix, "-batch", "-"], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=timeout_s
    )
    if done.returncode != 0:
        err = done.stderr.strip().splitlines()
        raise CommandFailed(f"{' '.join(prefix)} -batch: {err[0] if err else 'failed'}")


def shaped_rate_bits(namespace: str, interface: str) -> Optional[int]:
    """The port rate configured on ``interface`` (HTB class 1:1), bit/s, or ``None``."""
    import json

    out = subprocess.run(
        ["tc", "-n", namespace, "-j", "class", "show", "dev", interface], capture_output=True, text=True
    ).stdout
    try:
        classes = json.loads(out or "[]")
    except json.JSONDecodeError:
        return None
    for c in classes:
        if c.get("class") == "htb" and c.get("handle") == "1:1":
            return int(c.get("rate", 0))
    return None
