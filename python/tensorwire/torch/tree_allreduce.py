"""Topology-aware tree all-reduce (the MXNet multi-tree proposal, seed 003) on torch.distributed point-to-point.

One process per GPU of one machine; group rank i is GPU i of the :class:`~tensorwire.gputopo.Topology`.
The core crate plans the transfers (``Topology.plan``); this module only posts them:
round by round, every send and receive of the round at once (``batch_isend_irecv``), then a
wait, then the received partial sums are added. Below ``array_bound`` elements (default
10^7, the MXNet multi-tree proposal's ``MXNET_KVSTORE_TREE_ARRAY_BOUND``) one tree carries the whole tensor
(2 ceil(log2 n) latency-bound steps); from it on, ``trees`` trees (default one per GPU)
each reduce and broadcast one slice, which spreads the bytes over more links.

Three ways in:

- :func:`tree_allreduce` ``(tensor, topology, group=None)``: sums in place, like
  ``dist.all_reduce``; every rank calls it with the same size and dtype.
- :func:`tree_allreduce_hook` with a :class:`TreeAllReduceState`: a DDP communication
  hook (``model.register_comm_hook(state, tree_allreduce_hook)``), averaging.
- :class:`TreeAllReduce`: a transport for the runtime's scheduler
  (``ScheduledDataParallel(..., transport=TreeAllReduce(topology))``), averaging.

The stateful two run the transfers on a private process group and, for CPU tensors, on one
background thread in submission order, so the training thread goes on computing.
torch is imported when first needed; importing this module needs only tensorwire.
"""

from __future__ import annotations

import datetime
import queue
import threading
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from tensorwire._core import InputError
from tensorwire.gputopo import DEFAULT_ARRAY_BOUND, DEFAULT_PENALTY, Plan, Topology
from tensorwire.limits import check_timeout
from tensorwire.torch import exit_guard

if TYPE_CHECKING:
    import torch
    import torch.distributed as dist
    from torch._C._distributed_c10d import GradBucket
    from torch.futures import Future


def _check(topology: Topology, group: Optional[dist.ProcessGroup]) -> tuple[int, list[int]]:
    """(this process's GPU index, global rank of each GPU) after validating the group."""
    import torch.distributed as dist

    if not isinstance(topology, Topology):
        raise InputError("topology", f"expected a tensorwire.gputopo.Topology, got {type(topology).__name__}")
    if not dist.is_available() or not dist.is_initialized():
        raise InputError(
            "group", "torch.distributed is not initialized; call tensorwire.torch.init_process_group() first"
        )
    world = dist.get_world_size(group)
    rank = dist.get_rank(group)
    if rank < 0:
        raise InputError("group", f"process {dist.get_rank()} is not a member of the group")
    if world != topology.gpus:
        raise InputError(
            "topology",
            f"{topology.gpus} GPUs ({topology.source}) but the group has {world} processes; "
            "tree all-reduce runs one process per GPU of the topology (see Topology.subset)",
        )
    peers = list(range(world)) if group is None else [dist.get_global_rank(group, g) for g in range(world)]
    return rank, peers


def _execute(
    flat: torch.Tensor, plan: Plan, gpu: int, peers: Sequence[int], group: Optional[dist.ProcessGroup]
) -> None:
    """Runs GPU ``gpu``'s part of ``plan`` on the contiguous 1-D ``flat``, in place."""
    import torch
    import torch.distributed as dist

    for steps in plan.steps(gpu):
        ops: list[dist.P2POp] = []
        adds: list[tuple[torch.Tensor, torch.Tensor]] = []
        for s in steps:
            view = flat[s.start : s.end]
            if s.send:
                ops.append(dist.P2POp(dist.isend, view, peers[s.peer], group, s.tag))
            elif s.reduce:
                buf = torch.empty_like(view)
                ops.append(dist.P2POp(dist.irecv, buf, peers[s.peer], group, s.tag))
                adds.append((view, buf))
            else:
                ops.append(dist.P2POp(dist.irecv, view, peers[s.peer], group, s.tag))
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        for view, buf in adds:
            view.add_(buf)


