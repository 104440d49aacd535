"""CUDA check of the runtime and the profiler, for a machine with one GPU.

NCCL cannot put two ranks on one GPU, so this runs 2 Gloo ranks whose models, gradients
and optimizer states live on the same CUDA device: every mode of ScheduledDataParallel
(with CUDA gradients, the per-parameter optimizer steps on the GPU, the forward pre-hooks)
must give the parameters of plain synchronous training. Then it profiles a small CNN and
ResNet-50 on the GPU. Run: ``python benchmarks/runtime_gpu_check.py`` from the checkout.

Recorded on an H100 (torch 2.11, CUDA 13): every mode bit-identical to the reference with
Adam; ResNet-50 at batch 32 profiled at 15.1-15.6 ms forward and 19.3-19.7 ms backward
(two runs; each hook synchronises the device, so small layers are overstated a little).
"""

from __future__ import annotations

import socket
import sys
import types
from typing import Any

sys.path.insert(0, "python")

import torch
import torch.distributed as dist

try:
    import pydantic  # noqa: F401
except ImportError:  # a GPU image with torch but without pydantic: enough of a stub to import tensorwire
    stub: Any = types.ModuleType("pydantic")
    stub.BaseModel = type("BaseModel", (), {})
    stub.ConfigDict = dict
    stub.Field = lambda *a, **k: None
    stub.NonNegativeFloat, stub.NonNegativeInt, stub.PositiveInt = float, int, int
    stub.ValidationError = ValueError
    stub.field_validator = lambda *a, **k: lambda f: f
    stub.model_validator = lambda *a, **k: lambda f: f
    sys.modules["pydantic"] = stub

#: Seconds a rank may take before it prints its threads' stacks and exits.
STALL_S = 60

MODES = [
    ("fifo", {}),
    ("priority", dict(partition=4096, credit=16384)),
    ("fusion", dict(partition=4096, fusion_bytes=65536, fusion_cycle_s=0.002)),
]


def _net(dev: torch.device) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
    ).to(dev)


def job(rank: int, world: int, port: int, q: Any) -> None:
    import os

    os.environ.update(
        RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo"
    )
    import faulthandler

    faulthandler.dump_traceback_later(STALL_S, exit=True)  # a stall prints every thread's stack
    dist.init_process_group("gloo")
    print(f"rank {rank}: process group up", flush=True)
    from tensorwire.torch import ScheduledDataParallel

    dev = torch.device("cuda")
    res = {}
    for mode, kw in MODES:
        ref, net = _net(dev), _net(dev)
        ropt, opt = torch.optim.Adam(ref.parameters(), lr=1e-3), torch.optim.Adam(net.parameters(), lr=1e-3)
        g = torch.Generator().manual_seed(rank)
        data = [(torch.randn(32, 64, generator=g).to(dev), torch.randn(32, 10, generator=g).to(dev)) for _ in range(6)]
        for x, y in data:
            ropt.zero_grad()
            torch.nn.functional.mse_loss(ref(x), y).backward()
            for p in ref.parameters():
                assert p.grad is not None
                dist.all_reduce(p.grad)
                p.grad.div_(world)
            ropt.step()
        model = ScheduledDataParallel(net, opt, mode=mode, timeout_s=60, **kw)
        for x, y in data:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        model.synchronize()
        torch.cuda.synchronize()
        diff = max(float((a.detach() - b.detach()).abs().max()) for a, b in zip(ref.parameters(), net.parameters()))
        res[mode] = {"max_abs_diff": diff, "groups": model.groups_started}
        print(f"rank {rank}: {mode} done, max |diff| {diff}", flush=True)
        model.close()
    q.put((rank, res))
    dist.destroy_process_group()


def main() -> None:
    import torch.multiprocessing as mp

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=job, args=(r, 2, port, q)) for r in range(2)]
    for p in procs:
        p.start()
    out = sorted(q.get(timeout=STALL_S + 10) for _ in procs)
    for p in procs:
        p.join(60)
    print("ScheduledDataParallel with CUDA gradients (2 Gloo ranks, one GPU):", out)

    from tensorwire.torch.profiling import profile

    body = [torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU()) for _ in range(6)]
    cnn = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), *body, torch.nn.Flatten(), torch.nn.Linear(16 * 32 * 32, 10)
    )
    w = profile(cnn, batch_size=64, input_shape=(3, 32, 32), iterations=3, warmup=2, device="cuda", name="convnet")
    print(
        f"profile on CUDA: {w.name}, {len(w.layers)} layers, {w.total_bytes} bytes, {w.compute_time_s * 1e3:.3f} ms ({w.description})"
    )
    try:
        w = profile("resnet50", batch_size=32, iterations=3, warmup=2, device="cuda")
    except Exception as e:  # noqa: BLE001 - torchvision may be missing on the GPU image
        print("resnet50 skipped:", e)
        return
    fwd = sum(layer.forward_s for layer in w.layers) * 1e3
    bwd = sum(layer.backward_s for layer in w.layers) * 1e3
    print(
        f"resnet50 on the GPU, batch 32: forward {fwd:.2f} ms, backward {bwd:.2f} ms, {len(w.layers)} layers, {w.total_bytes} bytes"
    )


if __name__ == "__main__":
    main()
