"""A training script as a user writes it, for ``torchrun --nproc-per-node=2 _torchrun_train.py OUT``.

Nothing here knows about ranks or ports: torchrun's environment is all there is.
"""

from __future__ import annotations

import json
import sys

import tensorwire.torch as twt
import torch


def main() -> None:
    torch.set_num_threads(1)
    rank, world = twt.init_process_group()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(13, 29), torch.nn.Tanh(), torch.nn.Linear(29, 7))
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    model = twt.ScheduledDataParallel(net, opt, mode="priority", partition="256B", credit="1KiB", timeout_s=60)
    g = torch.Generator().manual_seed(rank)
    for _ in range(5):
        x, y = torch.randn(8, 13, generator=g), torch.randn(8, 7, generator=g)
        opt.zero_grad()
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
