"""Entry point of one job process: ``python -m tensorwire.testbed.jobs.worker SPEC RANK``.

Started by the launcher inside the rank's host namespace. Joins the Gloo process group at
rank 0's address (``GLOO_SOCKET_IFNAME`` is the host's interface), runs the strategy and
writes ``rank-<r>.json`` into the job's output folder.
"""

from __future__ import annotations

import datetime
import os
import sys
import warnings
from typing import Optional, Sequence


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m tensorwire.testbed.jobs.worker SPEC_JSON RANK", file=sys.stderr)
        return 2
    spec_path, rank = args[0], int(args[1])
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch
    import torch.distributed as dist

    from tensorwire.testbed.jobs.compute import tighten_timer_slack
    from tensorwire.testbed.jobs.context import Context
    from tensorwire.testbed.jobs.registry import job_strategy
    from tensorwire.testbed.jobs.spec import JobSpec
    from tensorwire.torch.launch import import_dynamo_first

    torch.set_num_threads(1)
    tighten_timer_slack()
    spec = JobSpec.from_file(spec_path)
    run = job_strategy(spec.options.name).runner(spec.runtime)
    os.environ.setdefault("MASTER_ADDR", spec.master_addr)
    os.environ.setdefault("MASTER_PORT", str(spec.master_port))
    import_dynamo_first()  # so that destroy_process_group() ends Gloo's threads before exit
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://{spec.master_addr}:{spec.master_port}",
        rank=rank,
        world_size=spec.world_size,
        timeout=datetime.timedelta(seconds=spec.timeout_s),
    )
    try:
        ctx = Context(spec, rank)
        if spec.probe:
            from tensorwire.testbed.jobs.probe import combine, run_probe

            before = run_probe(ctx)
        run(ctx)
        if spec.probe:
            ctx.notes["probe"] = combine(before, run_probe(ctx))
        ctx.write_result("worker" if rank < spec.workers else "server")
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