def tree_allreduce(
    tensor: torch.Tensor,
    topology: Topology,
    group: Optional[dist.ProcessGroup] = None,
    *,
    array_bound: int = DEFAULT_ARRAY_BOUND,
    trees: int = 0,
    penalty: float = DEFAULT_PENALTY,
) -> torch.Tensor:
    """Sums ``tensor`` over ``group`` (None: the default group) in place and returns it.

    The result equals ``dist.all_reduce(tensor)`` (``SUM``) up to the order of floating
    point additions, and it is the same on every rank, bit for bit (the root's sum is
    broadcast). Every rank of the group must call it with a tensor of the same number of
    elements and dtype; the group has one process per GPU of ``topology`` (group rank i is
    GPU i). ``array_bound``: elements from which ``trees`` trees (0: one per GPU) share
    the work, one slice each; below it the first tree carries all. ``penalty``: the MXNet multi-tree proposal's
    link-usage penalty between trees. Blocks until this rank's part is done.

    On NCCL the group must have run one collective before (DDP's construction, a
    ``dist.barrier`` ...), because a first batch of point-to-point operations must
    include every rank there.

    Cost: 2 ceil(log2 n) rounds of point-to-point messages; one tree moves the whole
    tensor over each tree link twice, k trees one k-th each over k trees' links.
    """
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise InputError("tensor", f"expected a torch.Tensor, got {type(tensor).__name__}")
    gpu, peers = _check(topology, group)
    plan = topology.plan(tensor.numel(), trees=trees, penalty=penalty, array_bound=array_bound)
    flat = tensor.view(-1) if tensor.is_contiguous() else tensor.contiguous().view(-1)
    _execute(flat, plan, gpu, peers, group)
    if not tensor.is_contiguous():
        tensor.copy_(flat.view(tensor.shape))
    return tensor


class _Worker:
    """One daemon thread that runs jobs in the order they were submitted.

    Every rank submits the same operations in the same order (DDP's bucket order, the
    scheduler leader's group order), so the point-to-point streams match up.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[Optional[tuple[Callable[[], Any], Future[Any]]]] = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], Any]) -> Future[Any]:
        from torch.futures import Future

        fut: Future[Any] = Future()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._jobs.put((job, fut))
        return fut

    def _run(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            job, fut = item
            try:
                fut.set_result(job())
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the future
                fut.set_exception(e)

    def close(self, timeout_s: Optional[float] = None) -> bool:
        """Ends the thread after the jobs already submitted; False if it was still running
        after ``timeout_s`` seconds (None: wait as long as they take)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join(timeout_s)
            if thread.is_alive():
                with self._lock:
                    self._thread = thread
                return False
        return True


class _Runner:
    """What the hook and the transport share: checked arguments, a private group, a worker."""

    def __init__(
        self,
        topology: Topology,
        group: Optional[dist.ProcessGroup],
        array_bound: int,
        trees: int,
        penalty: float,
        timeout_s: Optional[float],
    ) -> None:
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_initialized():
            raise InputError(
                "group", "torch.distributed is not initialized; call tensorwire.torch.init_process_group() first"
            )
        if timeout_s is not None:
            timeout_s = check_timeout(timeout_s)
        if not isinstance(topology, Topology):
            raise InputError("topology", f"expected a tensorwire.gputopo.Topology, got {type(topology).__name__}")
        topology.plan(0, trees=trees, penalty=penalty, array_bound=array_bound)  # checks the arguments now
        ranks = list(range(dist.get_world_size())) if group is None else dist.get_process_group_ranks(group)
        timeout = datetime.timedelta(seconds=timeout_s) if timeout_s is not None else None
        # Collective over the default group: every rank constructs, members or not.
        p2p = dist.new_group(ranks, timeout=timeout)
        self.p2p: Optional[dist.ProcessGroup] = p2p if isinstance(p2p, dist.ProcessGroup) else None
        self.gpu, self.peers = _check(topology, group)
        self.world = len(self.peers)
        self.topology, self.array_bound, self.trees, self.penalty = topology, array_bound, trees, penalty
        if dist.get_backend(self.p2p) == "nccl":
            dist.barrier(group=self.p2p)  # a first collective, so later batches may leave ranks out
        self.worker = _Worker("tensorwire-tree-allreduce")
        self.closed = False
        exit_guard.track(self)

    def close(self) -> None:
        """Stops the worker (after the work already submitted) and destroys the private group."""
        from tensorwire.torch.transport import release_groups

        exit_guard.untrack(self)
        self.worker.close()
        release_groups(self.p2p)
        self.p2p, self.closed = None, True

    def stop_at_exit(self, wait_s: float) -> bool:
        """For :mod:`~tensorwire.torch.exit_guard`: :meth:`close` once the worker has
        finished what was submitted within ``wait_s`` seconds; True if it did."""
        if not self.worker.close(timeout_s=wait_s):
            return False
        self.close()
        return True

    def average(self, flat: torch.Tensor) -> torch.Tensor:
        """Sums the contiguous 1-D ``flat`` over the group in place, divides by the group size."""
        if self.closed:
            raise RuntimeError("this tree all-reduce is closed")
        plan = self.topology.plan(flat.numel(), trees=self.trees, penalty=self.penalty, array_bound=self.array_bound)
        _execute(flat, plan, self.gpu, self.peers, self.p2p)
        flat.div_(self.world)
        return flat


