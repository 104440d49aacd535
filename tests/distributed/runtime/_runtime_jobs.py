"""Jobs the distributed tests run in spawned processes (importable by module name)."""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Optional

import torch
import torch.distributed as dist

STEPS = 4


class Net(torch.nn.Module):
    """A small MLP whose modules are registered in another order than they run (so the
    priority order must come from the first forward pass), with tensor sizes that no
    partition in the tests divides evenly."""

    def __init__(self) -> None:
        super().__init__()
        self.head = torch.nn.Linear(17, 7)
        self.body = torch.nn.Linear(29, 17)
        self.stem = torch.nn.Linear(13, 29)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.body(torch.tanh(self.stem(x)))))


class ListNet(torch.nn.Module):
    """Parameters in a ParameterList that is never called: the forward pass must still
    wait for them (in the module that reads them)."""

    def __init__(self) -> None:
        super().__init__()
        self.ws = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.randn(13, 29) * 0.3), torch.nn.Parameter(torch.randn(29, 7) * 0.3)]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ self.ws[0]) @ self.ws[1]


def make_net(seed: int = 0, kind: str = "net") -> torch.nn.Module:
    torch.manual_seed(seed)
    return ListNet() if kind == "list" else Net()


def batches(rank: int, steps: int, seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed + 1000 * rank)
    return [(torch.randn(8, 13, generator=g), torch.randn(8, 7, generator=g)) for _ in range(steps)]


def make_optimizer(name: str, params: Any) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-3, nesterov=True)
    if name == "adam":
        return torch.optim.Adam(params, lr=0.01, betas=(0.8, 0.95), weight_decay=1e-3)
    if name == "adamw":  # torch 2.15: sets decoupled_weight_decay, which its __init__ does not take
        return torch.optim.AdamW(params, lr=0.01, betas=(0.8, 0.95), weight_decay=0.05)
    raise ValueError(name)


