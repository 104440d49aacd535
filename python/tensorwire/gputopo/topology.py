"""GPU link topologies of one machine, their reduction trees and tree all-reduce plans.

Seed 003 (topology-aware reduce and broadcast in MXNet) weighs each pair of GPUs by its
fastest link: **3** for a double (bonded) NVLink, **2** for a single NVLink, **1** for PCIe
(through a switch, a host bridge or the CPUs), **0** for no link. A :class:`Topology` holds
that matrix and asks the core crate (``tensorwire._core``, the one implementation of tree
generation and scheduling) for the balanced binary trees of maximum link weight and for the
rounds of a tree all-reduce. This module reads topologies from

- a preset: :meth:`Topology.preset` (``p3.16xlarge``, ``dgx-a100``, ``pcie-8``);
- a JSON file: :meth:`Topology.from_file` (``{"gpus": n, "adjacency": [[...]]}`` or a plain
  square matrix);
- the machine: :meth:`Topology.detect`, from NVML (``pynvml``, when importable) or else from
  the text of ``nvidia-smi topo -m`` (:func:`parse_nvidia_smi_topo`).

>>> t = Topology.preset("p3.16xlarge")
>>> t.gpus, t.weight(0, 3), t.weight(0, 1), t.weight(0, 5)
(8, 3, 2, 1)
>>> tree = t.trees(1)[0]
>>> tree.root, tree.height, tree.weight
(0, 3, 20)

Importing this module never imports torch; the runtime that executes the plans is
:mod:`tensorwire.torch.tree_allreduce`.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

from tensorwire import _core
from tensorwire._core import InputError
from tensorwire.io import clip
from tensorwire.limits import check_int

#: The presets the core knows (checked against the core's own list by the tests).
PRESETS: tuple[str, ...] = _core.GPU_PRESETS
#: Seed 003's multiplicative link-usage penalty between successive trees (MXNet's
#: ``MXNET_KVSTORE_TREE_LINK_USAGE_PENALTY``).
DEFAULT_PENALTY = 0.7
#: Elements (not bytes) from which the multi-tree mode is used; below it one tree (MXNet's
#: ``MXNET_KVSTORE_TREE_ARRAY_BOUND``; seed 003's Figure 7 puts the crossover at 1M-10M float32).
DEFAULT_ARRAY_BOUND = 10_000_000
#: Link weight -> short name, as printed by ``tensorwire topology``.
LINK_NAMES = {0: "-", 1: "PCIe", 2: "NV1", 3: "NV2+"}
#: ``nvidia-smi topo -m`` codes of PCIe paths (``SOC`` is the pre-2017 name of ``SYS``).
PCIE_CODES = frozenset({"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"})

_WEIGHT_HELP = "0 no link, 1 PCIe, 2 single NVLink, 3 double NVLink"
#: Largest adjacency file read, bytes (128 GPUs' matrix is a few tens of KiB).
ADJACENCY_FILE_LIMIT = 16 * 2**20
#: The largest link weight (seed 003's: a double NVLink); the simulator has a rate for 1-3 only.
MAX_WEIGHT = 3
_FILE_KEYS = frozenset({"gpus", "adjacency", "links", "trees", "source", "penalty", "array_bound"})
_PLAN_CACHE_SIZE = 256

Matrix = tuple[tuple[int, ...], ...]


def nvlink_weight(links: int) -> int:
    """The MXNet multi-tree proposal's weight of a GPU pair joined by ``links`` NVLinks: 2 for one, 3 for two or more.

    The MXNet multi-tree proposal (seed 003) knows single and double NVLinks only (the DGX-1);
    bonds of more links (``NV4``
    to ``NV18`` on NVSwitch machines) count as the best class, 3.
    """
    if links < 1:
        raise InputError("links", f"{links} NVLinks; a pair with NVLink has at least 1")
    return 2 if links == 1 else 3


@dataclass(frozen=True)
class TreeEdge:
    """One edge of a reduction tree: ``child`` sends its partial sum to ``parent`` at ``level``.

    Level 1 is the last step of a reduce and the first of a broadcast (the first bisection).
    """

    parent: int
    child: int
    level: int


@dataclass(frozen=True)
class Tree:
    """A balanced binary reduction tree laid on the GPU links (see docs/gputopo.md).

    ``weight`` is the sum of the tree's link weights (unpenalised); ``method`` is the search
    that found it: ``"kernighan-lin"`` or ``"exhaustive"``.
    """

    root: int
    edges: tuple[TreeEdge, ...]
    weight: int
    method: str

    @property
    def height(self) -> int:
        """Reduction steps: ceil(log2 n) for n GPUs (0 for one GPU)."""
        return max((e.level for e in self.edges), default=0)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``root``, ``edges`` as [parent, child] pairs, their ``levels``, ``weight``, ``method``."""
        return {
            "root": self.root,
            "edges": [[e.parent, e.child] for e in self.edges],
            "levels": [e.level for e in self.edges],
            "weight": self.weight,
            "method": self.method,
        }


