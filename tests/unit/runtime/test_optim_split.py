"""Per-parameter optimizers (``tensorwire.torch.optim.split``) step exactly as the user's.

torch 2.15's AdamW sets a default its ``__init__`` does not take (``decoupled_weight_decay``,
passed on to Adam's), so rebuilding it from ``optimizer.defaults`` was a TypeError and
``ScheduledDataParallel(net, AdamW(...))`` was refused. Only the defaults ``__init__``
takes are passed now; the rest reach each instance through its parameter group.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Callable

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")

STEPS = 3


def _optimizers() -> list[tuple[str, Callable[[Any], Any]]]:
    import torch

    return [
        ("sgd", lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3, nesterov=True)),
        ("adam", lambda ps: torch.optim.Adam(ps, lr=0.01, betas=(0.8, 0.95), weight_decay=1e-3)),
        ("adamw", lambda ps: torch.optim.AdamW(ps, lr=0.01, betas=(0.8, 0.95), weight_decay=0.05)),
        ("adamw-amsgrad", lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1, amsgrad=True)),
        ("rmsprop", lambda ps: torch.optim.RMSprop(ps, lr=0.01, momentum=0.5)),
        ("nadam", lambda ps: torch.optim.NAdam(ps, lr=0.01, decoupled_weight_decay=True, weight_decay=0.01)),
    ]


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw", "adamw-amsgrad", "rmsprop", "nadam"])
def test_split_steps_are_bit_identical_to_the_users_optimizer(name: str) -> None:
    import torch
    from tensorwire.torch.optim import split

    make = dict(_optimizers())[name]
    torch.manual_seed(0)
    ref = [torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(7))]
    mine = [torch.nn.Parameter(p.detach().clone()) for p in ref]
    # Two groups on both sides, the second with a learning rate of its own.
    ref_opt = make([{"params": ref[:1]}, {"params": ref[1:], "lr": 0.003}])
    my_opt = make([{"params": mine[:1]}, {"params": mine[1:], "lr": 0.003}])
    steps = split(my_opt, mine, ["w", "b"])
    g = torch.Generator().manual_seed(1)
    for _ in range(STEPS):
        grads = [torch.randn(p.shape, generator=g) for p in ref]
        for p, grad in zip(ref, grads):
            p.grad = grad.clone()
        ref_opt.step()
        hyper = [{k: v for k, v in grp.items() if k != "params"} for grp in my_opt.param_groups]
        for s, grad in zip(steps, grads):
            s.step(grad.reshape(-1).clone(), hyper[s.group_index])
    for p, q in zip(mine, ref):
        assert torch.equal(p, q), f"{name}: parameters differ by up to {float((p - q).abs().max()):.2e}"
    # The user's optimizer holds the state (checkpoints see it), the same as the reference's.
    for p, q in zip(mine, ref):
        a, b = my_opt.state[p], ref_opt.state[q]
        assert a.keys() == b.keys() and all(torch.equal(torch.as_tensor(a[k]), torch.as_tensor(b[k])) for k in a)


def test_only_the_defaults_init_takes_are_passed() -> None:
    import torch
    from tensorwire.torch.optim import init_defaults

    p = [torch.nn.Parameter(torch.zeros(2))]
    adamw = torch.optim.AdamW(p, lr=0.01)
    passed = init_defaults(adamw)
    assert passed["lr"] == 0.01 and set(passed) <= set(adamw.defaults)
    if "decoupled_weight_decay" in adamw.defaults:  # torch >= 2.6: AdamW is an Adam that sets it
        assert "decoupled_weight_decay" not in passed
        torch.optim.AdamW(p, **passed)  # no TypeError

    class Anything(torch.optim.SGD):
        def __init__(self, params: Any, **kw: Any) -> None:
            kw.pop("extra", None)
            super().__init__(params, **kw)

    sgd = Anything(p, lr=0.1)
    sgd.defaults["extra"] = 1
    assert "extra" in init_defaults(sgd), "an __init__ taking **kwargs gets every default"
