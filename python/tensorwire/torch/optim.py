"""Per-parameter optimizer steps that equal the user's optimizer exactly.

To update each parameter as soon as its gradient is averaged, every parameter gets an
optimizer instance of its own: the user's optimizer class, built with the user's defaults
and the hyperparameters of the parameter's group, over a *shadow* parameter that shares the
parameter's storage (so the step writes the real weights) and whose state dict *is* the
user's optimizer's state entry for that parameter (so ``optimizer.state_dict()`` and
checkpoints see momentum buffers and Adam moments as usual). Element-wise optimizers (SGD
with momentum, Adam, AdamW, RMSprop, ...) give bit-identical results this way, because their
update of one parameter depends only on that parameter's gradient and state. Optimizers
that couple parameters (LBFGS, or anything with a global norm) cannot be split: they are
refused up front.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from tensorwire._core import InputError

#: Optimizers whose step couples parameters, refused up front.
_COUPLED = ("LBFGS",)


@dataclass
class SplitStep:
    """One parameter's own optimizer over its shadow (see module docstring)."""

    optimizer: torch.optim.Optimizer
    shadow: torch.nn.Parameter
    group_index: int

    def step(self, grad: torch.Tensor, hyper: dict[str, Any]) -> None:
        """Applies one step with ``grad`` (averaged) and the group's hyperparameters ``hyper``."""
        self.optimizer.param_groups[0].update(hyper)
        self.shadow.grad = grad.view_as(self.shadow)
        try:
            self.optimizer.step()
        finally:
            self.shadow.grad = None


def hyperparameters(optimizer: torch.optim.Optimizer) -> list[dict[str, Any]]:
    """A snapshot of every param group's hyperparameters (learning rate, betas, ...)."""
    return [{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups]


def init_defaults(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The user's optimizer's defaults that its class's ``__init__`` takes as keywords (all
    of them when it takes ``**kwargs`` or its signature is unknown).

    A class may set defaults of its own that ``__init__`` does not take: torch 2.15's
    AdamW passes ``decoupled_weight_decay=True`` to Adam's ``__init__``, so
    ``AdamW(params, **adamw.defaults)`` is a TypeError. Those stay in each parameter
    group's hyperparameters, which the per-parameter instance gets as they are, so its
    step reads the same values (bit-identical to the user's AdamW; tested).
    """
    defaults = dict(optimizer.defaults)
    try:
        params = inspect.signature(type(optimizer).__init__).parameters
    except (TypeError, ValueError):  # no signature to read: pass everything, as before
        return defaults
    if any(q.kind is inspect.Parameter.VAR_KEYWORD for q in params.values()):
        return defaults
    takes = {
        n
        for n, q in params.items()
        if q.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    return {k: v for k, v in defaults.items() if k in takes}


def split(
    optimizer: torch.optim.Optimizer, params: Sequence[torch.nn.Parameter], names: Sequence[str]
) -> list[SplitStep]:
    """One :class:`SplitStep` per parameter in ``params`` (all must be in ``optimizer``)."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise InputError("optimizer", f"{type(optimizer).__name__} is not a torch.optim.Optimizer")
    cls = type(optimizer)
    if cls.__name__ in _COUPLED:
        raise InputError("optimizer", f"{cls.__name__} couples parameters and cannot step them one at a time")
    accepted = init_defaults(optimizer)
    where: dict[int, int] = {}
    for gi, g in enumerate(optimizer.param_groups):
        for p in g["params"]:
            where[id(p)] = gi
    out: list[SplitStep] = []
    for p, name in zip(params, names):
        found = where.get(id(p))
        if found is None:
            raise InputError("optimizer", f"parameter {name!r} needs a gradient but is not in the optimizer")
        shadow = torch.nn.Parameter(p.detach(), requires_grad=False)
        hyper = hyperparameters(optimizer)[found]
        try:
            inst = cls([{"params": [shadow], **hyper}], **accepted)
        except TypeError as e:
            raise InputError(
                "optimizer",
                f"cannot build a {cls.__name__} per parameter from its defaults ({e}); use SGD, Adam or AdamW",
            ) from None
        # Defaults the class sets itself (AdamW's decoupled_weight_decay) are in every
        # group already (``hyper``); the instance's own defaults list them as the user's do.
        inst.defaults.update(optimizer.defaults)
        inst.state[shadow] = optimizer.state[p]
        out.append(SplitStep(inst, shadow, found))
    return out


__all__ = ["SplitStep", "hyperparameters", "init_defaults", "split"]