@dataclass(frozen=True)
class Transfer:
    """One transfer of a round: slice ``slice`` goes from GPU ``src`` to GPU ``dst``, which adds
    it to its own (``reduce``) or overwrites its own with it (broadcast)."""

    slice: int
    src: int
    dst: int
    reduce: bool


@dataclass(frozen=True)
class Step:
    """What one GPU does in one transfer: send or receive elements ``[start, end)`` to or from
    ``peer`` (a GPU index); ``reduce`` receives add, others overwrite. ``tag`` tells the
    transfers between the same two GPUs in one round apart (it is the slice index)."""

    start: int
    end: int
    peer: int
    send: bool
    reduce: bool
    tag: int


@dataclass(frozen=True)
class Plan:
    """A tree all-reduce of ``elements`` elements as data, from the core's schedule.

    ``slices[i]`` = (start, end) is the part of the payload that tree i reduces and
    broadcasts. Run ``rounds`` in order; within a round every transfer is independent, and a
    GPU may both send (on one tree) and receive (on another), so post all of a round's
    sends and receives before waiting on any.
    """

    elements: int
    gpus: int
    slices: tuple[tuple[int, int], ...]
    rounds: tuple[tuple[Transfer, ...], ...]
    _steps: dict[int, tuple[tuple[Step, ...], ...]] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def trees(self) -> int:
        """Number of trees (and slices) in use: 1 below the array bound."""
        return len(self.slices)

    def steps(self, gpu: int) -> tuple[tuple[Step, ...], ...]:
        """GPU ``gpu``'s part of the plan: its rounds in order, each with the steps it takes.

        Rounds where the GPU has nothing to do and transfers of empty slices are left out;
        point-to-point matching needs no global step. Computed once per GPU.
        """
        hit = self._steps.get(gpu)
        if hit is not None:
            return hit
        if isinstance(gpu, bool) or not isinstance(gpu, int) or not 0 <= gpu < self.gpus:
            raise InputError("gpu", f"{gpu!r} is not a GPU of this plan; choose 0 to {self.gpus - 1}")
        out: list[tuple[Step, ...]] = []
        for transfers in self.rounds:
            mine: list[Step] = []
            for t in transfers:
                start, end = self.slices[t.slice]
                if start == end or gpu not in (t.src, t.dst):
                    continue
                send = t.src == gpu
                mine.append(Step(start, end, t.dst if send else t.src, send, t.reduce, t.slice))
            if mine:
                out.append(tuple(mine))
        steps = self._steps[gpu] = tuple(out)
        return steps


