"""eager-SGD (Li et al. 2019, seed 002, section 5): data-parallel SGD whose gradient all-reduce is partial.

:class:`EagerSGD` wraps any torch optimiser. ``step()`` flattens this rank's gradients,
contributes them to a solo or majority all-reduce (:class:`PartialAllreduce`), writes the
round's result divided by the number of ranks into the gradients, and lets the wrapped
optimiser step. A rank whose gradients come too late for its round gets the round's
result at once (it does not wait) and its gradients stay in the send buffer: they are
added to whatever it contributes next, so every gradient reaches the model exactly once
(:meth:`finish` contributes what is left at the end).

Every rank applies the results of rounds 0, 1, 2, ... in order, one per step, so with a
deterministic optimiser all ranks hold the same model after the same number of steps;
what partial collectives change is *when* a gradient is applied (up to ``staleness``
rounds late), not whether. ``sync_every=K`` still averages the parameters every ``K``
steps (Li et al. 2019, seed 002 does it every few epochs; it also repairs models that drift apart through
non-determinism).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch
import torch.distributed as dist

from tensorwire._core import InputError
from tensorwire.torch.partial.collective import PartialAllreduce, PartialResult


class EagerSGD:
    """eager-SGD around ``optimizer`` (any ``torch.optim.Optimizer``); every rank of
    ``group`` (None: all) must create it, in the same order.

    ``kind``: ``solo`` (never waits; light imbalance) or ``majority`` (about half of the
    ranks contribute fresh gradients; severe imbalance). ``staleness``: the most rounds
    any rank may fall behind (``max_lag`` of :class:`PartialAllreduce`; None: unbounded, as
    in Li et al. 2019 (seed 002); 0: synchronous). ``sync_every``: average the parameters over the ranks
    every this many steps (None: never). ``seed``: the shared random source of majority
    rounds. ``algorithm``, ``timeout_s``: passed to :class:`PartialAllreduce`.
    ``broadcast``: copy the group's first rank's parameters to every rank first (as DDP and
    :class:`~tensorwire.torch.ScheduledDataParallel` do), so that ranks that initialised
    their models differently train one model.
    Gradients are summed in the parameters' dtype (float16, bfloat16, float32 or
    float64), on the CPU.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        kind: str = "solo",
        *,
        group: Optional[dist.ProcessGroup] = None,
        seed: int = 0,
        staleness: Optional[int] = None,
        sync_every: Optional[int] = None,
        algorithm: str = "recursive-doubling",
        timeout_s: float = 1800.0,
        broadcast: bool = True,
    ) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise InputError("optimizer", f"need a torch.optim.Optimizer (got {type(optimizer).__name__})")
        params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
        if not params:
            raise InputError("optimizer", "has no parameters that require gradients")
        dtypes = {p.dtype for p in params}
        if len(dtypes) != 1:
            raise InputError("optimizer", f"parameters of one dtype are needed (got {sorted(map(str, dtypes))})")
        if sync_every is not None and (
            isinstance(sync_every, bool) or not isinstance(sync_every, int) or sync_every < 1
        ):
            raise InputError("sync_every", f"{sync_every!r} must be an integer >= 1 or None")
        self.optimizer = optimizer
        self.params = params
        self.group = group
        self.sync_every = sync_every
        numel = sum(p.numel() for p in params)
        self.partial = PartialAllreduce(
            numel, kind, group, seed, dtype=params[0].dtype, algorithm=algorithm, max_lag=staleness, timeout_s=timeout_s
        )
        self.world_size = self.partial.world_size
        if broadcast and self.world_size > 1:
            source = dist.get_process_group_ranks(group)[0] if group is not None else 0
            with torch.no_grad():
                for p in params:
                    dist.broadcast(p.data, src=source, group=group)
        #: Steps taken on this rank.
        self.steps = 0
        #: The last round's result (its ``contributors`` tell whether this rank's
        #: gradients made it in time).
        self.last: Optional[PartialResult] = None
        #: Steps whose gradients missed their round on this rank (contributed later).
        self.late_steps = 0
        self._finished = False

    # --- the optimiser's interface -------------------------------------------------

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        """The wrapped optimiser's parameter groups (e.g. for learning-rate schedulers)."""
        return self.optimizer.param_groups

    @property
    def state(self) -> Any:
        """The wrapped optimiser's state."""
        return self.optimizer.state

    def zero_grad(self, set_to_none: bool = True) -> None:
        """The wrapped optimiser's ``zero_grad``."""
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        """The wrapped optimiser's state dict."""
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads the wrapped optimiser's state dict."""
        self.optimizer.load_state_dict(state_dict)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Contributes this rank's gradients to the next round, sets the gradients to the
        round's result over the number of ranks, and steps the wrapped optimiser.
        Returns ``closure()``'s value (the loss) if a closure is given."""
        if self._finished:
            raise InputError("step", "finish() was called; no more steps")
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        flat = torch.cat(
            [(p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1).cpu() for p in self.params]
        )
        res = self.partial(flat)
        if self.partial.rank not in res.contributors:
            self.late_steps += 1
        self._set_grads(res.tensor)
        self.optimizer.step()
        self.steps += 1
        self.last = res
        if self.sync_every is not None and self.steps % self.sync_every == 0:
            self.synchronize()
        return loss

    # --- eager-SGD ---------------------------------------------------------------------

    def synchronize(self) -> None:
        """Averages the parameters over the ranks (blocking; every rank must call it at
        the same step: ``step`` does every ``sync_every`` steps)."""
        with torch.no_grad():
            for p in self.params:
                dist.all_reduce(p.data, op=dist.ReduceOp.SUM, group=self.group)
                p.data.div_(self.world_size)

    def finish(self, apply: bool = True) -> PartialResult:
        """Ends training (every rank): contributes every gradient still held back
        (:meth:`PartialAllreduce.flush`), applies it as one more optimiser step unless
        ``apply=False`` or no rank held anything back (the flush's sum is all zeros, the same
        on every rank: a step with zero gradients would still move the parameters by
        momentum and weight decay), and closes the collective. Returns the flush's result."""
        if self._finished:
            raise InputError("finish", "already called")
        res = self.partial.flush()
        if apply and bool(res.tensor.any()):
            self._set_grads(res.tensor)
            self.optimizer.step()
        self.partial.close()
        self._finished = True
        return res

    def _set_grads(self, flat: torch.Tensor) -> None:
        offset = 0
        with torch.no_grad():
            for p in self.params:
                g = flat[offset : offset + p.numel()].view_as(p).to(p.device, p.dtype).div(self.world_size)
                offset += p.numel()
                if p.grad is None:
                    p.grad = g
                else:
                    p.grad.copy_(g)


__all__ = ["EagerSGD"]