def reference(
    rank: int,
    opt_name: str,
    group: Optional[dist.ProcessGroup],
    steps: int,
    sched: bool = False,
    kind: str = "net",
    norms: Optional[list[float]] = None,
    max_grad_norm: Optional[float] = None,
) -> torch.nn.Module:
    """Plain synchronous data parallelism: all-reduce (sum) every gradient, divide, (clip
    with torch's clip_grad_norm_, appending each norm to ``norms``,) step."""
    world = dist.get_world_size(group)
    net = make_net(kind=kind)
    opt = make_optimizer(opt_name, net.parameters())
    lr = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5) if sched else None
    for x, y in batches(rank, steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        for p in net.parameters():
            assert p.grad is not None
            dist.all_reduce(p.grad, group=group)
            p.grad.div_(world)
        if max_grad_norm is not None:
            norm = torch.nn.utils.clip_grad_norm_(net.parameters(), max_grad_norm)
            if norms is not None:
                norms.append(float(norm))
        opt.step()
        if lr is not None:
            lr.step()
    return net


def scheduled(
    rank: int, opt_name: str, steps: int, sched: bool = False, kind: str = "net", **kw: Any
) -> tuple[torch.nn.Module, torch.optim.Optimizer, Any]:
    from tensorwire.torch import ScheduledDataParallel

    net = make_net(kind=kind)
    opt = make_optimizer(opt_name, net.parameters())
    model = ScheduledDataParallel(net, opt, timeout_s=60, **kw)
    lr = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5) if sched else None
    for x, y in batches(rank, steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        if lr is not None:
            lr.step()
    model.synchronize()
    return net, opt, model


#: ``max_grad_norm`` of the clipping scenario: below every step's gradient norm (about 0.2
#: to 0.5 for :class:`Net` on these batches), so every step is clipped.
CLIP = 0.05

#: Tolerances of the comparison (torch.allclose's form): Gloo's ring sums 3 or more ranks in
#: an order that depends on how tensors are cut, which moves float32 results by an ulp.
ATOL, RTOL = 1e-7, 1e-5


def compare(a: torch.nn.Module, b: torch.nn.Module) -> tuple[float, float, bool]:
    """(largest |a-b| / (ATOL + RTOL |b|): <= 1 passes, largest |a-b|, bitwise equal)."""
    scaled, worst, same = 0.0, 0.0, True
    for p, q in zip(a.parameters(), b.parameters()):
        same = same and torch.equal(p, q)
        d = (p - q).abs()
        worst = max(worst, float(d.max()))
        scaled = max(scaled, float((d / (ATOL + RTOL * q.abs())).max()))
    return scaled, worst, same


#: (label, options) of ScheduledDataParallel in the equivalence test; partitions and
#: credits split the tensors unevenly (tensor sizes 1508, 116, 1972, 68, 476, 28 bytes).
SCENARIOS: list[tuple[str, dict[str, Any]]] = [
    ("fifo", dict(mode="fifo")),
    ("fifo:partition=260,credit=700", dict(mode="fifo", partition=260, credit=700)),
    ("priority:partition=300,credit=1000", dict(mode="priority", partition=300, credit=1000)),
    ("priority:partition=124,credit=250", dict(mode="priority", partition="124B", credit="250B")),
    (
        "fusion:partition=200,fusion=900B,cycle=1ms",
        dict(mode="fusion", partition=200, fusion_bytes=900, fusion_cycle_s="1ms"),
    ),
    (
        "fusion:partition=200,fusion=64KiB,cycle=5ms",
        dict(mode="fusion", partition=200, fusion_bytes="64KiB", fusion_cycle_s=0.005),
    ),
]


#: Optimizers of the equivalence test and the scenarios each runs: AdamW (decoupled weight
#: decay) whole tensors and an uneven cut, which is what differs from Adam for the runtime.
OPTIMIZERS: dict[str, list[str]] = {
    "sgd": [label for label, _ in SCENARIOS],
    "adam": [label for label, _ in SCENARIOS],
    "adamw": ["fifo", "priority:partition=124,credit=250"],
}


class LazyNet(torch.nn.Module):
    """A model whose last layer is lazy (no shape until a first forward pass)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Linear(13, 29)
        self.head = torch.nn.LazyLinear(7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.stem(x)))


def lazy_net() -> torch.nn.Module:
    """A model factory (``_runtime_jobs:lazy_net``) whose model has lazy parameters."""
    return LazyNet()


def equivalence(rank: int, world: int) -> dict[str, Any]:
    """Every scenario with SGD (momentum, Nesterov, weight decay), Adam and AdamW, plus a
    learning rate schedule and auto-tuning; parameters and optimizer state against the
    reference."""
    torch.set_num_threads(1)
    out: dict[str, Any] = {}
    for opt_name, labels in OPTIMIZERS.items():
        ref = reference(rank, opt_name, None, STEPS)
        for label, kw in SCENARIOS:
            if label not in labels:
                continue
            net, opt, model = scheduled(rank, opt_name, STEPS, **kw)
            ref_opt_state = len(opt.state_dict()["state"])
            out[f"{label}/{opt_name}"] = dict(
                diff=compare(net, ref), groups=model.groups_started, state_entries=ref_opt_state,
                grads_none=all(p.grad is None for p in net.parameters()),
            )  # fmt: skip
            model.close()
    # Bad arguments are refused up front, naming the field, before any collective call.
    from tensorwire import InputError
    from tensorwire.torch import ScheduledDataParallel

    refused = []
    net = make_net()
    for bad in (
        dict(optimizer=torch.optim.LBFGS(net.parameters())),
        dict(optimizer=torch.optim.SGD(list(net.parameters())[:2], lr=0.1)),
        dict(mode="ring"),
        dict(partition=0),
        dict(mode="fifo", fusion_bytes="1MiB"),
        dict(mode="fifo", autotune=True),
        dict(timeout_s=-1),
        dict(max_grad_norm=0),
        dict(transport="ps"),  # was AttributeError: 'str' object has no attribute 'group'
        dict(group="x"),  # was KeyError: 'x'
    ):
        kw = {"optimizer": torch.optim.SGD(net.parameters(), lr=0.1), **bad}
        try:
            ScheduledDataParallel(net, **kw)
        except InputError as e:
            refused.append(e.args[0])
    out["refused"] = refused
    # A lazy module's parameters have no size yet (was a ValueError from p.numel()); after
    # one forward pass the same model is accepted.
    lazy = LazyNet()
    lazy_opt = torch.optim.SGD(lazy.parameters(), lr=0.1)
    try:
        ScheduledDataParallel(lazy, lazy_opt, mode="fifo", timeout_s=60).close()
        said = "accepted"
    except InputError as e:
        said = str(e)
    with torch.no_grad():
        lazy(torch.zeros(1, 13))
    model = ScheduledDataParallel(lazy, lazy_opt, mode="fifo", timeout_s=60)
    out["lazy"] = dict(refused=said, accepted_after_forward=model.element_bytes == 4)
    model.close()
    # Parameters in a container that is never called.
    ref = reference(rank, "sgd", None, STEPS, kind="list")
    net, _, model = scheduled(rank, "sgd", STEPS, kind="list", mode="priority", partition=300, credit=600)
    out["ParameterList/sgd"] = dict(diff=compare(net, ref), groups=model.groups_started)
    model.close()
    # A learning-rate schedule created after the wrapper.
    ref = reference(rank, "sgd", None, STEPS, sched=True)
    net, _, model = scheduled(rank, "sgd", STEPS, sched=True, mode="priority", partition=300, credit=600)
    out["priority+StepLR/sgd"] = dict(diff=compare(net, ref), groups=model.groups_started)
    model.close()
    # Clipping by global norm (a bound that clips every step here): torch's clip_grad_norm_
    # after the average, then the step.
    for opt_name in ("sgd", "adam"):
        norms: list[float] = []
        ref = reference(rank, opt_name, None, STEPS, norms=norms, max_grad_norm=CLIP)
        net, _, model = scheduled(rank, opt_name, STEPS, mode="priority", partition=300, credit=600, max_grad_norm=CLIP)
        out[f"clip/{opt_name}"] = dict(diff=compare(net, ref), norm=model.last_grad_norm, ref_norms=norms)
        model.close()
    # Auto-tuning: configurations change while training; results must not.
    from tensorwire.torch import AutoTune

    steps = 12
    ref = reference(rank, "adam", None, steps)
    tune = AutoTune(partition=(64, 2048), credit_factor=(1, 4), trials=4, steps_per_trial=1, warmup_steps=0, seed=3)
    net, _, model = scheduled(rank, "adam", steps, mode="priority", autotune=tune)
    out["autotune/adam"] = dict(
        diff=compare(net, ref),
        history=[(c.iteration, c.partition_bytes, c.credit_bytes) for c in model.config_history],
        trials=[(t.partition_bytes, t.credit_bytes, t.iteration_time_s) for t in model.tuning_trials],
    )
    model.close()
    return out


def parameter_server(rank: int, world: int) -> Any:
    """Workers 0..world-2 train through a parameter server on the last rank."""
    torch.set_num_threads(1)
    from tensorwire.torch import ParameterServer

    ps = ParameterServer(timeout_s=60)
    if ps.is_server:
        return {"served": ps.serve()}
    out: dict[str, Any] = {}
    for opt_name in ("sgd", "adam"):
        ref = reference(rank, opt_name, ps.group, STEPS)
        for label, kw in (
            ("priority:partition=300,credit=1000", dict(mode="priority", partition=300, credit=1000)),
            ("fifo", dict(mode="fifo")),
        ):
            net, _, model = scheduled(rank, opt_name, STEPS, transport=ps, **kw)
            out[f"ps/{label}/{opt_name}"] = dict(diff=compare(net, ref), groups=model.groups_started)
            model.close()
    # The transport outlives the wrappers; closing it tells the server to stop.
    ps.close()
    return out


def gloo_threads() -> int:
    """Gloo worker threads of this process (torch names them ``pt_gloo_runloop``)."""
    tasks = "/proc/self/task"
    return sum(1 for t in os.listdir(tasks) if open(f"{tasks}/{t}/comm").read().strip() == "pt_gloo_runloop")


def teardown(rank: int, world: int) -> dict[str, Any]:
    """Gloo worker threads before, during and after a wrapper's life, and after
    ``destroy_process_group`` (an optimizer made after init imports torch._dynamo)."""
    torch.set_num_threads(1)
    dist.barrier()  # the default group's threads may start with its first collective
    base = gloo_threads()
    _, _, model = scheduled(rank, "adam", 2, mode="priority", partition=300, credit=600)
    during = gloo_threads()
    model.close()
    # A released group's threads end as its last reference goes, which on a loaded machine
    # can be a moment after close() returns (a fresh clone's run read one thread too many
    # while other tests ran): they must end, well before any interpreter exit, so wait up
    # to 5 s for them.
    closed, deadline = gloo_threads(), time.time() + 5.0
    while closed > base and time.time() < deadline:
        time.sleep(0.05)
        closed = gloo_threads()
    try:
        model.transport.start([torch.ones(2)])
        refused = ""
    except RuntimeError as e:
        refused = str(e)
    dist.destroy_process_group()
    return dict(base=base, during=during, closed=closed, destroyed=gloo_threads(), refused=refused)


def dies(rank: int, world: int, victim: int, hang_s: float = 0.0) -> dict[str, Any]:
    """Trains with a short timeout; ``victim`` dies (or hangs ``hang_s`` seconds) in step 3
    between forward and backward. Survivors report the error and how long it took."""
    torch.set_num_threads(1)
    from tensorwire.torch import CommunicationError, ScheduledDataParallel

    net = make_net()
    opt = make_optimizer("sgd", net.parameters())
    model = ScheduledDataParallel(net, opt, mode="priority", partition=200, credit=600, timeout_s=5)
    t_fail = 0.0
    try:
        for step, (x, y) in enumerate(batches(rank, 50)):
            if step == 3:
                t_fail = time.time()
            loss = torch.nn.functional.mse_loss(model(x), y)
            if step == 3 and rank == victim:
                if hang_s > 0:
                    time.sleep(hang_s)
                else:
                    os._exit(17)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.synchronize()
    except CommunicationError as e:
        return {"error": str(e), "after_s": time.time() - t_fail, "type": type(e).__name__}
    return {"error": None}


def unlike_models(rank: int, world: int) -> str:
    """The last rank wraps a model with a wider hidden layer; returns what each rank raised."""
    torch.set_num_threads(1)
    from tensorwire import InputError
    from tensorwire.torch import ScheduledDataParallel

    hidden = 96 if rank == world - 1 else 64
    net = torch.nn.Sequential(torch.nn.Linear(8, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 2))
    try:
        ScheduledDataParallel(net, torch.optim.SGD(net.parameters(), lr=0.1), mode="fifo", timeout_s=60)
    except InputError as e:
        return str(e)
    return "accepted"


def stream_order(rank: int, world: int) -> dict[str, Any]:
    """A big then a tiny all-reduce started back to back, on the runtime's stream and on an
    ordinary group: whether the big one was complete when the tiny one was, and the sums."""
    from tensorwire.torch.transport import AllReduce, member_group, stream_group

    ranks = list(range(world))
    out: dict[str, Any] = {}
    for name, transport in (
        ("stream", AllReduce(None, stream_group(ranks, None))),
        ("group", AllReduce(member_group(ranks, None))),
    ):
        dist.barrier()
        big, tiny = torch.full((8_000_000,), float(rank + 1)), torch.full((4,), float(rank + 1))
        first = transport.start([big])
        second = transport.start([tiny])
        second.wait()
        done_before = first.work.is_completed()  # type: ignore[attr-defined]
        first.wait()
        out[name] = {
            "big_done_first": done_before,
            "ordered": transport.ordered,
            "averages": (big[0].item(), tiny[0].item()),
        }
    return out


def call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)