class Topology:
    """GPUs of one machine and the weight of the link between each pair (the MXNet multi-tree proposal's weights).

    Build one with :meth:`preset`, :meth:`from_adjacency`, :meth:`from_file`,
    :meth:`detect` or :meth:`from_nvidia_smi`. The core validates every matrix (square,
    1 to 128 GPUs, symmetric, zero diagonal, connected) and reports a broken one as
    ``InputError("adjacency", ...)``. ``source`` says where the topology came from (not
    part of equality). Immutable; trees and plans are computed once and cached (thread-safe).
    """

    __slots__ = ("_adjacency", "_source", "_links", "_trees", "_plans", "_lock")

    def __init__(self, adjacency: Sequence[Sequence[int]], source: str = "adjacency") -> None:
        matrix = _check_matrix(adjacency)
        try:
            gpus, links = _core.gpu_topology(adjacency=[list(row) for row in matrix])
        except (TypeError, OverflowError) as e:
            raise InputError("adjacency", f"{e}; entries are link weights: {_WEIGHT_HELP}") from None
        assert gpus == len(matrix)
        self._adjacency: Matrix = matrix
        self._source = source
        self._links: tuple[tuple[int, int, int], ...] = tuple(links)
        self._trees: dict[tuple[int, float], tuple[Tree, ...]] = {}
        self._plans: dict[tuple[int, int, float, int], Plan] = {}
        self._lock = threading.Lock()

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def preset(cls, name: str) -> Topology:
        """A built-in machine: ``p3.16xlarge`` (DGX-1 hybrid cube-mesh), ``dgx-a100``
        (NVSwitch, all pairs 3) or ``pcie-8`` (all pairs 1). Unknown names raise
        ``InputError("preset", ...)`` listing the known ones."""
        if not isinstance(name, str):
            raise InputError("preset", f"{name!r} is not a preset name; choose one of {', '.join(PRESETS)}")
        gpus, links = _core.gpu_topology(preset=name)
        return cls(_matrix_from_links(gpus, links), source=name)

    @classmethod
    def from_adjacency(cls, adjacency: Sequence[Sequence[int]], source: str = "adjacency") -> Topology:
        """A topology from a square matrix of link weights (0 none, 1 PCIe, 2 NVLink, 3 double NVLink)."""
        return cls(adjacency, source)

    @classmethod
    def uniform(cls, gpus: int, weight: int = 1) -> Topology:
        """``gpus`` GPUs, every pair linked with ``weight`` (1: a PCIe-only machine; 3: NVSwitch)."""
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise InputError("gpus", f"{gpus!r} must be an integer >= 1")
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= MAX_WEIGHT:
            raise InputError("weight", f"{weight!r} must be a link weight >= 1 ({_WEIGHT_HELP})")
        return cls([[0 if i == j else weight for j in range(gpus)] for i in range(gpus)], source=f"uniform-{gpus}")

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> Topology:
        """Reads a JSON adjacency file: ``{"gpus": n, "adjacency": [[...]]}`` or a plain square matrix.

        The JSON that ``tensorwire topology --json`` prints is accepted too (its ``links``,
        ``trees`` and other output keys are ignored). Every problem raises one
        ``InputError`` whose field is ``adjacency`` (or ``gpus`` when the count disagrees)
        and whose message names the file.
        """
        p = Path(path)
        from tensorwire.io import decode_text, loads_json, read_input

        text = decode_text(read_input(p, "adjacency", ADJACENCY_FILE_LIMIT), p, "adjacency")
        data = loads_json(text, p, "adjacency")
        if isinstance(data, list):
            matrix = data
        elif isinstance(data, dict):
            unknown = sorted(set(data) - _FILE_KEYS)
            if unknown:
                raise InputError(
                    "adjacency", f"{p.name}: unknown key {unknown[0]!r}; a topology file has 'gpus' and 'adjacency'"
                )
            if "adjacency" not in data:
                raise InputError(
                    "adjacency", f'{p.name}: no \'adjacency\' key; write {{"gpus": n, "adjacency": [[...]]}}'
                )
            matrix = data["adjacency"]
            gpus = data.get("gpus")
            if gpus is not None:
                if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
                    raise InputError("gpus", f"{p.name}: 'gpus' is {gpus!r}; it must be an integer >= 1")
                if isinstance(matrix, list) and len(matrix) != gpus:
                    raise InputError(
                        "gpus", f"{p.name}: 'gpus' is {gpus} but the adjacency matrix has {len(matrix)} rows"
                    )
        else:
            raise InputError(
                "adjacency", f"{p.name}: expected a JSON object or a square matrix, got {type(data).__name__}"
            )
        try:
            return cls(matrix, source=str(p))
        except InputError as e:
            field, message = e.args if len(e.args) == 2 else ("adjacency", str(e))
            raise InputError(field, f"{p.name}: {message}") from None

    @classmethod
    def from_nvidia_smi(cls, text: str, source: str = "nvidia-smi") -> Topology:
        """A topology from the text printed by ``nvidia-smi topo -m`` (see :func:`parse_nvidia_smi_topo`)."""
        return cls(parse_nvidia_smi_topo(text), source=source)

    @classmethod
    def detect(cls, method: str = "auto", visible: bool = True) -> Topology:
        """This machine's GPUs and links.

        ``method``: ``"nvml"`` (``pynvml``, the ``nvidia-ml-py`` package), ``"nvidia-smi"``
        (runs ``nvidia-smi topo -m``) or ``"auto"`` (NVML when ``pynvml`` imports and works,
        else nvidia-smi). GPU i is NVML's (and nvidia-smi's) index i, which is CUDA's
        device i when ``CUDA_DEVICE_ORDER=PCI_BUS_ID``. With ``visible`` (the default) and
        ``CUDA_VISIBLE_DEVICES`` set to indices, only those GPUs are kept, renumbered from 0
        in that order, as CUDA numbers them. Raises ``InputError("detect", ...)`` when no
        NVIDIA GPU can be found.
        """
        if method not in ("auto", "nvml", "nvidia-smi"):
            raise InputError("method", f"{method!r} is not a detection method; choose auto, nvml or nvidia-smi")
        matrix: Optional[list[list[int]]] = None
        source = method
        why_not_nvml = ""
        if method in ("auto", "nvml"):
            try:
                nvml = importlib.import_module("pynvml")
            except ImportError:
                nvml = None
                why_not_nvml = "pynvml is not installed (pip install nvidia-ml-py)"
            if nvml is not None:
                try:
                    matrix, source = nvml_adjacency(nvml), "nvml"
                except InputError:
                    raise
                except Exception as e:  # noqa: BLE001 - NVMLError (no driver, no GPU) and its kin
                    why_not_nvml = f"NVML failed: {e}"
            if matrix is None and method == "nvml":
                raise InputError("detect", why_not_nvml)
        if matrix is None:
            try:
                matrix, source = parse_nvidia_smi_topo(_run_nvidia_smi()), "nvidia-smi"
            except InputError as e:
                if why_not_nvml and method == "auto":
                    raise InputError("detect", f"{e.args[-1]}; {why_not_nvml}") from None
                raise
        topo = cls(matrix, source=source)
        visible_env = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible and visible_env is not None:
            indices = _visible_indices(visible_env, topo.gpus)
            if indices != list(range(topo.gpus)):
                topo = topo.subset(indices)
                topo._source = f"{source} (CUDA_VISIBLE_DEVICES={visible_env})"
        return topo

    # -- properties -----------------------------------------------------------------------
    @property
    def gpus(self) -> int:
        """Number of GPUs."""
        return len(self._adjacency)

    @property
    def adjacency(self) -> Matrix:
        """The symmetric matrix of link weights (0 on the diagonal)."""
        return self._adjacency

    @property
    def links(self) -> tuple[tuple[int, int, int], ...]:
        """Every linked pair once, as (i, j, weight) with i < j, in order."""
        return self._links

    @property
    def source(self) -> str:
        """Where the topology came from: a preset name, a file path, ``nvml``, ``nvidia-smi`` ..."""
        return self._source

    def weight(self, i: int, j: int) -> int:
        """Link weight between GPUs ``i`` and ``j`` (0 for i == j)."""
        return self._adjacency[i][j]

    def subset(self, gpus: Iterable[int]) -> Topology:
        """The topology of the given GPUs only, renumbered 0.. in the order given (e.g. a job's visible GPUs)."""
        keep = list(gpus)
        if (
            not keep
            or len(set(keep)) != len(keep)
            or any(isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < self.gpus for g in keep)
        ):
            raise InputError("gpus", f"{keep!r} must be distinct GPU indices from 0 to {self.gpus - 1}")
        matrix = [[self._adjacency[i][j] for j in keep] for i in keep]
        return Topology(matrix, source=f"{self._source}[{','.join(map(str, keep))}]")

    # -- trees and plans ----------------------------------------------------------------
    def trees(self, count: Optional[int] = None, penalty: float = DEFAULT_PENALTY) -> tuple[Tree, ...]:
        """The MXNet multi-tree proposal's trees: tree i rooted at GPU i mod n, each of maximum weight once the links
        of the trees before it were multiplied by ``penalty`` (in (0, 1]).

        ``count`` defaults to one tree per GPU, what the multi-tree mode uses. Deterministic.
        """
        count = self.gpus if count is None else count
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InputError("trees", f"{count!r} trees; ask for 1 or more (one per GPU is usual)")
        check_int("trees", count, 1, _core.MAX_TREES)  # the core's limit, named before an OverflowError
        key = (count, float(penalty))
        with self._lock:
            hit = self._trees.get(key)
        if hit is not None:
            return hit
        raw = _core.gpu_trees(adjacency=self._matrix_list(), count=count, penalty=float(penalty))
        trees = tuple(
            Tree(root, tuple(TreeEdge(p, c, lvl) for p, c, lvl in edges), weight, method)
            for root, edges, method, weight in raw
        )
        with self._lock:
            self._trees[key] = trees
        return trees

    def plan(
        self,
        elements: int,
        trees: int = 0,
        penalty: float = DEFAULT_PENALTY,
        array_bound: int = DEFAULT_ARRAY_BOUND,
    ) -> Plan:
        """The core's tree all-reduce schedule of ``elements`` elements.

        Below ``array_bound`` elements one tree (the first) carries everything; from it on,
        ``trees`` trees (0: one per GPU) carry one slice each. Plans are cached per argument
        set (the last 256), so a training loop pays the core's sub-millisecond planning once
        per tensor size.
        """
        if isinstance(elements, bool) or not isinstance(elements, int) or elements < 0:
            raise InputError("elements", f"{elements!r} must be an integer >= 0")
        if isinstance(trees, bool) or not isinstance(trees, int) or trees < 0:
            raise InputError("trees", f"{trees!r} must be an integer >= 0 (0: one tree per GPU)")
        if isinstance(array_bound, bool) or not isinstance(array_bound, int) or array_bound < 0:
            raise InputError("array_bound", f"{array_bound!r} must be an integer >= 0 elements")
        key = (elements, trees, float(penalty), array_bound)
        with self._lock:
            hit = self._plans.get(key)
        if hit is not None:
            return hit
        slices, rounds = _core.tree_allreduce_plan(
            elements, adjacency=self._matrix_list(), count=trees, penalty=float(penalty), array_bound=array_bound
        )
        plan = Plan(
            elements,
            self.gpus,
            tuple((s, e) for s, e in slices),
            tuple(tuple(Transfer(s, f, t, r) for s, f, t, r in rnd) for rnd in rounds),
        )
        with self._lock:
            if len(self._plans) >= _PLAN_CACHE_SIZE:
                self._plans.pop(next(iter(self._plans)))
            self._plans[key] = plan
        return plan

    # -- output ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``gpus``, ``source``, ``adjacency`` and ``links`` ([i, j, weight]).

        :meth:`from_file` reads it back.
        """
        return {
            "gpus": self.gpus,
            "source": self._source,
            "adjacency": [list(row) for row in self._adjacency],
            "links": [list(link) for link in self._links],
        }

    def _matrix_list(self) -> list[list[int]]:
        return [list(row) for row in self._adjacency]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Topology) and other._adjacency == self._adjacency

    def __hash__(self) -> int:
        return hash(self._adjacency)

    def __repr__(self) -> str:
        return f"Topology(gpus={self.gpus}, source={self._source!r})"


# -- validation -------------------------------------------------------------------------------
def _check_matrix(adjacency: Any) -> Matrix:
    """Shape and types only (the core checks the rules: symmetric, diagonal, connected ...)."""
    if not isinstance(adjacency, (list, tuple)) or not adjacency:
        raise InputError("adjacency", f"expected a non-empty square matrix (a list of rows), got {_short(adjacency)}")
    n = len(adjacency)
    rows: list[tuple[int, ...]] = []
    for i, row in enumerate(adjacency):
        if not isinstance(row, (list, tuple)):
            raise InputError("adjacency", f"row {i} is {_short(row)}, not a list of {n} link weights")
        if len(row) != n:
            raise InputError("adjacency", f"row {i} has {len(row)} entries; the matrix must be square ({n} x {n})")
        for j, w in enumerate(row):
            if isinstance(w, bool) or not isinstance(w, int) or not 0 <= w <= MAX_WEIGHT:
                raise InputError(
                    "adjacency",
                    f"entry [{i}][{j}] = {_short(w)} is not an integer link weight 0-{MAX_WEIGHT} (link weights: {_WEIGHT_HELP})",
                )
        rows.append(tuple(row))
    return tuple(rows)


def _short(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (int, float, str, bool, type(None))) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _matrix_from_links(gpus: int, links: Iterable[tuple[int, int, int]]) -> list[list[int]]:
    m = [[0] * gpus for _ in range(gpus)]
    for i, j, w in links:
        m[i][j] = m[j][i] = w
    return m


def _visible_indices(value: str, gpus: int) -> list[int]:
    """CUDA_VISIBLE_DEVICES as indices (CUDA stops at the first invalid entry, so do we)."""
    items = [v.strip() for v in value.split(",")]
    if items == [""]:
        raise InputError("CUDA_VISIBLE_DEVICES", "is empty: no GPU is visible to this process")
    out: list[int] = []
    for item in items:
        # ASCII digits, bounded: "²".isdigit() is True and int("²") a ValueError, and a
        # 5,000-digit index passed int()'s limit.
        if re.fullmatch(r"[0-9]{1,9}", item) is None:
            if not out:
                raise InputError(
                    "CUDA_VISIBLE_DEVICES",
                    f"{clip(value)!r}: only integer indices are understood here; use Topology.detect(visible=False).subset([...])",
                )
            break
        idx = int(item)
        if idx >= gpus or idx in out:
            break
        out.append(idx)
    return out


# -- detection ------------------------------------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# ASCII digits, at most 9 (a GPU index or NVLink count; int() of 5,000 digits raised).
_GPU = re.compile(r"^GPU([0-9]{1,9})$")
_NV = re.compile(r"^NV([0-9]{1,9})$")


def parse_nvidia_smi_topo(text: str) -> list[list[int]]:
    """The link-weight matrix from the text of ``nvidia-smi topo -m`` (``--matrix``).

    Reads the header's ``GPU0 GPU1 ...`` columns and the rows that start with ``GPUi``;
    NIC columns and rows, CPU/NUMA affinity columns, the legend and terminal escape codes
    are ignored. ``NV1`` is a single NVLink (2), ``NV2`` and more a bonded set (3);
    ``PIX``, ``PXB``, ``PHB``, ``NODE``, ``SYS`` (and the old ``SOC``) are PCIe (1); ``X``
    is the GPU itself. Anything else raises ``InputError("nvidia-smi", ...)`` naming the
    cell, as does text without a GPU matrix.
    """
    lines = [_ANSI.sub("", line).rstrip() for line in text.splitlines()]
    header: Optional[list[str]] = None
    rows: dict[int, list[str]] = {}
    for line in lines:
        tokens = line.split()
        m = _GPU.match(tokens[0]) if tokens else None
        if m is None:
            if header is not None and tokens and tokens[0].lower().startswith("legend"):
                break
            continue
        if "X" not in tokens:  # the header: GPU0 GPU1 ... (NICs, affinity columns)
            if header is None:
                header = tokens
        elif header is not None:  # a GPU's row: GPUi <cells>; its own cell is X
            rows[int(m.group(1))] = tokens[1:]
    if header is None:
        raise InputError(
            "nvidia-smi", "no GPU matrix found (expected a header line 'GPU0 GPU1 ...' as `nvidia-smi topo -m` prints)"
        )
    columns: list[int] = []
    for token in header:
        m = _GPU.match(token)
        if not m:
            break
        columns.append(int(m.group(1)))
    n = len(columns)
    if columns != list(range(n)):
        raise InputError(
            "nvidia-smi",
            f"GPU columns are {', '.join(f'GPU{c}' for c in columns)}; expected GPU0 to GPU{n - 1} in order",
        )
    missing = [i for i in range(n) if i not in rows]
    if missing:
        raise InputError("nvidia-smi", f"no row for GPU{missing[0]} in the matrix")
    matrix = [[0] * n for _ in range(n)]
    for i in range(n):
        cells = rows[i]
        if len(cells) < n:
            raise InputError("nvidia-smi", f"row GPU{i} has {len(cells)} cells; expected at least {n}")
        for j in range(n):
            code = cells[j].upper()
            nv = _NV.match(code)
            if code == "X":
                if i != j:
                    raise InputError("nvidia-smi", f"GPU{i}-GPU{j} is 'X' (self) off the diagonal")
                continue
            if i == j:
                raise InputError("nvidia-smi", f"GPU{i}-GPU{i} is {cells[j]!r}; expected 'X' (self)")
            if nv:
                matrix[i][j] = nvlink_weight(int(nv.group(1)))
            elif code in PCIE_CODES:
                matrix[i][j] = 1
            else:
                raise InputError(
                    "nvidia-smi",
                    f"GPU{i}-GPU{j} link {clip(cells[j])!r} is not understood; expected NV#, {', '.join(sorted(PCIE_CODES))} or X",
                )
    return matrix


def _run_nvidia_smi() -> str:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        raise InputError("detect", "no NVIDIA GPU found: nvidia-smi is not on PATH; use a preset or an adjacency file")
    try:
        # Bytes that are not UTF-8 are replaced (they raised UnicodeDecodeError); the
        # matrix's own tokens are ASCII.
        p = subprocess.run(
            [exe, "topo", "-m"],
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InputError("detect", f"nvidia-smi topo -m did not run: {e}") from None
    if p.returncode != 0:
        first = (p.stderr or p.stdout).strip().splitlines()
        raise InputError(
            "detect", f"nvidia-smi topo -m failed (status {p.returncode}): {first[0] if first else 'no output'}"
        )
    return p.stdout


def _bus_id(pci: Any) -> tuple[int, int, int, int]:
    """NVML's PCI bus id (``00000000:06:00.0``, bytes or str, either length of domain) as numbers."""
    raw = getattr(pci, "busId", pci)
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    m = re.match(r"^\s*([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\.([0-9a-fA-F]+)", text)
    if m is None:
        raise InputError("detect", f"NVML returned an unreadable PCI bus id {text!r}")
    domain, bus, device, function = (int(x, 16) for x in m.groups())
    return domain, bus, device, function


