"""``Testbed``: N emulated hosts on one Linux machine, each behind a shaped switch port.

Layout of a run with id ``abcde`` and two hosts::

    netns twabcde-h0            netns twabcde-sw                 netns twabcde-h1
    twabcdeh0 10.77.0.1 ==veth== twabcdep0 -+- bridge twabcdesw -+- twabcdep1 ==veth== twabcdeh1 10.77.0.2
    (HTB: uplink of h0)          (HTB: downlink of h0)             (HTB: downlink of h1)   (HTB: uplink of h1)

Addresses are private (``10.77.0.0/24``) and exist only inside the run's namespaces, which
have no route anywhere else. Two runs use the same addresses in different namespaces, so
they never see each other.

Delay: this kernel has no ``netem``, so the network itself adds none beyond the veth and
bridge path (tens of microseconds). ``delay`` is handed to the processes started with
:meth:`Testbed.env` as ``TENSORWIRE_TESTBED_DELAY_S`` and the testbed's jobs add it in user
space (see :mod:`tensorwire.testbed.jobs`); raw TCP traffic sees no extra delay.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any, Mapping, Optional, Sequence, Union

from tensorwire._core import InputError
from tensorwire.testbed import netns, shaping
from tensorwire.testbed.netns import Names, TestbedUnavailable
from tensorwire.units import format_rate, format_seconds, to_rate, to_seconds

Number = Union[int, float]

#: Most hosts one testbed holds (addresses 10.77.0.1 to 10.77.0.250).
MAX_HOSTS = 250
SUBNET_PREFIX = "10.77.0."
PREFIX_LENGTH = 24


#: How the testbed's measurement and job processes are scheduled: ``fifo`` (real-time
#: SCHED_FIFO priority 10, via ``chrt``), ``nice`` (nice -10) or ``normal``. The testbed
#: shares the machine's cores with whatever else runs there; each Gloo message crosses
#: three threads, and with ordinary priority a busy machine delays every wake-up. Measured
#: on 4 hosts at 1 Gbit/s while compilers ran: a 4 KiB all-reduce took 8.0 ms at ``nice``
#: and 1.7 ms at ``fifo``, a 4-byte send 0.9 ms and 0.085 ms; a 100 Mbit/s TCP transfer
#: at ``normal`` priority reached 27 Mbit/s under a load average of 15. These processes
#: block on I/O or sleep, so real-time priority does not starve the machine (and Linux
#: keeps 5% of each second for everyone else).
SCHEDULING = {"fifo": ("chrt", "-f", "10"), "nice": ("nice", "-n", "-10"), "normal": ()}
DEFAULT_SCHEDULING = "fifo"


def aggregate_rate(flows: Sequence[Throughput]) -> float:
    """Bytes/s of several simultaneous flows together: all bytes over the span from the
    first flow's first byte to the last flow's last byte."""
    span = max(f.last_s for f in flows) - min(f.first_s for f in flows)
    return sum(f.bytes for f in flows) / span if span > 0 else 0.0


@dataclass(frozen=True)
class Throughput:
    """What one bounded TCP transfer achieved (bytes, seconds, bytes/s)."""

    src: int
    dst: int
    bytes: float
    seconds: float
    rate_bytes_per_s: float
    shaped_bytes_per_s: float
    #: First and last byte at the receiver (``time.perf_counter``, comparable across processes).
    first_s: float = 0.0
    last_s: float = 0.0

    @property
    def efficiency(self) -> float:
        """Achieved payload rate over the shaped rate (at most about 0.956 with a 1500-byte MTU)."""
        return self.rate_bytes_per_s / self.shaped_bytes_per_s


class Testbed:
    """Emulated hosts (network namespaces) on a switch (a bridge), links shaped both ways.

    ``rate`` is each host link's rate per direction (bytes/s or text such as ``"1Gbps"``),
    ``delay`` the one-way delay per hop that jobs add in user space (seconds or text). Use
    it as a context manager; everything it made is removed on exit, on an exception, on
    Ctrl-C and on SIGTERM, and a later testbed removes what a killed one left.

    >>> with Testbed(hosts=2, rate="100Mbps") as tb:          # doctest: +SKIP
    ...     tb.address(1), tb.measure_throughput(0, 1).efficiency > 0.9
    ('10.77.0.2', True)
    """

    __test__ = False  # not a pytest test class despite its name

    def __init__(
        self,
        hosts: int,
        rate: Union[Number, str] = "1Gbps",
        delay: Union[Number, str] = "0s",
        *,
        queue_packets: int = 1000,
        gso_max_bytes: Optional[int] = None,
    ) -> None:
        if isinstance(hosts, bool) or not isinstance(hosts, int) or not 1 <= hosts <= MAX_HOSTS:
            raise InputError("hosts", f"{hosts!r} is not allowed; need an integer from 1 to {MAX_HOSTS}")
        if isinstance(queue_packets, bool) or not isinstance(queue_packets, int) or queue_packets < 1:
            raise InputError("queue_packets", f"{queue_packets!r} must be an integer >= 1")
        self.hosts = hosts
        self.rate: float = to_rate(rate, "rate")
        self.delay: float = to_seconds(delay, "delay")
        self.queue_packets = queue_packets
        if gso_max_bytes is None:
            gso_max_bytes = shaping.gso_bytes(self.rate)
        if isinstance(gso_max_bytes, bool) or not isinstance(gso_max_bytes, int) or not 1500 <= gso_max_bytes <= 65536:
            raise InputError("gso_max_bytes", f"{gso_max_bytes!r} must be an integer from 1500 to 65536")
        self.gso_max_bytes = gso_max_bytes
        self.run_id = netns.new_run_id()
        self.names = Names(self.run_id)
        self._started = False
        self._closed = False
        self._procs: list[subprocess.Popen[Any]] = []
        self._sigterm_installed = False

    def __repr__(self) -> str:
        return (
            f"Testbed(hosts={self.hosts}, rate={format_rate(self.rate)!r}, "
            f"delay={format_seconds(self.delay)!r}, run_id={self.run_id!r})"
        )

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> Testbed:
        if not self._started:
            self.start()
        return self

    def __exit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()

    def start(self) -> None:
        """Creates the namespaces, links and shaping (about 25 ms per host)."""
        if self._started:
            raise RuntimeError("this testbed was already started; create a new one")
        netns.require_available()
        netns.cleanup_leftovers()
        self._started = True
        self._install_sigterm()
        atexit.register(self.close)
        try:
            netns.write_record(self.run_id)
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self) -> None:
        n = self.names
        sw = n.switch_namespace
        root = [f"netns add {sw}"]
        for h in range(self.hosts):
            root.append(f"netns add {n.host_namespace(h)}")
        for h in range(self.hosts):
            root.append(
                f"link add {n.host_interface(h)} netns {n.host_namespace(h)} type veth "
                f"peer name {n.port_interface(h)} netns {sw}"
            )
        shaping.run_batch(["ip"], root)
        switch = [f"link add {n.bridge} type bridge", f"link set {n.bridge} up", "link set lo up"]
        for h in range(self.hosts):
            switch += [
                f"link set {n.port_interface(h)} gso_max_size {self.gso_max_bytes}",
                f"link set {n.port_interface(h)} master {n.bridge}",
                f"link set {n.port_interface(h)} up",
            ]
        shaping.run_batch(["ip", "-n", sw], switch)
        ports: list[str] = []
        for h in range(self.hosts):
            ns, ifc = n.host_namespace(h), n.host_interface(h)
            shaping.run_batch(
                ["ip", "-n", ns],
                [
                    f"link set {ifc} gso_max_size {self.gso_max_bytes}",
                    f"addr add {self.address(h)}/{PREFIX_LENGTH} dev {ifc}",
                    f"link set {ifc} up",
                    "link set lo up",
                ],
            )
            others = [self.address(p) for p in range(self.hosts) if p != h]
            # Uplink: the host's egress, shared fairly among destinations.
            shaping.apply(
                ns, shaping.port_commands(ifc, self.rate, others, "dst", self.queue_packets, self.gso_max_bytes)
            )
            # Downlink: the switch port's egress, shared fairly among sources.
            ports += shaping.port_commands(
                n.port_interface(h), self.rate, others, "src", self.queue_packets, self.gso_max_bytes
            )
        shaping.apply(sw, ports)
        self._wait_bridge_forwarding()

    def _wait_bridge_forwarding(self, timeout_s: float = 5.0) -> None:
        """Waits until every switch port forwards (a fresh bridge port may start in learning)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            out = netns.sh(
                ["ip", "-n", self.names.switch_namespace, "-o", "link", "show", "master", self.names.bridge]
            ).stdout
            if out.count("state UP") + out.count("state UNKNOWN") >= self.hosts and "LOWERLAYERDOWN" not in out:
                return
            time.sleep(0.01)

    def close(self) -> None:
        """Stops the processes it started and removes its namespaces and record (idempotent).

        Ctrl-C and SIGTERM are held back until the teardown is over, so a second signal
        cannot leave half a testbed behind.
        """
        if self._closed or not self._started:
            self._closed = True
            return
        self._closed = True
        main = threading.current_thread() is threading.main_thread()
        held = {signal.SIGINT, signal.SIGTERM}
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, held) if main else None
        try:
            for proc in self._procs:
                if proc.poll() is None:
                    _kill_group(proc)
            netns.destroy_run(self.run_id)
            self._restore_sigterm()
            atexit.unregister(self.close)
        finally:
            if previous is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    @property
    def active(self) -> bool:
        """Whether the testbed is up (started and not closed)."""
        return self._started and not self._closed

    def _install_sigterm(self) -> None:
        """Turns SIGTERM into ``SystemExit`` while the testbed is up (main thread only; not
        when someone else already handles SIGTERM, e.g. an outer testbed)."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
            return

        def on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, on_sigterm)
        self._sigterm_installed = True

    def _restore_sigterm(self) -> None:
        if self._sigterm_installed and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            self._sigterm_installed = False

    # -- addressing -----------------------------------------------------------------------
    def _check_host(self, host: int, field: str = "host") -> None:
        if isinstance(host, bool) or not isinstance(host, int) or not 0 <= host < self.hosts:
            raise InputError(field, f"{host!r} is not a host of this testbed; choose 0 to {self.hosts - 1}")

    def address(self, host: int) -> str:
        """IPv4 address of ``host`` (0-based), e.g. ``10.77.0.1`` for host 0."""
        self._check_host(host)
        return f"{SUBNET_PREFIX}{host + 1}"

    def namespace(self, host: int) -> str:
        """Name of ``host``'s network namespace."""
        self._check_host(host)
        return self.names.host_namespace(host)

    def interface(self, host: int) -> str:
        """Name of ``host``'s network interface (inside its namespace)."""
        self._check_host(host)
        return self.names.host_interface(host)

    def env(self, host: int, extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
        """Environment for a process on ``host``: this one's, plus the testbed's variables.

        ``TENSORWIRE_TESTBED_HOST``/``_ADDR``/``_DELAY_S`` and ``GLOO_SOCKET_IFNAME``.
        """
        env = dict(os.environ)
        env.update(
            TENSORWIRE_TESTBED_HOST=str(host),
            TENSORWIRE_TESTBED_ADDR=self.address(host),
            TENSORWIRE_TESTBED_DELAY_S=repr(self.delay),
            GLOO_SOCKET_IFNAME=self.interface(host),
        )
        if extra:
            env.update(extra)
        return env

    # -- running commands ---------------------------------------------------------------
    def _argv(self, host: int, cmd: Sequence[str]) -> list[str]:
        if not self.active:
            raise RuntimeError("the testbed is not running; use it inside `with Testbed(...) as tb:`")
        if isinstance(cmd, str) or not cmd:
            raise InputError("cmd", "give the command as a non-empty list of arguments")
        return ["ip", "netns", "exec", self.namespace(host), *cmd]

    def run(
        self,
        host: int,
        cmd: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = 60.0,
        check: bool = True,
        input: Optional[str] = None,
    ) -> subprocess.CompletedProcess[str]:
        """Runs ``cmd`` inside ``host``'s namespace and waits (``timeout`` seconds at most).

        Output is captured as text; ``check`` raises ``subprocess.CalledProcessError`` on a
        non-zero exit. ``env`` adds to :meth:`env`.
        """
        proc = self.popen(host, cmd, env=env, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL)
        try:
            out, err = proc.communicate(input=input, timeout=timeout)
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            self.release(proc)
        if check and proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, list(cmd), out, err)
        return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)

    def popen(
        self,
        host: int,
        cmd: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        stdin: Any = subprocess.DEVNULL,
        stdout: Any = subprocess.PIPE,
        stderr: Any = subprocess.PIPE,
    ) -> subprocess.Popen[str]:
        """Starts ``cmd`` inside ``host``'s namespace in a session of its own; the testbed
        stops it on close if it still runs."""
        proc = subprocess.Popen(
            self._argv(host, cmd),
            env=self.env(host, env),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
        self._procs.append(proc)
        return proc

    def python(self, module: str, *args: str) -> list[str]:
        """Argument list that runs ``python -m module args`` with this interpreter."""
        return [sys.executable, "-m", module, *args]

    def release(self, proc: subprocess.Popen[Any]) -> None:
        """Stops tracking ``proc`` (one of :meth:`popen`'s, once it has ended)."""
        if proc in self._procs:
            self._procs.remove(proc)

    # -- measurement --------------------------------------------------------------------
    def measure_throughput(
        self,
        src: int,
        dst: int,
        *,
        max_bytes: Optional[int] = None,
        max_seconds: float = 2.0,
        port: int = 5201,
    ) -> Throughput:
        """TCP payload throughput from ``src`` to ``dst``, measured by the receiver.

        One connection sends zeros for ``max_seconds`` seconds or ``max_bytes`` bytes (default:
        what the shaped rate carries in ``max_seconds``), whichever comes first.
        """
        return self.measure_flows([(src, dst)], max_bytes=max_bytes, max_seconds=max_seconds, port=port)[0]

    def measure_flows(
        self,
        pairs: Sequence[tuple[int, int]],
        *,
        max_bytes: Optional[int] = None,
        max_seconds: float = 2.0,
        port: int = 5201,
        scheduling: str = DEFAULT_SCHEDULING,
    ) -> list[Throughput]:
        """Runs one bounded TCP transfer per ``(src, dst)`` pair at the same time; returns
        each one's throughput as its receiver measured it (see :meth:`measure_throughput`).
        Senders and receivers run with ``scheduling`` (:data:`SCHEDULING`)."""
        if not pairs:
            raise InputError("pairs", "give at least one (src, dst) pair")
        for src, dst in pairs:
            self._check_host(src, "src")
            self._check_host(dst, "dst")
            if src == dst:
                raise InputError("dst", f"{dst} must differ from src")
        if not 0 < max_seconds <= 600:
            raise InputError("max_seconds", f"{max_seconds!r} must be in (0, 600]")
        limit = int(max_bytes) if max_bytes is not None else int(self.rate * max_seconds)
        if limit < 1:
            raise InputError("max_bytes", f"{max_bytes!r} must be >= 1")
        mod = "tensorwire.testbed.tcpbench"
        prefix = list(scheduling_prefix(scheduling))
        timeout = max_seconds + 30.0
        receivers: list[subprocess.Popen[str]] = []
        senders: list[subprocess.Popen[str]] = []
        try:
            for i, (_src, dst) in enumerate(pairs):
                receivers.append(
                    self.popen(
                        dst,
                        prefix
                        + self.python(
                            mod,
                            "recv",
                            "--bind",
                            self.address(dst),
                            "--port",
                            str(port + i),
                            "--timeout-s",
                            str(timeout),
                        ),
                    )
                )
            for i, (src, dst) in enumerate(pairs):
                senders.append(
                    self.popen(
                        src,
                        prefix + self.python(
                            mod, "send", "--to", self.address(dst), "--port", str(port + i),
                            "--max-bytes", str(limit), "--max-seconds", str(max_seconds),
                        ),
                    )
                )  # fmt: skip
            results = []
            for (src, dst), send, recv in zip(pairs, senders, receivers):
                send.communicate(timeout=timeout)
                out, err = recv.communicate(timeout=timeout)
                if recv.returncode != 0:
                    raise RuntimeError(f"throughput receiver on host {dst} failed: {err.strip()}")
                got = json.loads(out)
                results.append(
                    Throughput(
                        src,
                        dst,
                        got["bytes"],
                        got["seconds"],
                        got["rate_bytes_per_s"],
                        self.rate,
                        got["first_s"],
                        got["last_s"],
                    )
                )
            return results
        finally:
            for proc in senders + receivers:
                _kill_group(proc)
                self.release(proc)

    def measure_rtt(self, src: int, dst: int, *, count: int = 200, port: int = 5202) -> float:
        """Median TCP round-trip time of a one-byte message from ``src`` to ``dst`` and back, seconds.

        Raw sockets with ``TCP_NODELAY``: the network path (veth, bridge, shaping) plus the
        kernel's and Python's cost of a tiny send and receive, without any delay emulation.
        """
        self._check_host(src, "src")
        self._check_host(dst, "dst")
        if src == dst:
            raise InputError("dst", "must differ from src")
        mod = "tensorwire.testbed.tcpbench"
        prefix = list(SCHEDULING[DEFAULT_SCHEDULING])
        server = self.popen(
            dst,
            prefix + self.python(mod, "echo", "--bind", self.address(dst), "--port", str(port), "--count", str(count)),
        )
        try:
            done = self.run(
                src,
                prefix
                + self.python(mod, "ping", "--to", self.address(dst), "--port", str(port), "--count", str(count)),
            )
            server.communicate(timeout=30)
        finally:
            if server.poll() is None:
                _kill_group(server)
            self.release(server)
        return float(json.loads(done.stdout)["rtt_s"])


def scheduling_prefix(scheduling: str) -> tuple[str, ...]:
    """The command prefix of a :data:`SCHEDULING` choice; :class:`InputError` names the choices."""
    if scheduling not in SCHEDULING:
        raise InputError("scheduling", f"{scheduling!r} is not allowed; choose one of {', '.join(SCHEDULING)}")
    return SCHEDULING[scheduling]


def _kill_group(proc: subprocess.Popen[Any], grace_s: float = 1.0) -> None:
    """SIGTERM then SIGKILL the process group of a process the testbed started (while its
    leader runs: namespace teardown takes care of anything left after that)."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


__all__ = ["Testbed", "TestbedUnavailable", "Throughput"]
