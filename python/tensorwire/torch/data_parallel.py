"""``ScheduledDataParallel``: data-parallel training whose gradient traffic follows the
core's scheduling policies (Guo 2019's ByteScheduler; DDP-like FIFO; Horovod-like fusion).

What happens in one iteration:

1. ``loss.backward()``: a post-accumulate-grad hook on every parameter takes its gradient
   (``param.grad`` is left ``None``) and hands it to the engine: one task per piece of at
   most ``partition`` bytes (the core's ``partition``).
2. The leader's core scheduler releases groups of tasks by the mode's policy within the
   credit; every worker starts the same operations in the same order on the transport
   (all-reduce by default), asynchronously, while backward goes on.
3. When every piece of a parameter is averaged, that parameter alone is stepped by the
   user's optimizer class (see :mod:`tensorwire.torch.optim`: exactly the same arithmetic).
4. ``optimizer.step()`` only closes the iteration: it does not wait. The next forward pass
   waits, module by module, only for the parameters that module owns (forward pre-hooks):
   layer 1 of the next iteration can run while the last layers' gradients are still on the
   wire. This is Guo 2019's "crossing the global barrier".

The training loop stays ``zero_grad(); loss.backward(); optimizer.step()``; call
:meth:`ScheduledDataParallel.synchronize` before reading parameters outside a forward
pass (evaluation on another copy, checkpointing, comparing).
"""

from __future__ import annotations

import datetime
import time
from typing import Any, Callable, Optional, Union

import torch
import torch.distributed as dist

from tensorwire._core import InputError
from tensorwire.limits import check_positive, check_timeout
from tensorwire.torch import optim as _optim
from tensorwire.torch.coordinator import CommunicationError, ConfigChange, Coordinator
from tensorwire.torch.tasks import SchedulerConfig, Size, runtime_strategy
from tensorwire.torch.transport import AllReduce, Transport, member_group, stream_group
from tensorwire.torch.tuning import AutoTune, Trial, Tuner


