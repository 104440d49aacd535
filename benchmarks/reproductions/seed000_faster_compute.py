"""Seed 000 Figures 11-12 (section 8.6): compute 1x to 3x faster (every layer's forward
and backward time divided by X), 32 workers at 25 Gbps; speedup over one parameter server,
and the compute speedups at which multicast + aggregation is ahead of ring-reduce.

Run: .venv/bin/python benchmarks/reproductions/seed000_faster_compute.py
"""

from __future__ import annotations

import _common as c

WORKERS, BANDWIDTH = 32, "25Gbps"
SPEEDUPS = (1.0, 1.5, 2.0, 2.5, 3.0)
SHOWN = ["multicast+aggregation", "ring-reduce", "butterfly mixing"]
#: Seed 000 section 8.6 on ResNet-200 at 3x: butterfly 10x, multicast + aggregation 19.5x.
PAPER_RESNET200_3X = {"butterfly mixing": 10.0, "multicast+aggregation": 19.5}


def main() -> None:
    opts = c.args(__doc__)
    res: dict[str, dict[float, dict[str, float]]] = {}
    crossover: dict[str, str] = {}
    for m in c.SEED000_MODELS:
        base = c.seed000_model(m)
        res[m] = {}
        for f in SPEEDUPS:
            w = base.with_compute_speedup(f)
            res[m][f] = {k: c.iteration_time(w, WORKERS, BANDWIDTH, c.MECHANISMS[k]) for k in ["baseline"] + SHOWN}
            res[m][f]["late"] = c.iteration_time(
                c.forward_after_distribution(w), WORKERS, BANDWIDTH, c.MECHANISMS["multicast+aggregation"]
            )
        ahead = [f for f in SPEEDUPS if res[m][f]["multicast+aggregation"] * 1.01 < res[m][f]["ring-reduce"]]
        crossover[m] = ", ".join(f"{f:g}x" for f in ahead) or "none"

        print(f"### {c.DISPLAY[m]}, {WORKERS} workers, 25 Gbps, compute X times faster\n")
        rows = []
        for f, t in res[m].items():
            rows.append(
                [f"{f:g}x", c.s(t["baseline"])]
                + [c.x(t["baseline"] / t[k]) for k in SHOWN]
                + [
                    f"{t['multicast+aggregation'] / t['ring-reduce']:.2f}",
                    f"{t['late'] / t['ring-reduce']:.2f}",
                    c.leaders({k: t[k] for k in SHOWN}),
                ]
            )
        print(
            c.table(
                ["compute", "baseline s"]
                + SHOWN
                + ["mc+agg / ring time", "same, forward after distribution", "fastest"],
                rows,
            )
        )
        print()

    print("### Compute speedups at which multicast + aggregation is ahead of ring-reduce (by more than 1%)\n")
    print(c.table(["model", "mc+agg ahead at"], [[c.DISPLAY[m], crossover[m]] for m in c.SEED000_MODELS]))
    t = res["resnet200"][3.0]
    print(
        "\nResNet-200 at 3x, speedup over one PS: "
        + ", ".join(f"{k} {c.x(t['baseline'] / t[k])} (paper {PAPER_RESNET200_3X[k]:g}x)" for k in PAPER_RESNET200_3X)
    )

    def draw(plt: object) -> None:
        fig, axes = plt.subplots(1, 4, figsize=(14, 3.6))  # type: ignore[attr-defined]
        for ax, m in zip(axes, c.SEED000_MODELS):
            for k in SHOWN:
                ax.plot(SPEEDUPS, [res[m][f]["baseline"] / res[m][f][k] for f in SPEEDUPS], marker="o", label=k)
            ax.set_xlabel("compute speedup")
            ax.set_ylabel("speedup over 1 PS")
            ax.set_title(c.DISPLAY[m])
        axes[0].legend(fontsize=7)

    c.plot("seed000_faster_compute", draw, not opts.no_plot)


if __name__ == "__main__":
    main()
