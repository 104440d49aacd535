"""A tiny TCP sender and receiver for measuring achieved throughput between two hosts.

Run inside host namespaces by :meth:`tensorwire.testbed.Testbed.measure_throughput`::

    python -m tensorwire.testbed.tcpbench recv --bind ADDR --port P --timeout-s T
    python -m tensorwire.testbed.tcpbench send --to ADDR --port P --max-bytes B --max-seconds S
    python -m tensorwire.testbed.tcpbench echo --bind ADDR --port P --count N
    python -m tensorwire.testbed.tcpbench ping --to ADDR --port P --count N

Both are bounded: the sender stops after ``--max-bytes`` bytes or ``--max-seconds``
seconds, whichever comes first; the receiver gives up after ``--timeout-s`` seconds. The
receiver prints one JSON object: bytes received and the time from the first to the last
byte (seconds), measured on its side, so that the sender's socket buffer does not count,
and those two instants (``time.perf_counter``, comparable across processes).
``ping`` sends ``--count`` one-byte messages (``TCP_NODELAY``) to an ``echo`` server, one at
a time, and prints the median round-trip time in seconds.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from typing import Optional, Sequence

CHUNK_BYTES = 1 << 20


def receive(bind: str, port: int, timeout_s: float, ready_file: Optional[str] = None) -> dict[str, float]:
    """Accepts one connection and drains it; returns ``bytes``, ``seconds`` and ``rate_bytes_per_s``."""
    with socket.create_server((bind, port), reuse_port=False) as server:
        server.settimeout(timeout_s)
        if ready_file:
            with open(ready_file, "w") as f:
                f.write("ready\n")
        conn, _ = server.accept()
        deadline = time.monotonic() + timeout_s
        buf = bytearray(CHUNK_BYTES)
        received = 0
        first = last = 0.0
        with conn:
            conn.settimeout(timeout_s)
            while time.monotonic() < deadline:
                n = conn.recv_into(buf)
                if n == 0:
                    break
                now = time.perf_counter()
                if received == 0:
                    first = now
                received += n
                last = now
    seconds = last - first
    return {
        "bytes": float(received),
        "seconds": seconds,
        "rate_bytes_per_s": received / seconds if seconds > 0 else 0.0,
        "first_s": first,
        "last_s": last,
    }


def send(to: str, port: int, max_bytes: int, max_seconds: float, connect_timeout_s: float = 10.0) -> dict[str, float]:
    """Sends zeros until ``max_bytes`` or ``max_seconds``; returns ``bytes`` and ``seconds``."""
    deadline = time.monotonic() + connect_timeout_s
    while True:
        try:
            sock = socket.create_connection((to, port), timeout=connect_timeout_s)
            break
        except (ConnectionRefusedError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    payload = memoryview(bytes(CHUNK_BYTES))
    sent = 0
    start = time.perf_counter()
    with sock:
        while sent < max_bytes and time.perf_counter() - start < max_seconds:
            sent += sock.send(payload[: min(CHUNK_BYTES, max_bytes - sent)])
    return {"bytes": float(sent), "seconds": time.perf_counter() - start}


def echo(bind: str, port: int, count: int, timeout_s: float = 30.0) -> dict[str, float]:
    """Echoes ``count`` one-byte messages on one connection."""
    with socket.create_server((bind, port)) as server:
        server.settimeout(timeout_s)
        conn, _ = server.accept()
        with conn:
            conn.settimeout(timeout_s)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for _ in range(count):
                data = conn.recv(1)
                if not data:
                    break
                conn.sendall(data)
    return {"count": float(count)}


def ping(to: str, port: int, count: int, connect_timeout_s: float = 10.0) -> dict[str, float]:
    """Median and 10th/90th percentile round-trip time of ``count`` one-byte messages, seconds."""
    deadline = time.monotonic() + connect_timeout_s
    while True:
        try:
            sock = socket.create_connection((to, port), timeout=connect_timeout_s)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    rtts = []
    with sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(count):
            t = time.perf_counter()
            sock.sendall(b"x")
            sock.recv(1)
            rtts.append(time.perf_counter() - t)
    rtts.sort()
    return {"rtt_s": rtts[len(rtts) // 2], "p10_s": rtts[len(rtts) // 10], "p90_s": rtts[(9 * len(rtts)) // 10]}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensorwire.testbed.tcpbench")
    sub = parser.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--bind", required=True)
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--timeout-s", type=float, default=30.0)
    r.add_argument("--ready-file")
    s = sub.add_parser("send")
    s.add_argument("--to", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--max-bytes", type=int, required=True)
    s.add_argument("--max-seconds", type=float, required=True)
    e = sub.add_parser("echo")
    e.add_argument("--bind", required=True)
    e.add_argument("--port", type=int, required=True)
    e.add_argument("--count", type=int, required=True)
    p = sub.add_parser("ping")
    p.add_argument("--to", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    args = parser.parse_args(argv)
    if args.mode == "recv":
        out = receive(args.bind, args.port, args.timeout_s, args.ready_file)
    elif args.mode == "send":
        out = send(args.to, args.port, args.max_bytes, args.max_seconds)
    elif args.mode == "echo":
        out = echo(args.bind, args.port, args.count)
    else:
        out = ping(args.to, args.port, args.count)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