class ScheduledDataParallel(torch.nn.Module):
    """Wraps ``module`` for data-parallel training with scheduled gradient communication.

    Args:
        module: the model (already on its device).
        optimizer: the user's optimizer over ``module``'s parameters; its ``step`` becomes
            the end-of-iteration marker and each parameter is stepped on its own with the
            same class and hyperparameters (SGD, Adam, AdamW, ...).
        mode: ``priority`` (layers nearest the input first, partition and credit; Guo 2019, seed 004;
            the default), ``fifo`` (ready order, like DDP) or ``fusion`` (ready order through
            a Horovod fusion buffer). Sugar for a strategy spec: see ``strategy``.
        partition: largest piece of a tensor, bytes or text (``"512KiB"``); default 4 MiB
            in ``priority``, whole tensors otherwise. Rounded down to whole elements.
        credit: most bytes in flight (committed to the stream), bytes or text; default
            16 MiB in ``priority``; otherwise one all-reduce at a time (as on an NCCL stream;
            the simulator's rule), every ready one committed to the stream at once.
        fusion_bytes, fusion_cycle_s: fusion buffer threshold (bytes) and cycle (seconds);
            ``fusion`` only (defaults 64 MiB and 5 ms, Horovod's before 0.21).
        in_flight: most collectives in flight (committed to the runtime's stream, which
            runs one at a time) at once, also under a credit; later decisions stay with
            the scheduler, where priority applies. Default: unbounded (the credit, if any,
            bounds them); with a transport that is not a stream, one at a time without a
            credit.
        group: the data-parallel process group (None: the default group, or the
            transport's). Its first rank is the leader, which decides the order.
        transport: where bytes go (default: :class:`~tensorwire.torch.AllReduce` on ``group``;
            or a :class:`~tensorwire.torch.ParameterServer`). A transport you pass stays
            yours: close it when done (for a parameter server that releases the server).
        autotune: ``True`` or an :class:`~tensorwire.torch.AutoTune` to tune partition and
            credit while training (``priority`` only).
        strategy: a strategy spec the simulator predicts, e.g.
            ``"ring:schedule=priority,partition=4MiB,credit=16MiB"`` or
            ``"ring:fusion=64MiB,cycle=5ms"``: the core parses it and configures the
            scheduler with its own settings and defaults
            (:meth:`~tensorwire.torch.SchedulerConfig.from_strategy`); instead of ``mode``
            and its options. A spec the transport would not run as written is refused
            (:func:`~tensorwire.torch.tasks.runtime_strategy`): ``ring`` specs on the
            all-reduce transport, ``ps`` on a parameter server (a transport of your own: any
            name), with the scheduler's options only.
        timeout_s: bound on every communication wait (Gloo's timeout); a dead or stuck
            peer makes every rank raise :class:`~tensorwire.torch.CommunicationError`.
        broadcast: copy the leader's parameters and buffers to every worker first (as DDP).
        on_synchronized: called with the iteration's number once every parameter of
            that iteration is updated on this rank (on the communication thread: keep it
            short; for timing and logging, e.g. the testbed's per-iteration completions).
        max_grad_norm: clip the averaged gradients to this global 2-norm before the
            optimizer steps, by ``torch.nn.utils.clip_grad_norm_``'s rule (every gradient
            times ``min(1, max_grad_norm / (norm + 1e-6))``); the norm of the last iteration
            synchronized is :attr:`last_grad_norm`. Pass it instead of calling
            ``clip_grad_norm_``, which sees no gradients here (``param.grad`` stays None) and
            clips nothing. The norm needs every gradient of the iteration, so parameters are
            stepped together once the last is averaged and the next forward pass waits for
            all of them: communication still overlaps backward in the mode's order, but the
            optimizer no longer crosses the global barrier.

    Construct it on every worker of ``group`` in the same order (it creates a process
    group). Limits: one ``backward`` per ``step`` (no gradient accumulation), dense
    gradients of one dtype, buffers are not synchronised after the first broadcast, and
    ``param.grad`` stays ``None`` (clip by global norm with ``max_grad_norm``).
    """

    def __init__(
        self,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        mode: Optional[str] = None,
        partition: Size = None,
        credit: Size = None,
        fusion_bytes: Size = None,
        fusion_cycle_s: Union[float, str, None] = None,
        group: Optional[dist.ProcessGroup] = None,
        in_flight: Optional[int] = None,
        *,
        strategy: Optional[str] = None,
        transport: Optional[Transport] = None,
        autotune: Union[bool, AutoTune, None] = None,
        timeout_s: Optional[float] = None,
        broadcast: bool = True,
        on_synchronized: Optional[Callable[[int], None]] = None,
        max_grad_norm: Optional[float] = None,
    ) -> None:
        super().__init__()
        if not isinstance(module, torch.nn.Module):
            raise InputError("module", f"{type(module).__name__} is not a torch.nn.Module")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise InputError("optimizer", f"{type(optimizer).__name__} is not a torch.optim.Optimizer")
        _check_group(group, "group")
        if transport is not None:
            _check_transport(transport)
        if strategy is None:
            config = SchedulerConfig.make(
                mode or "priority", partition, credit, fusion_bytes, fusion_cycle_s, in_flight
            )
        else:
            given = [
                n
                for n, v in (
                    ("mode", mode),
                    ("partition", partition),
                    ("credit", credit),
                    ("fusion_bytes", fusion_bytes),
                    ("fusion_cycle_s", fusion_cycle_s),
                    ("in_flight", in_flight),
                )
                if v is not None
            ]
            if given:
                raise InputError(given[0], "give either strategy= or mode= with its options, not both")
            if not isinstance(strategy, str):
                raise InputError("strategy", f"{strategy!r} must be a strategy spec such as 'ring:schedule=priority'")
            # A spec the transport would not run as written is refused (it would be predicted,
            # then run as something else): the transport's strategies, the scheduler's options.
            names = ("ring",) if transport is None else getattr(transport, "strategies", None)
            config = runtime_strategy(strategy, names)
        if autotune is True:
            autotune = AutoTune()
        if autotune is not None and autotune is not False and not isinstance(autotune, AutoTune):
            raise InputError("autotune", f"{autotune!r} must be True, False or an AutoTune")
        if isinstance(autotune, AutoTune) and config.mode != "priority":
            raise InputError(
                "autotune", f"tunes partition and credit, which mode {config.mode!r} does not use; use mode='priority'"
            )
        if on_synchronized is not None and not callable(on_synchronized):
            raise InputError("on_synchronized", f"{on_synchronized!r} is not callable")
        if timeout_s is not None:
            timeout_s = check_timeout(timeout_s)
        if max_grad_norm is not None:
            max_grad_norm = check_positive("max_grad_norm", max_grad_norm, "a gradient norm")
        if not dist.is_available() or not dist.is_initialized():
            raise InputError(
                "group",
                "torch.distributed is not initialized; call tensorwire.torch.init_process_group() (torchrun sets the environment)",
            )
        # Everything that can be refused is refused before any collective call.
        lazy = [n for n, p in module.named_parameters() if torch.nn.parameter.is_lazy(p)]
        if lazy:
            more = f" (and {len(lazy) - 1} more)" if len(lazy) > 1 else ""
            raise InputError(
                "module",
                f"parameter {lazy[0]!r}{more} is not initialised yet (a lazy module such as nn.LazyLinear); "
                "run one forward pass first (a batch under torch.no_grad() will do), then wrap the model",
            )
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad and p.numel() > 0]
        if not named:
            raise InputError("module", "has no parameters that need gradients")
        dtypes = {p.dtype for _, p in named}
        if len(dtypes) != 1:
            raise InputError(
                "module", f"parameters of several dtypes {sorted(map(str, dtypes))}; one dtype is supported"
            )
        self._names = [n for n, _ in named]
        self._params = [p for _, p in named]
        self._dtype = self._params[0].dtype
        self.element_bytes = self._params[0].element_size()
        self._steps = _optim.split(optimizer, self._params, self._names)
        if transport is not None and getattr(transport, "is_server", False):
            raise InputError(
                "transport", f"rank {dist.get_rank()} is the parameter server; call transport.serve() there"
            )
        if transport is not None and group is None:
            group = transport.group
        self.module = module
        self.optimizer = optimizer
        self.group = group
        ranks = dist.get_process_group_ranks(group) if group is not None else list(range(dist.get_world_size()))
        if dist.get_rank() not in ranks:
            raise InputError("group", f"rank {dist.get_rank()} is not in the data-parallel group {ranks}")
        timeout = datetime.timedelta(seconds=timeout_s) if timeout_s is not None else None
        self._own_transport: Optional[AllReduce] = None
        if transport is None:
            # A group of its own (a stream on Gloo, else an ordinary group): the timeout
            # applies, and the user's collectives on the default group never interleave
            # with the communication thread's. With a stream, ``group`` only names the ranks.
            stream = stream_group(ranks, timeout) if len(ranks) > 1 else None
            made = member_group(ranks, timeout, local=True) if len(ranks) > 1 and stream is None else None
            transport = self._own_transport = AllReduce(
                made if made is not None else group, stream, owns_group=made is not None
            )
        self.transport: Transport = transport
        config = config.for_transport(getattr(transport, "collective", True), getattr(transport, "ordered", False))
        self.ranks = ranks
        self.leader = ranks[0]
        self.is_leader = dist.get_rank() == self.leader

        if len(ranks) > 1:
            self._check_same_model()
        if broadcast:
            self._broadcast_state()
        self._hyper: dict[int, list[dict[str, Any]]] = {}
        self._on_synchronized = on_synchronized
        #: Per iteration in flight: parameters not updated yet (only with on_synchronized).
        self._left: dict[int, int] = {}
        self._max_grad_norm = max_grad_norm
        #: Every parameter's index: what a forward pass waits for where clipping steps them together.
        self._every_param = list(range(len(self._params)))
        #: With max_grad_norm: per iteration, the averaged gradients held until the last.
        self._held: dict[int, dict[int, torch.Tensor]] = {}
        #: The global 2-norm of the averaged gradients of the last iteration stepped, before
        #: clipping (``clip_grad_norm_``'s return value); None without ``max_grad_norm``.
        self.last_grad_norm: Optional[float] = None

        # Which module's forward waits for which parameters is decided after the first
        # forward pass (see _assign): every module gets a pre-hook until then.
        self._index = {id(p): i for i, p in enumerate(self._params)}
        self._mname = {m: name for name, m in module.named_modules()}
        self._depth = {m: (name.count(".") + 1 if name else 0) for m, name in self._mname.items()}
        self._first_call: dict[torch.nn.Module, int] = {}
        self._waits: Optional[dict[torch.nn.Module, list[int]]] = None

        control = member_group(ranks, timeout, local=True, backend="gloo") if len(ranks) > 1 else None
        self._engine = Coordinator(
            numels=[p.numel() for p in self._params],
            element_bytes=self.element_bytes,
            layers=self._layers,
            config=config,
            transport=self.transport,
            ranks=ranks,
            control_group=control,
            timeout_s=timeout_s,
            on_reduced=self._apply_update,
            owns_transport=self._own_transport is not None,
        )
        self._iteration = 0
        self._seen: set[int] = set()
        self._handles: list[Any] = []
        for i, p in enumerate(self._params):
            self._handles.append(p.register_post_accumulate_grad_hook(self._grad_hook(i)))  # type: ignore[no-untyped-call]
        for m in self._depth:
            self._handles.append(m.register_forward_pre_hook(self._pre_hook))
        self._tuner = Tuner(autotune, self.element_bytes) if isinstance(autotune, AutoTune) and self.is_leader else None
        self._original_step = optimizer.step
        self._patch_optimizer()
        self._closed = False

    # -- public ---------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the wrapped module (its forward pre-hooks wait for fresh parameters)."""
        return self.module(*args, **kwargs)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Ends the iteration (what ``optimizer.step()`` now does); does not wait.

        Parameters that got no gradient this iteration contribute zeros (as DDP's
        ``find_unused_parameters``). With a closure, runs it (under grad) first.
        """
        self._check_open()
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        it = self._iteration
        self._begin(it)
        for i, p in enumerate(self._params):
            if i not in self._seen:
                self._engine.notify_ready(it, i, torch.zeros(p.numel(), dtype=p.dtype, device=p.device))
        self._seen = set()
        self._iteration += 1
        if self._tuner is not None:
            cfg, since = self._engine.active_config
            ask = self._tuner.after_step(it, time.monotonic(), (cfg.partition_bytes, cfg.credit_bytes, since))
            if ask is not None:
                self._engine.request_config(cfg.with_limits(*ask))
        return loss

    def synchronize(self) -> None:
        """Waits until every gradient handed in is averaged and every parameter updated."""
        self._engine.synchronize()

    def close(self) -> None:
        """Synchronizes, stops the communication threads, removes the hooks and gives the
        optimizer its own ``step`` back (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._engine.close()
        finally:
            for h in self._handles:
                h.remove()
            self._handles = []
            self.optimizer.step = self._original_step  # type: ignore[method-assign]

    def __enter__(self) -> ScheduledDataParallel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def iteration(self) -> int:
        """Iterations ended so far (``step()`` calls)."""
        return self._iteration

    @property
    def config(self) -> SchedulerConfig:
        """The configuration the leader schedules with now (followers: the one they were built with)."""
        return self._engine.config

    @property
    def config_history(self) -> list[ConfigChange]:
        """Every configuration in effect and the iteration it began; the same on every rank
        once those iterations are synchronized."""
        return list(self._engine.history)

    @property
    def tuning_trials(self) -> list[Trial]:
        """Auto-tuning trials so far (leader only; empty elsewhere)."""
        return list(self._tuner.trials) if self._tuner is not None else []

    @property
    def groups_started(self) -> int:
        """Communication operations started on this rank so far."""
        return self._engine.groups_started

    # -- internals --------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this ScheduledDataParallel is closed")
        failed = self._engine.failed
        if failed is not None:
            raise failed

    def _check_same_model(self) -> None:
        """Refuses, on every rank alike, models whose trainable parameters differ between
        ranks in name, shape or dtype (DDP checks the same at construction): the
        broadcast and the first all-reduce would otherwise wait until the timeout, then
        blame a dead peer."""
        mine = [(n, tuple(p.shape), str(p.dtype)) for n, p in zip(self._names, self._params)]
        every: list[Any] = [None] * len(self.ranks)
        dist.all_gather_object(every, mine, group=self.group)
        for rank, theirs in zip(self.ranks, every):
            if theirs != every[0]:
                first = next(
                    (i for i, (a, b) in enumerate(zip(every[0], theirs)) if a != b), min(len(theirs), len(every[0]))
                )
                lead = every[0][first] if first < len(every[0]) else "nothing"
                other = theirs[first] if first < len(theirs) else "nothing"
                raise InputError(
                    "module",
                    f"rank {rank}'s model differs from rank {self.ranks[0]}'s: parameter {first} is {other} there, "
                    f"{lead} on rank {self.ranks[0]} (name, shape, dtype); every rank must wrap the same model",
                )

    def _broadcast_state(self) -> None:
        tensors = [p.detach() for p in self.module.parameters()] + [b for b in self.module.buffers()]
        by_dtype: dict[tuple[torch.dtype, torch.device], list[torch.Tensor]] = {}
        for t in tensors:
            by_dtype.setdefault((t.dtype, t.device), []).append(t)
        with torch.no_grad():
            for ts in by_dtype.values():
                flat = torch.cat([t.reshape(-1) for t in ts])
                dist.broadcast(flat, src=self.leader, group=self.group)
                for t, src in zip(ts, torch.split(flat, [t.numel() for t in ts])):
                    t.copy_(src.view_as(t))

    def _patch_optimizer(self) -> None:
        opt = self.optimizer

        def step(closure: Optional[Callable[[], Any]] = None) -> Any:
            opt._opt_called = True  # type: ignore[attr-defined]  # torch LR schedulers check this
            return self.step(closure)

        step._wrapped_by_lr_sched = True  # type: ignore[attr-defined]  # keep schedulers from re-wrapping
        opt.step = step  # type: ignore[method-assign]

    def _assign(self) -> dict[torch.nn.Module, list[int]]:
        """Each parameter waits in the pre-hook of the deepest module that ran in the first
        forward pass and holds it (directly or below): a Linear for its weight, the module
        that reads a ParameterList, or the wrapped model for anything else. A tied
        parameter waits in each such module."""
        if self._waits is None:
            called = sorted(self._first_call, key=lambda m: self._depth[m])
            holders: dict[int, list[torch.nn.Module]] = {}
            for m in called:
                for p in m.parameters():
                    i = self._index.get(id(p))
                    if i is None:
                        continue
                    # Deeper holders replace the ancestors they sit in.
                    keep = [h for h in holders.get(i, []) if not self._contains(h, m)]
                    holders[i] = keep + [m]
            waits: dict[torch.nn.Module, list[int]] = {}
            for i in range(len(self._params)):
                for m in holders.get(i, [self.module]):
                    waits.setdefault(m, []).append(i)
            self._waits = waits
        return self._waits

    def _contains(self, outer: torch.nn.Module, inner: torch.nn.Module) -> bool:
        o, i = self._mname[outer], self._mname[inner]
        return bool(o != i and (o == "" or i.startswith(o + ".")))

    def _layers(self) -> list[int]:
        """Forward position of each tensor (first-call order of the module it waits in)."""
        late = len(self._first_call)
        layers = [late] * len(self._params)
        for m, idx in self._assign().items():
            pos = self._first_call.get(m, late)
            for i in idx:
                layers[i] = min(layers[i], pos)
        return layers

    def _begin(self, it: int) -> None:
        if it not in self._hyper:
            self._hyper[it] = _optim.hyperparameters(self.optimizer)
            oldest = min(self._engine.updated)
            for k in [k for k in self._hyper if k <= oldest]:
                del self._hyper[k]

    def _grad_hook(self, i: int) -> Callable[[torch.Tensor], None]:
        def hook(p: torch.Tensor) -> None:
            g = p.grad
            if g is None:
                return
            p.grad = None
            if self._closed:
                raise RuntimeError("this ScheduledDataParallel is closed; backward cannot synchronise gradients")
            if g.is_sparse:
                raise InputError(
                    "module", f"parameter {self._names[i]!r} has a sparse gradient; only dense gradients are supported"
                )
            if i in self._seen:
                raise RuntimeError(
                    f"parameter {self._names[i]!r} got a second gradient in iteration {self._iteration}: call "
                    "optimizer.step() after every backward (gradient accumulation is not supported)"
                )
            self._seen.add(i)
            it = self._iteration
            self._begin(it)
            self._engine.notify_ready(it, i, g.detach().contiguous().view(-1))

        return hook

    def _pre_hook(self, module: torch.nn.Module, args: Any) -> None:
        if self._waits is None:
            if module not in self._first_call:
                self._first_call[module] = len(self._first_call)
            if self._iteration == 0:
                return
        # Clipped steps happen together, after the last gradient: wait for all of them.
        wait = self._every_param if self._max_grad_norm is not None else self._assign().get(module)
        if wait and self._iteration > 0:
            self._engine.wait_for(wait, self._iteration - 1, f"the forward pass of {type(module).__name__}")

    def _apply_update(self, it: int, i: int, grad: torch.Tensor) -> None:
        """Steps parameter ``i`` with its averaged gradient of iteration ``it`` (on the
        communication thread), or with ``max_grad_norm`` holds it until the iteration's last
        and steps them all, clipped. The engine marks ``i`` updated when this returns."""
        if self._max_grad_norm is None:
            self._step(it, i, grad)
            if self._on_synchronized is not None and self._was_last(it):
                self._on_synchronized(it)
            return
        held = self._held.setdefault(it, {})
        held[i] = grad
        if len(held) < len(self._params):
            return
        del self._held[it]
        self.last_grad_norm = clip_by_global_norm(list(held.values()), self._max_grad_norm)
        for j, g in held.items():
            self._step(it, j, g)
        if self._on_synchronized is not None:
            self._on_synchronized(it)

    def _was_last(self, it: int) -> bool:
        """Counts one more parameter of iteration ``it`` updated; whether it was the last."""
        left = self._left.get(it, len(self._params)) - 1
        if left:
            self._left[it] = left
            return False
        self._left.pop(it, None)
        return True

    def _step(self, it: int, i: int, grad: torch.Tensor) -> None:
        s = self._steps[i]
        s.step(grad, self._hyper[it][s.group_index])


def clip_by_global_norm(grads: list[torch.Tensor], max_norm: float) -> float:
    """Scales ``grads`` in place so that their global 2-norm is at most ``max_norm``, by
    ``torch.nn.utils.clip_grad_norm_``'s rule (each times ``min(1, max_norm / (norm +
    1e-6))``, norms in the gradients' dtype); returns the norm before clipping.

    >>> g = [torch.tensor([3.0]), torch.tensor([4.0])]
    >>> clip_by_global_norm(g, 1.0), [round(float(x), 4) for x in torch.cat(g)]
    (5.0, [0.6, 0.8])
    """
    norms = torch.stack([torch.linalg.vector_norm(g, 2) for g in grads])
    total = torch.linalg.vector_norm(norms, 2)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(coef.to(g.dtype))
    return float(total)


def _check_group(group: Any, field: str) -> None:
    """Refuses a ``group`` that is not a process group (None: the default group), naming
    ``field``: ``group="x"`` was a KeyError from inside torch.distributed, a rank outside
    the group (torch's ``GroupMember.NON_GROUP_MEMBER``) one from further on."""
    if group is None or isinstance(group, dist.ProcessGroup):
        return
    if isinstance(group, int) and not isinstance(group, bool) and group == dist.GroupMember.NON_GROUP_MEMBER:
        raise InputError(
            field, f"rank {dist.get_rank()} is not a member of this group (dist.new_group gave it NON_GROUP_MEMBER)"
        )
    raise InputError(
        field,
        f"{group!r} is not a torch.distributed.ProcessGroup; give one (dist.new_group(ranks)) or None for the default",
    )


def _check_transport(transport: Any) -> None:
    """Refuses a ``transport`` that is not one (see :class:`~tensorwire.torch.transport.Transport`):
    ``transport="ps"`` was an AttributeError ('str' object has no attribute 'group')."""
    lacks = [n for n in ("start", "close") if not callable(getattr(transport, n, None))]
    if not hasattr(transport, "group"):
        lacks.insert(0, "group")
    if lacks:
        hint = (
            "; for a parameter server give transport=tensorwire.torch.ParameterServer() (made on every rank)"
            if isinstance(transport, str)
            else ""
        )
        raise InputError(
            "transport",
            f"{transport!r} is not a transport (it has no {', '.join(lacks)}): give a tensorwire.torch.AllReduce "
            f"or ParameterServer, an object with group, start(pieces) and close(), or None for the all-reduce{hint}",
        )
    _check_group(transport.group, "transport")


__all__ = ["CommunicationError", "ScheduledDataParallel"]
