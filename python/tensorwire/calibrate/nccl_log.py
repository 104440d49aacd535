"""What NCCL's own logging in an nccl-tests log says of the run: the NCCL_ALGO / NCCL_PROTO it
was measured with, and the algorithm and protocol NCCL ran for each size.

With ``NCCL_DEBUG=INFO``, NCCL prints (rank by rank, ``HOST:PID:TID [DEV] NCCL INFO ...``):

- ``NCCL_ALGO set by environment to Ring,Tree`` and ``NCCL_PROTO set by environment to
  Simple`` (``ncclTopoTuneModel``, ``src/graph/tuning.cc``, every release from 2.12 to 2.30;
  the ``ENV`` subsystem, on by default);
- with ``NCCL_DEBUG_SUBSYS`` including ``TUNING``, one line per collective launched by rank 0
  (``src/enqueue.cc``), in three formats:

  - 2.24 on: ``AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..23}``,
    the bytes being ``count x`` the type's size, where all-gather's and reduce-scatter's count is
    per rank (``ncclAllGather``'s ``sendcount``): nccl-tests' size is that times the ranks;
  - 2.23: ``AllReduce: 1048576 Bytes -> Algo 1 proto 2 time 33.5``;
  - 2.20-2.22: ``1048576 Bytes -> Algo 1 proto 2 time 33.5``;

  the numbered ones give the whole buffer (2.20-2.21 multiply all-gather's by the ranks,
  2.22-2.23 take ``ncclFuncMaxSendRecvCount``), indices in NCCL's order (``NCCL_ALGO_TREE`` 0,
  ring, CollNet direct, CollNet chain, NVLS, NVLS tree, PAT 6; ``NCCL_PROTO_LL`` 0, LL128,
  Simple 2).

``calibrate nccl-tests`` takes the settings as ``--algo`` / ``--proto`` would give them and runs
each row with the choice NCCL logged for its size, so that the fit describes the algorithm the
cluster ran, not the one NCCL's model (2.30.7) would pick (docs/calibration.md, "What the log's
NCCL lines tell").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

from tensorwire._core import NCCL_VERSION as NCCL_MODELLED
from tensorwire._core import InputError

#: NCCL's algorithms in index order (``NCCL_ALGO_*``, ``src/include/device.h``), by tensorwire's
#: names (the ``nccl`` strategy's ``algo=``).
ALGOS: tuple[str, ...] = ("tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat")
#: NCCL's protocols in index order (``NCCL_PROTO_*``), by tensorwire's names.
PROTOS: tuple[str, ...] = ("ll", "ll128", "simple")
#: tensorwire's transport of NCCL's network by the name NCCL logs (``Using network IB``,
#: ``src/init.cc``; ``ncclNetIb.name``, ``ncclNetSocket.name``). A plugin's network (``AWS
#: Libfabric``, Google's) tells nothing here: it is left to ``--transport``.
TRANSPORTS: dict[str, str] = {"IB": "rdma", "Socket": "tcp"}
#: The collective of NCCL's function name (``ncclFuncToString``, ``ncclFuncStr``), for those a
#: log's table can be.
FUNCTIONS: dict[str, str] = {
    "allreduce": "allreduce",
    "allgather": "allgather",
    "reducescatter": "reducescatter",
}

# Matched after ``NCCL INFO `` anywhere in the line (NCCL's prefix is checked by the reader).
_SETTING = re.compile(r"NCCL INFO (NCCL_ALGO|NCCL_PROTO) set by environment to (.*\S)")
_NAMED = re.compile(
    r"NCCL INFO ([A-Za-z]+): ([0-9]+) Bytes -> Algo ([A-Za-z_0-9]+) proto ([A-Za-z_0-9]+) "
    r"channel\{Lo\.\.Hi\}=\{([0-9]+)\.\.([0-9]+)\}"
)
_NETWORK = re.compile(r"NCCL INFO Using network (.*\S)")
_NUMBERED = re.compile(r"NCCL INFO (?:([A-Za-z]+): )?([0-9]+) Bytes -> Algo ([0-9]+) proto ([0-9]+) time\b")


@dataclass(frozen=True)
class Setting:
    """An ``NCCL_ALGO`` / ``NCCL_PROTO`` value as NCCL logged it, and its line (``env``: a JSON
    log's environment, :mod:`~tensorwire.calibrate.json_results`)."""

    value: str
    line: Union[int, str]


@dataclass(frozen=True)
class Choice:
    """The algorithm and protocol NCCL logged it ran for one size (tensorwire's names), the
    channels it spread the operation over (2.24 on; None before) and the first line saying so."""

    algo: str
    proto: str
    channels: Optional[int]
    line: int

    def label(self) -> str:
        return f"{self.algo}/{self.proto}"


@dataclass(frozen=True)
class _Launch:
    """One TUNING line as read, before the run's collective and ranks are known."""

    line: int
    function: Optional[str]  # NCCL's function name, lower case; None where the line has none
    bytes: int
    algo: str  # NCCL's name or index, as printed
    proto: str
    channels: Optional[int]
    per_rank: bool  # all-gather's and reduce-scatter's bytes are one rank's (2.24 on)


@dataclass
class NcclLog:
    """NCCL's logging of one nccl-tests log, read line by line (:meth:`see`), then settled
    against the run's collective, ranks and table (:meth:`choices`)."""

    path: str
    settings: dict[str, Setting] = field(default_factory=dict)
    #: The network NCCL said it uses (``Using network IB``), first line.
    network: Optional[Setting] = None
    launches: list[_Launch] = field(default_factory=list)

    def see(self, line: int, text: str) -> None:
        """Reads one line of NCCL's logging; a line that is neither a setting nor a choice says
        nothing here. Two ranks logging different values of one variable ran different
        settings: refused."""
        if (m := _SETTING.search(text)) is not None:
            name, value = m.group(1), m.group(2).strip()
            first = self.settings.setdefault(name, Setting(value, line))
            if first.value != value:
                raise InputError(
                    "log",
                    f"{self.path}:{line}: {name} set to {value!r} here and to {first.value!r} at line {first.line}: "
                    "the ranks ran with different settings; give one run's log",
                )
            return
        if (m := _NETWORK.search(text)) is not None:
            if self.network is None:
                self.network = Setting(m.group(1), line)
            return
        if (m := _NAMED.search(text)) is not None:
            lo, hi = int(m.group(5)), int(m.group(6))
            channels = hi - lo + 1 if hi >= lo else None
            self.launches.append(
                _Launch(line, m.group(1).lower(), int(m.group(2)), m.group(3), m.group(4), channels, True)
            )
        elif (m := _NUMBERED.search(text)) is not None:
            function = m.group(1).lower() if m.group(1) else None
            self.launches.append(_Launch(line, function, int(m.group(2)), m.group(3), m.group(4), None, False))

    def setting(self, name: str, collective: str) -> Optional[Setting]:
        """``name``'s logged value (``NCCL_ALGO`` or ``NCCL_PROTO``) for ``collective``, in the
        ``nccl`` strategy's syntax (:func:`for_collective`), or None where none was logged or
        none applies to ``collective`` (NCCL's default, everything enabled). A name NCCL does
        not have (a newer release's, or a typo NCCL itself would have refused) is refused,
        naming the line."""
        s = self.settings.get(name)
        value = None if s is None else for_collective(s.value, collective)
        if s is None or not value:
            return None
        known = ALGOS if name == "NCCL_ALGO" else PROTOS
        unknown = [n for n in value.lstrip("^").split("+") if n not in known]
        if unknown:
            raise InputError(
                "log",
                f"{self.path}:{s.line}: {name}={s.value}: {unknown[0]!r} is none of {', '.join(known)} (NCCL "
                f"{NCCL_MODELLED}'s names, which tensorwire models)",
            )
        return Setting(value, s.line)

    def choices(self, collective: str, ranks: int, sizes: set[int]) -> tuple[dict[int, Choice], tuple[str, ...]]:
        """NCCL's logged choice for each of the table's ``sizes`` where it logged one, and notes
        on the launches not taken: an algorithm or protocol tensorwire does not model, or two
        choices for one size (the model chooses there)."""
        found: dict[int, Choice] = {}
        unpinned: set[int] = set()  # sizes with a launch not taken: the model chooses there
        notes: list[str] = []
        if collective not in FUNCTIONS.values():
            return found, ()  # all-to-all is point-to-point: no algorithm to pin (a line is another launch's)
        for launch in self.launches:
            if launch.function is not None and FUNCTIONS.get(launch.function) != collective:
                continue  # another function's launch (nccl-tests runs one; a wrapper may run more)
            size = launch.bytes * ranks if launch.per_rank and collective != "allreduce" else launch.bytes
            if size not in sizes or size in unpinned:
                continue  # not a row; or said once already (nccl-tests launches each size many times)
            algo, proto = _name(launch.algo, ALGOS), _name(launch.proto, PROTOS)
            first = found.get(size)
            if algo is None or proto is None:
                note = f"NCCL ran algorithm {launch.algo} / protocol {launch.proto}, which tensorwire does not model"
            elif first is not None and (first.algo, first.proto) != (algo, proto):
                note = f"NCCL ran {algo}/{proto} for a size it ran {first.label()} at line {first.line}"
            else:
                found.setdefault(size, Choice(algo, proto, launch.channels, launch.line))
                continue
            unpinned.add(size)
            found.pop(size, None)
            notes.append(f"{self.path}:{launch.line}: {note}; the model chooses at that size")
        return found, tuple(notes)


def _name(printed: str, names: tuple[str, ...]) -> Optional[str]:
    """tensorwire's name of an algorithm or protocol NCCL printed by name (``NVLS_TREE``,
    ``CollNetDirect``, ``SIMPLE``) or index (``5``); None where it is none of ``names``.

    >>> _name("NVLS_TREE", ALGOS), _name("CollNetChain", ALGOS), _name("2", PROTOS), _name("7", ALGOS)
    ('nvlstree', 'collnetchain', 'simple', None)
    """
    if printed.isdigit():
        i = int(printed)
        return names[i] if i < len(names) else None
    name = printed.replace("_", "").lower()
    return name if name in names else None


def for_collective(value: str, collective: str) -> str:
    """The part of an NCCL_ALGO / NCCL_PROTO value that applies to ``collective``, in the
    ``nccl`` strategy's syntax (``+`` between names, lower case, ``^`` excluding). NCCL's
    ``parseList`` (``src/graph/tuning.cc``) reads ``;``-separated entries, all but the first
    prefixed by a function (``allreduce:tree``), each setting its functions' list anew, so the
    last entry that names ``collective`` wins, else the unprefixed first.

    >>> for_collective("Ring,Tree", "allreduce")
    'ring+tree'
    >>> for_collective("ring,collnetdirect;allreduce:tree,collnetdirect", "allreduce")
    'tree+collnetdirect'
    >>> for_collective("^LL128;allreduce:LL128", "allgather"), for_collective("allgather:^ll", "allgather")
    ('^ll128', '^ll')
    >>> for_collective("allreduce:tree", "allgather")
    ''
    """
    chosen = ""
    for i, entry in enumerate(value.split(";")):
        prefix, colon, items = entry.partition(":")
        if not colon:
            if i == 0:
                chosen = entry
            continue
        if FUNCTIONS.get(prefix.strip().lower()) == collective:
            chosen = items
    negate = chosen.strip().startswith("^")
    names = dict.fromkeys(n.strip().lower() for n in chosen.strip().lstrip("^").split(",") if n.strip())
    return ("^" if negate else "") + "+".join(names) if names else ""


def agreed(logged: Sequence[tuple[str, Setting]], what: str, same: Callable[[str, str], bool]) -> Optional[Setting]:
    """The value several logs logged (``logged``: each log's path and its setting of ``what``),
    the first log's, where every two agree by ``same``; None where none logged one. Logs
    that disagree are refused naming both lines: one calibration fits runs of one setting.

    >>> same = lambda x, y: x.lower() == y.lower()
    >>> agreed([("a.log", Setting("Ring", 9)), ("b.log", Setting("ring", 3))], "NCCL_ALGO", same)
    Setting(value='Ring', line=9)
    """
    for (path, s), (other, t) in zip(logged, logged[1:]):
        if not same(s.value, t.value):
            raise InputError(
                "log",
                f"{path}:{s.line} logged {what} {s.value}, {other}:{t.line} {t.value}: one calibration fits runs of "
                "one setting; calibrate them apart",
            )
    return logged[0][1] if logged else None


def allows(restriction: Optional[str], name: str) -> bool:
    """Whether an ``algo=`` / ``proto=`` restriction (the ``nccl`` strategy's syntax; None: no
    restriction) lets NCCL run ``name``.

    >>> allows("ring+tree", "tree"), allows("^nvls", "nvls"), allows(None, "pat"), allows("^nvls+ll", "ring")
    (True, False, True, True)
    """
    if not restriction:
        return True
    negate = restriction.startswith("^")
    names = set(restriction.lstrip("^").split("+"))
    return (name in names) != negate
