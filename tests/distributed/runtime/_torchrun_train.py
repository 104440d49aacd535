"""A training script as a user writes it, for ``torchrun --nproc-per-node=2 _torchrun_train.py OUT [accumulate|partial]``.

Nothing here knows about ranks or ports: torchrun's environment is all there is.
``accumulate``: two backward passes before a step (gradient accumulation, which
ScheduledDataParallel refuses), so the script ends in that error without closing.
``partial``: three rounds of a PartialAllreduce, then an error of the script's own
before ``close()`` (its progress threads are left waiting on the next round).
"""

from __future__ import annotations

import json
import sys

import tensorwire.torch as twt
import torch


def main() -> None:
    torch.set_num_threads(1)
    rank, world = twt.init_process_group()
    if sys.argv[2:] == ["partial"]:
        from tensorwire.torch.partial import PartialAllreduce

        pa = PartialAllreduce(numel=64, kind="solo")
        for _ in range(3):
            pa(torch.ones(64))
        raise ValueError("the script's own error")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(13, 29), torch.nn.Tanh(), torch.nn.Linear(29, 7))
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    model = twt.ScheduledDataParallel(net, opt, mode="priority", partition="256B", credit="1KiB", timeout_s=60)
    g = torch.Generator().manual_seed(rank)
    backwards_per_step = 2 if sys.argv[2:] == ["accumulate"] else 1
    for _ in range(5):
        x, y = torch.randn(8, 13, generator=g), torch.randn(8, 7, generator=g)
        opt.zero_grad()
        for _ in range(backwards_per_step):
            torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    model.synchronize()
    flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    torch.distributed.all_gather(gathered, flat)
    model.close()
    if rank == 0:
        same = all(torch.equal(gathered[0], t) for t in gathered)
        with open(sys.argv[1], "w") as f:
            json.dump({"world": world, "identical_on_every_rank": same, "groups": model.groups_started}, f)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
