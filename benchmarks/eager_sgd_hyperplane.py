"""eager-SGD against synchronous SGD on hyperplane regression (seed 002, section 6.2.1),
scaled to this machine; the numbers go into docs/partial-collectives.md.

4 local processes (Gloo) train a linear model on y = a.x + b + noise (1024 dimensions,
16384 points, 64 points per process and step, 4 epochs, SGD lr 0.05). Every step computes
and then sleeps 50 ms (the device time of a bigger model); at every step one process
drawn at random sleeps 50 ms more (the injected load imbalance of seed 002). Compared:
synchronous SGD (torch.distributed.all_reduce of the gradients every step), eager-SGD
with solo and with majority all-reduce, unbounded and with a staleness bound of 4.

Printed: steps per second, the wall time until the validation loss first reaches the
target (5% above the loss synchronous SGD settles at: the mean of its last 5 evaluations),
the final validation loss, and the fraction of steps whose gradients missed their round.

Run: `.venv/bin/python benchmarks/eager_sgd_hyperplane.py` (about 3 minutes).
`--predict` prints instead what the simulator predicts for the same five runs (a second;
no torch): each step's compute (the sleep plus the millisecond of real compute), one
random rank per step `1 + delay / compute` times slower (`--stragglers one:M`), the
gradient (dim + 1 float32) on 4 hosts at 10 Gbit/s and 50 us (loopback's rate and latency
barely matter for 4 KB); nothing fitted to the measured table.
"""

from __future__ import annotations

import argparse
import json
import statistics

from tensorwire.torch.partial.bench import HyperplaneConfig, hyperplane

RUNS = [("sync", None), ("solo", None), ("solo", 4), ("majority", None), ("majority", 4)]

#: Seconds of real compute per step besides the sleep (docs/partial-collectives.md: the
#: 1024-dimensional linear model's step takes about a millisecond on this machine's CPU).
REAL_COMPUTE_S = 0.001


def predict(processes: int, compute_s: float, delay_s: float, dim: int, steps: int) -> list[tuple[str, float, float]]:
    """(run, steps/s, fraction of late steps) the simulator predicts for each of :data:`RUNS`."""
    import tensorwire as tw

    step = compute_s + REAL_COMPUTE_S
    layer = tw.Layer("linear", 0.0, step, (tw.Tensor("weight", 4 * dim), tw.Tensor("bias", 4)))
    workload = tw.Workload("hyperplane", 64, (layer,))
    cluster = tw.Cluster(processes, "10Gbps", latency="50us")
    out = []
    for mode, staleness in RUNS:
        spec = "ring" if mode == "sync" else f"ring:partial={mode}" + (f",max_lag={staleness}" if staleness else "")
        r = tw.simulate(workload, cluster, spec, iterations=steps, stragglers="one", slowdowns=[1 + delay_s / step])
        late = 0.0 if r.active_processes is None else 1 - r.active_processes / processes
        out.append((spec, 1 / r.iteration_time_s, late))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--delay", type=float, default=0.05, help="injected delay, seconds")
    ap.add_argument("--compute", type=float, default=0.05, help="emulated compute per step, seconds")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--predict", action="store_true", help="the simulator's prediction of the same runs (no torch)")
    args = ap.parse_args()
    if args.predict:
        cfg = HyperplaneConfig()
        steps = cfg.epochs * cfg.samples // (cfg.batch * args.processes)
        print(f"| run | predicted steps/s | predicted late steps |  ({steps} steps, tensorwire simulate)")
        print("|---|---|---|")
        for spec, rate, late in predict(args.processes, args.compute, args.delay, cfg.dim, steps):
            print(f"| `{spec}` | {rate:.1f} | {100 * late:.0f}% |")
        return
    results = []
    for mode, staleness in RUNS:
        cfg = HyperplaneConfig(
            delay_s=args.delay, compute_s=args.compute, epochs=args.epochs, seed=args.seed, staleness=staleness
        )
        results.append((staleness, hyperplane(args.processes, mode, cfg)))
    sync = results[0][1]
    target = 1.05 * statistics.fmean(v for _, _, v in sync.trace[-5:])
    t_sync = sync.time_to(target)
    if args.json:
        out = [dict(mode=r.mode, staleness=s, steps=r.steps, wall_s=r.wall_s, steps_per_s=r.steps_per_s, final_loss=r.final_loss,
                    late_fraction=r.late_fraction, time_to_target_s=r.time_to(target), trace=r.trace) for s, r in results]  # fmt: skip
        print(json.dumps({"target_loss": target, "runs": out}, indent=1))
        return
    print(
        f"{args.processes} processes, delay {args.delay * 1e3:g} ms on one random process per step, compute {args.compute * 1e3:g} ms per step"
    )
    print(f"target validation loss: {target:.3f} (5% above where synchronous SGD settles)")
    print()
    print("| run | steps/s | speedup | time to target | speedup to target | final loss | late steps |")
    print("|---|---|---|---|---|---|---|")
    names = [
        "synchronous SGD" if r.mode == "sync" else f"eager-SGD {r.mode}" + (f", staleness {s}" if s is not None else "")
        for s, r in results
    ]
    for name, (_staleness, r) in zip(names, results):
        t = r.time_to(target)
        print(
            f"| {name} | {r.steps_per_s:.1f} | {r.steps_per_s / sync.steps_per_s:.2f}x | {t:.1f} s | {t_sync / t:.2f}x | "
            f"{r.final_loss:.3f} | {100 * r.late_fraction:.0f}% |"
        )
    marks = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0]
    print()
    print("Validation loss (rank 0's model) after a given wall time:")
    print()
    print("| run | " + " | ".join(f"{m:g} s" for m in marks) + " |")
    print("|---|" + "---|" * len(marks))
    for name, (_, r) in zip(names, results):
        cells = []
        for m in marks:
            seen = [v for t, _, v in r.trace if t <= m]
            cells.append(f"{seen[-1]:.3f}" if seen and m <= r.wall_s + 0.5 else "done" if seen else "")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
