"""Network namespaces, veth pairs and ownership records: the low level of the testbed.

Every object a testbed creates carries its run id in its name: namespaces are
``tw<id>-h<i>`` (host ``i``) and ``tw<id>-sw`` (the switch), interfaces ``tw<id>h<i>``
(host side), ``tw<id>p<i>`` (switch port) and ``tw<id>sw`` (the bridge); ``<id>`` is five
characters, so the longest interface name, ``twa1b2cp255``, stays under Linux's 15.

Before it creates anything, a run writes an ownership record ``<STATE_DIR>/<id>.json``
with its pid and the pid's start time (from ``/proc``, so a reused pid is not mistaken for
the owner). :func:`cleanup_leftovers` removes the namespaces of every run whose owner is
gone, together with the processes still inside them, then the record; a namespace without
a record is not tensorwire's (the record is written first and removed last) and is left
alone. ``tensorwire validate --cleanup`` runs it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import string
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

#: Where ownership records live (a tmpfs, like ``/run/netns``: a reboot clears both).
STATE_DIR = Path(os.environ.get("TENSORWIRE_TESTBED_STATE", "/run/tensorwire-testbed"))
#: Where ``ip netns`` keeps its named namespaces.
NETNS_DIR = Path("/run/netns")
PREFIX = "tw"
RUN_ID_LENGTH = 5
_RUN_ID_ALPHABET = string.ascii_lowercase + string.digits
_RUN_ID = re.compile(rf"[a-z0-9]{{{RUN_ID_LENGTH}}}")
_NAMESPACE = re.compile(rf"^{PREFIX}([a-z0-9]{{{RUN_ID_LENGTH}}})-(?:h\d+|sw)$")


class TestbedUnavailable(RuntimeError):
    """The machine cannot host a testbed (not root, no namespaces, no ``ip``/``tc``).

    ``str(error)`` is one line that says what is missing and what to do.
    """

    __test__ = False  # not a pytest test class despite its name


class CommandFailed(RuntimeError):
    """An ``ip`` or ``tc`` command failed; the message holds the command and its stderr."""


def new_run_id() -> str:
    """Five random lowercase letters and digits."""
    return "".join(secrets.choice(_RUN_ID_ALPHABET) for _ in range(RUN_ID_LENGTH))


@dataclass(frozen=True)
class Names:
    """Names of one run's namespaces and interfaces."""

    run_id: str

    @property
    def switch_namespace(self) -> str:
        return f"{PREFIX}{self.run_id}-sw"

    @property
    def bridge(self) -> str:
        return f"{PREFIX}{self.run_id}sw"

    def host_namespace(self, host: int) -> str:
        return f"{PREFIX}{self.run_id}-h{host}"

    def host_interface(self, host: int) -> str:
        return f"{PREFIX}{self.run_id}h{host}"

    def port_interface(self, host: int) -> str:
        return f"{PREFIX}{self.run_id}p{host}"


def unavailable_reason() -> Optional[str]:
    """Why a testbed cannot run here, in one line, or ``None`` when it can.

    Checks root, the ``ip`` and ``tc`` tools and that a network namespace can be created.
    """
    if os.geteuid() != 0:
        return "the testbed needs root (network namespaces and tc); run it as root, e.g. with sudo"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"{tool!r} not found; install iproute2 (scripts/setup-system.sh does)"
    probe = f"{PREFIX}probe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot create a network namespace: {_first_line(made.stderr)}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def require_available() -> None:
    """Raises :class:`TestbedUnavailable` with a one-line reason when the testbed cannot run."""
    reason = unavailable_reason()
    if reason is not None:
        raise TestbedUnavailable(reason)


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "no error message"


def sh(args: Sequence[str], *, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Runs an ``ip``/``tc`` command; raises :class:`CommandFailed` (with stderr) on failure."""
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise CommandFailed(f"{' '.join(args)}: {_first_line(done.stderr)}")
    return done


def namespaces() -> list[str]:
    """Names of all named network namespaces on the machine."""
    try:
        return sorted(p.name for p in NETNS_DIR.iterdir())
    except FileNotFoundError:
        return []


def run_namespaces(run_id: str) -> list[str]:
    """This run's namespaces that exist now."""
    return [n for n in namespaces() if (m := _NAMESPACE.match(n)) and m.group(1) == run_id]


# -- ownership records -------------------------------------------------------------------
def _start_time(pid: int) -> Optional[int]:
    """Start time of ``pid`` in clock ticks since boot, or ``None`` when it is not running."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])  # field 22 of the whole line


def record_path(run_id: str) -> Path:
    return STATE_DIR / f"{run_id}.json"


def write_record(run_id: str) -> None:
    """Records that this process owns ``run_id`` (before anything of the run exists)."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    data = {"run_id": run_id, "pid": pid, "start_ticks": _start_time(pid), "created_unix_s": time.time()}
    tmp = record_path(run_id).with_suffix(".tmp")
    tmp.write_text(json.dumps(data) + "\n")
    os.replace(tmp, record_path(run_id))


def remove_record(run_id: str) -> None:
    record_path(run_id).unlink(missing_ok=True)


def owner_alive(run_id: str) -> bool:
    """Whether the process that recorded ``run_id`` still runs (same pid, same start time)."""
    try:
        data = json.loads(record_path(run_id).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return False
    pid = data.get("pid")
    return isinstance(pid, int) and _start_time(pid) is not None and _start_time(pid) == data.get("start_ticks")


# -- teardown -----------------------------------------------------------------------------
def namespace_pids(namespace: str) -> list[int]:
    """Processes running inside ``namespace``."""
    done = sh(["ip", "netns", "pids", namespace], check=False)
    return [int(p) for p in done.stdout.split() if p.isdigit()]


def kill_namespace_processes(namespace: str, grace_s: float = 1.0) -> None:
    """SIGTERM, then SIGKILL after ``grace_s`` seconds, every process inside ``namespace``.

    Only testbed namespaces are passed here, so these are processes a testbed started.
    """
    pids = namespace_pids(namespace)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while pids and time.monotonic() < deadline:
        time.sleep(0.02)
        pids = [p for p in pids if _start_time(p) is not None and not _is_zombie(p)]
    for pid in pids:
        _signal(pid, signal.SIGKILL)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat[stat.rindex(")") + 2 :].startswith("Z")


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def delete_namespaces(names: Sequence[str]) -> None:
    """Kills what runs inside each namespace, then deletes it (its veth ends go with it)."""
    for name in names:
        kill_namespace_processes(name)
    for name in names:
        sh(["ip", "netns", "del", name], check=False)


def destroy_run(run_id: str) -> None:
    """Removes every namespace of ``run_id`` and its record."""
    delete_namespaces(run_namespaces(run_id))
    remove_record(run_id)


def cleanup_leftovers() -> list[str]:
    """Removes what runs that were killed left behind; returns their run ids.

    A run is left over when it has an ownership record (so it was tensorwire's) whose owner
    is no longer alive. Live runs, including other processes' testbeds, are never touched,
    and neither is a namespace without a record, even one whose name looks like ours:
    tensorwire writes the record before creating anything and removes it last, so such a
    namespace was made by something else.
    """
    if not STATE_DIR.is_dir():
        return []
    run_ids = {p.stem for p in STATE_DIR.glob("*.json") if _RUN_ID.fullmatch(p.stem)}
    removed = []
    for run_id in sorted(run_ids):
        if not owner_alive(run_id):
            destroy_run(run_id)
            removed.append(run_id)
    return removed
