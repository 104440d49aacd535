"""Testbed benchmark: parameter-server jobs with several servers, measured and predicted.

One testbed of ``--workers`` workers plus the servers (network namespaces, HTB at ``--rate``
per direction; :class:`tensorwire.testbed.Testbed`), calibrated once
(:func:`tensorwire.testbed.calibrate`). Each strategy spec runs as the testbed's own ``ps``
job (:mod:`tensorwire.testbed.jobs.ps`) on the validation's scaled workload (gradient bytes
so that one server's link carries ``COMM_TARGET_S`` of traffic, compute ``COMPUTE_TARGET_S``:
:mod:`tensorwire.testbed.validate`), and the simulator predicts it on the calibrated cluster
with the job's own probe, as ``tensorwire validate`` does. Needs root and torch.

The numbers in docs/testbed.md and the CHANGELOG (servers that send on once a message has
left their own link) came from:

    .venv/bin/python benchmarks/testbed_ps_servers.py --model resnet50
"""

from __future__ import annotations

import argparse

import tensorwire as tw
from tensorwire.testbed import Testbed, calibrate, run_job
from tensorwire.testbed.jobs import hosts_needed
from tensorwire.testbed.validate import COMM_TARGET_S, COMPUTE_TARGET_S, scale_workload

SPECS = (
    "ps",
    "ps:num_ps=2",
    "ps:num_ps=2,placement=balanced",
    "ps:num_ps=2,distribution=block",
    "ps:num_ps=2,placement=sharded",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet50", help="zoo model to scale (default resnet50)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rate", default="1Gbps")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("specs", nargs="*", default=list(SPECS), help="ps strategy specs (default: a set of 5)")
    args = parser.parse_args()
    hosts = max(hosts_needed(spec, args.workers) for spec in args.specs)
    base = tw.load_model(args.model)
    with Testbed(hosts=hosts, rate=args.rate) as tb:
        cal = calibrate(tb, workers=args.workers)
        # One server's link carries every worker's copy of the model: COMM_TARGET_S of it.
        model_bytes = COMM_TARGET_S * cal.effective_rate_bytes_per_s / args.workers
        w = scale_workload(
            base, model_bytes / base.total_bytes, COMPUTE_TARGET_S / base.compute_time_s, name=f"{args.model}-scaled"
        )
        print(
            f"{w.name}: {w.total_bytes:,} bytes, compute {w.compute_time_s * 1e3:.1f} ms, {hosts} hosts at {args.rate}"
        )
        print("| spec | measured s | predicted s | error |")
        print("|---|---:|---:|---:|")
        for spec in args.specs:
            job = run_job(tb, w, spec, workers=args.workers, iterations=args.iterations, warmup=2, probe=True)
            used = cal.with_probe(job.probe)
            predicted = tw.simulate(
                w, used.cluster(args.workers, spec), used.spec(spec), iterations=args.iterations - 1
            ).iteration_time_s
            measured = job.iteration_time_s
            print(
                f"| `{spec}` | {measured:.4f} | {predicted:.4f} | {(predicted - measured) / measured:+.1%} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