def nvml_adjacency(nvml: Any) -> list[list[int]]:
    """The link-weight matrix from NVML (``nvml`` is the ``pynvml`` module, or a stand-in in tests).

    For every GPU and each of its NVLinks that is up, NVML names the PCI device at the far
    end. Links to another GPU are counted per pair (1 -> weight 2, 2 or more -> 3). Links
    to anything else are NVSwitch ports (or an IBM NPU): GPUs on switches reach each other
    at the smaller of their switch link counts. Pairs without NVLink are PCIe (1), whatever
    the PCIe path, as in the MXNet multi-tree proposal (seed 003).
    """
    nvml.nvmlInit()
    try:
        count = int(nvml.nvmlDeviceGetCount())
        if count < 1:
            raise InputError("detect", "NVML sees no GPU")
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        index_of = {_bus_id(nvml.nvmlDeviceGetPciInfo(h)): i for i, h in enumerate(handles)}
        max_links = int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))
        enabled = int(getattr(nvml, "NVML_FEATURE_ENABLED", 1))
        remote_info = (
            getattr(nvml, "nvmlDeviceGetNvLinkRemotePciInfo_v2", None) or nvml.nvmlDeviceGetNvLinkRemotePciInfo
        )
        nvlinks = [[0] * count for _ in range(count)]
        switch_links = [0] * count
        error_type = getattr(nvml, "NVMLError", Exception)
        for i, h in enumerate(handles):
            for link in range(max_links):
                try:
                    if int(nvml.nvmlDeviceGetNvLinkState(h, link)) != enabled:
                        continue
                    remote = _bus_id(remote_info(h, link))
                except error_type:
                    continue  # link not present or NVLink not supported on this GPU
                j = index_of.get(remote)
                if j is None:
                    switch_links[i] += 1
                elif j != i:
                    nvlinks[i][j] += 1
        matrix = [[0] * count for _ in range(count)]
        for i in range(count):
            for j in range(count):
                if i == j:
                    continue
                links = max(nvlinks[i][j], nvlinks[j][i]) or min(switch_links[i], switch_links[j])
                matrix[i][j] = nvlink_weight(links) if links else 1
        return matrix
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting down is best effort
            pass


__all__ = [
    "DEFAULT_ARRAY_BOUND",
    "DEFAULT_PENALTY",
    "LINK_NAMES",
    "PRESETS",
    "Plan",
    "Step",
    "Topology",
    "Transfer",
    "Tree",
    "TreeEdge",
    "nvlink_weight",
    "nvml_adjacency",
    "parse_nvidia_smi_topo",
]