class TreeAllReduceState:
    """State of :func:`tree_allreduce_hook`: the topology, the DDP process group and the plan options.

    Construct it on **every** rank of the default group (it creates a private process
    group, which is collective), after ``init_process_group`` and before training. The
    arguments are checked here: ``process_group`` (None: the default group) must have one
    process per GPU of ``topology``. ``array_bound``, ``trees`` and ``penalty`` are as in
    :func:`tree_allreduce`; ``timeout_s`` bounds each transfer on the private group.
    """

    def __init__(
        self,
        topology: Topology,
        process_group: Optional[dist.ProcessGroup] = None,
        *,
        array_bound: int = DEFAULT_ARRAY_BOUND,
        trees: int = 0,
        penalty: float = DEFAULT_PENALTY,
        timeout_s: Optional[float] = None,
    ) -> None:
        self.process_group = process_group
        self._runner = _Runner(topology, process_group, array_bound, trees, penalty, timeout_s)
        #: Buckets reduced so far.
        self.buckets = 0

    @property
    def topology(self) -> Topology:
        """The GPU topology the trees are laid on."""
        return self._runner.topology

    def close(self) -> None:
        """Stops the background thread (after the buckets already submitted) and destroys
        the private group; the state cannot reduce after this."""
        self._runner.close()


def tree_allreduce_hook(state: TreeAllReduceState, bucket: GradBucket) -> Future[torch.Tensor]:
    """DDP communication hook: averages the bucket with tree all-reduce.

    >>> state = TreeAllReduceState(Topology.preset("p3.16xlarge"))   # doctest: +SKIP
    >>> ddp_model.register_comm_hook(state, tree_allreduce_hook)     # doctest: +SKIP

    CPU buckets (Gloo) are reduced on the state's background thread, in bucket order, so
    backward goes on meanwhile; CUDA buckets are posted from the calling thread (their
    waits only order CUDA streams).
    """
    from torch.futures import Future

    flat = bucket.buffer()
    runner = state._runner
    state.buckets += 1
    if flat.is_cuda:
        fut: Future[torch.Tensor] = Future(devices=[flat.device])
        fut.set_result(runner.average(flat))
        return fut
    return runner.worker.submit(lambda: runner.average(flat))


# DDP's register_comm_hook compares the annotations with torch's own objects; these are
# strings (torch is imported lazily), so the runtime copy drops them (mypy reads the def).
tree_allreduce_hook.__annotations__ = {}


class _TreePending:
    def __init__(self, fut: Future[Any], flat: torch.Tensor, pieces: Sequence[torch.Tensor]) -> None:
        self.fut, self.flat, self.pieces = fut, flat, pieces

    def wait(self) -> None:
        import torch

        self.fut.wait()
        if len(self.pieces) == 1 and self.flat.data_ptr() == self.pieces[0].data_ptr():
            return
        for dst, src in zip(self.pieces, torch.split(self.flat, [p.numel() for p in self.pieces])):
            dst.copy_(src)


class TreeAllReduce:
    """Transport for the runtime's scheduler: each group of pieces averaged by tree all-reduce.

    Follows :class:`tensorwire.torch.transport.Transport`: ``start(pieces)`` returns at once
    with a handle whose ``wait()`` leaves every piece holding the average over ``group``.
    Several pieces are concatenated (one extra copy of the group's bytes each way). Groups
    run one after another on a background thread, in the order ``start`` was called
    (the scheduler issues the same order on every worker).

    Construct it on **every** rank of the default group (it creates a private process
    group). ``group`` (None: the default group) is the data-parallel group, one process
    per GPU of ``topology``; the other arguments are as in :class:`TreeAllReduceState`.
    """

    def __init__(
        self,
        topology: Topology,
        group: Optional[dist.ProcessGroup] = None,
        *,
        array_bound: int = DEFAULT_ARRAY_BOUND,
        trees: int = 0,
        penalty: float = DEFAULT_PENALTY,
        timeout_s: Optional[float] = None,
    ) -> None:
        #: The data-parallel workers' process group (None: the default group).
        self.group = group
        self._runner = _Runner(topology, group, array_bound, trees, penalty, timeout_s)

    @property
    def topology(self) -> Topology:
        """The GPU topology the trees are laid on."""
        return self._runner.topology

    def start(self, pieces: Sequence[torch.Tensor]) -> _TreePending:
        """Starts averaging ``pieces`` (flat, contiguous, one dtype) over the workers; returns at once."""
        import torch

        if not pieces:
            raise InputError("pieces", "a group needs at least one piece")
        flat = pieces[0] if len(pieces) == 1 else torch.cat(list(pieces))
        runner = self._runner
        if flat.is_cuda:  # posted here: NCCL's waits only order CUDA streams
            from torch.futures import Future

            done: Future[Any] = Future(devices=[flat.device])
            done.set_result(runner.average(flat))
            return _TreePending(done, flat, pieces)
        return _TreePending(runner.worker.submit(lambda: runner.average(flat)), flat, pieces)

    def close(self) -> None:
        """This worker sends nothing more: stops the background thread, destroys the private group."""
        self._runner.close()


__all__ = ["TreeAllReduce", "TreeAllReduceState", "tree_allreduce", "tree_allreduce_hook"]
