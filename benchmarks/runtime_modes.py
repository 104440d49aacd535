"""Runtime benchmark: priority vs fifo vs fusion vs torch DDP on one job.

The job is a VGG-like model with emulated compute (:mod:`tensorwire.torch.emulate`: VGG-16's
real tensor sizes times ``--size-scale``, its per-layer V100 compute times from the zoo times
``--time-scale``; compute sleeps, so two cores can host several workers). Each mode trains the
same job; the number is the median spacing of ``optimizer.step()`` calls on rank 0.

Networks:

- ``--network testbed`` (needs root): one emulated host per worker (network namespaces,
  veth, HTB at ``--rate`` per direction; :class:`tensorwire.testbed.Testbed`). Each worker
  runs ``python -m tensorwire.torch.measuring`` with torchrun's environment variables, under
  real-time scheduling (``chrt -f 10``) as the testbed's own jobs do, so a busy machine
  delays wake-ups less.
- ``--network loopback``: processes on 127.0.0.1 (no bandwidth limit: only the runtime's
  overhead against DDP can be measured there), also at SCHED_FIFO priority 10.

Examples (the numbers in docs/runtime.md came from these):

    .venv/bin/python benchmarks/runtime_modes.py --network testbed --rate 1Gbps --size-scale 0.03
    .venv/bin/python benchmarks/runtime_modes.py --network loopback --size-scale 0.01 --time-scale 2
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from typing import Any

from tensorwire.torch.launch import free_port, run_local
from tensorwire.torch.measuring import Job, run_job
from tensorwire.units import format_rate, format_seconds, to_rate


def realtime_job(rank: int, world: int, job: Job, realtime: bool) -> dict[str, Any]:
    """``run_job`` under SCHED_FIFO priority 10 (threads started later inherit it)."""
    if realtime:
        import os

        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    return run_job(rank, world, job)


def on_loopback(job: Job, workers: int, threads: int, realtime: bool) -> dict[str, Any]:
    return dict(run_local(realtime_job, workers, job, realtime, timeout_s=900, threads=threads)[0])


def on_testbed(tb: Any, job: Job, workers: int, threads: int, realtime: bool) -> dict[str, Any]:
    port = free_port()
    prefix = ["chrt", "-f", "10"] if realtime else []
    procs = []
    for h in range(workers):
        env = {
            "RANK": str(h),
            "LOCAL_RANK": "0",
            "WORLD_SIZE": str(workers),
            "MASTER_ADDR": tb.address(0),
            "MASTER_PORT": str(port),
        }
        cmd = [
            *prefix,
            sys.executable,
            "-m",
            "tensorwire.torch.measuring",
            "--job",
            json.dumps(dataclasses.asdict(job)),
            "--threads",
            str(threads),
        ]
        procs.append(tb.popen(h, cmd, env=env))
    outs = []
    for h, p in enumerate(procs):
        out, err = p.communicate(timeout=900)
        if p.returncode != 0:
            raise SystemExit(f"worker {h} failed ({p.returncode}): {err.strip()[-2000:]}")
        outs.append(out)
    return dict(json.loads(outs[0].strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--network", choices=["testbed", "loopback"], default="testbed")
    ap.add_argument("--rate", default="1Gbps", help="testbed link rate per direction")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--model", default="zoo:vgg16")
    ap.add_argument("--size-scale", type=float, default=0.03)
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument(
        "--batch", type=int, default=4, help="batch of the (emulated) job; compute time does not depend on it"
    )
    ap.add_argument("--modes", default="ddp,fifo,fusion,priority,autotune")
    ap.add_argument("--partition", default="1MiB", help="priority's piece size")
    ap.add_argument("--credit", default="4MiB", help="priority's credit")
    ap.add_argument(
        "--fusion-bytes",
        default="2MiB",
        help="fusion buffer (scale it like the model: Horovod's 64 MiB is for full size)",
    )
    ap.add_argument("--trials", type=int, default=10, help="autotune: optuna trials before timing")
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1, help="runs per mode (the median is kept)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-realtime", action="store_true", help="no real-time scheduling (chrt -f 10 / SCHED_FIFO 10)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    base = Job(a.model, a.batch, "fifo", iterations=a.iterations, warmup=a.warmup, size_scale=a.size_scale,
               time_scale=a.time_scale, timeout_s=300.0)  # fmt: skip
    jobs = {
        # DDP's buckets scaled like the model (25 MB at full size), else one bucket holds
        # the whole scaled model and nothing overlaps: unfair to DDP.
        "ddp": dataclasses.replace(base, mode="ddp", bucket_cap_mb=25 * a.size_scale),
        "fifo": base,
        "fusion": dataclasses.replace(base, mode="fusion", fusion_bytes=a.fusion_bytes, fusion_cycle_s="5ms"),
        "priority": dataclasses.replace(base, mode="priority", partition=a.partition, credit=a.credit),
        "autotune": dataclasses.replace(base, mode="priority", autotune_trials=a.trials),
    }
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    results: dict[str, dict[str, Any]] = {}
    single = on_loopback(dataclasses.replace(base, mode="fifo"), 1, a.threads, not a.no_realtime)
    t0 = time.time()
    if a.network == "testbed":
        from tensorwire.testbed import Testbed, unavailable_reason

        reason = unavailable_reason()
        if reason is not None:
            raise SystemExit(f"testbed unavailable: {reason}; use --network loopback")
        with Testbed(hosts=a.workers, rate=a.rate) as tb:
            for m in modes:
                runs = [on_testbed(tb, jobs[m], a.workers, a.threads, not a.no_realtime) for _ in range(a.repeat)]
                results[m] = (
                    min(runs, key=lambda r: r["iteration_time_s"])
                    if a.repeat == 1
                    else sorted(runs, key=lambda r: r["iteration_time_s"])[len(runs) // 2]
                )
    else:
        for m in modes:
            runs = [on_loopback(jobs[m], a.workers, a.threads, not a.no_realtime) for _ in range(a.repeat)]
            results[m] = sorted(runs, key=lambda r: r["iteration_time_s"])[len(runs) // 2]
    grad = next(iter(results.values()))["gradient_bytes"]
    summary = {
        "network": a.network,
        "rate": a.rate if a.network == "testbed" else None,
        "workers": a.workers,
        "model": a.model,
        "size_scale": a.size_scale,
        "time_scale": a.time_scale,
        "gradient_bytes": grad,
        "single_process_iteration_s": single["iteration_time_s"],
        "ideal_comm_s": (2 * (a.workers - 1) / a.workers * grad / to_rate(a.rate)) if a.network == "testbed" else None,
        "modes": {
            m: {
                "iteration_time_s": r["iteration_time_s"],
                "config": r["config"],
                "tuning_trials": r["tuning_trials"],
                "iteration_times_s": r["iteration_times_s"],
            }
            for m, r in results.items()
        },  # fmt: skip
        "wall_s": time.time() - t0,
    }
    if a.json:
        print(json.dumps(summary, indent=1))
        return
    where = f"testbed {format_rate(to_rate(a.rate))}" if a.network == "testbed" else "loopback"
    print(f"{a.model} x{a.size_scale} sizes, x{a.time_scale} compute, {a.workers} workers on {where}; "
          f"gradients {grad / 2**20:.1f} MiB; one process {format_seconds(single['iteration_time_s'])}/iteration")  # fmt: skip
    if summary["ideal_comm_s"]:
        print(f"ring all-reduce at the link rate: {format_seconds(summary['ideal_comm_s'])} per iteration")
    fifo = results.get("fifo", {}).get("iteration_time_s")
    ddp = results.get("ddp", {}).get("iteration_time_s")
    print(f"{'mode':<10}{'iteration':>12}{'vs fifo':>9}{'vs ddp':>9}{'scaling':>9}  configuration")
    for m, r in results.items():
        t = r["iteration_time_s"]
        vs_fifo = f"{fifo / t:.2f}x" if fifo else "-"
        vs_ddp = f"{ddp / t:.2f}x" if ddp else "-"
        cfg = r.get("config") or {}
        text = ", ".join(f"{k.replace('_bytes', '')}={v / 2**20:.3g}MiB" for k, v in cfg.items() if v is not None)
        print(f"{m:<10}{format_seconds(t):>12}{vs_fifo:>9}{vs_ddp:>9}{single['iteration_time_s'] / t:>9.3f}  {text}")
    print(
        f"(median of {statistics.median([a.iterations])} timed iterations after {a.warmup} warm-up; wall {summary['wall_s']:.0f} s)"
    )


if __name__ == "__main__":
    main()
