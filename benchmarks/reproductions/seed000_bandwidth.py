"""Seed 000 Figures 3-5 (section 8.3): each mechanism's speedup over one parameter server
on 32 workers as the link rate goes from 1 to 100 Gbps, for Inception-v3, ResNet-200 and
VGG-16 (Table 3 compute times; ResNet-101 is left off as in the paper).

Run: .venv/bin/python benchmarks/reproductions/seed000_bandwidth.py
"""

from __future__ import annotations

import _common as c

WORKERS = 32
BANDWIDTHS_GBPS = (1, 5, 10, 25, 50, 100)
MODELS = ("inception_v3", "resnet200", "vgg16")
SHOWN = ["aggregation", "multicast", "multicast+aggregation", "ring-reduce", "butterfly mixing"]


def sweep() -> dict[str, dict[int, dict[str, float]]]:
    out: dict[str, dict[int, dict[str, float]]] = {}
    for m in MODELS:
        w = c.seed000_model(m)
        out[m] = {
            g: {k: c.iteration_time(w, WORKERS, f"{g}Gbps", c.MECHANISMS[k]) for k in ["baseline"] + SHOWN}
            for g in BANDWIDTHS_GBPS
        }
        late = c.forward_after_distribution(w)
        for g in BANDWIDTHS_GBPS:
            out[m][g]["late"] = c.iteration_time(late, WORKERS, f"{g}Gbps", c.MECHANISMS["multicast+aggregation"])
    return out


def main() -> None:
    opts = c.args(__doc__)
    res = sweep()
    for m in MODELS:
        print(f"### {c.DISPLAY[m]}, {WORKERS} workers: speedup over one parameter server\n")
        rows = []
        for g, t in res[m].items():
            rows.append(
                [f"{g} Gbps", c.s(t["baseline"])]
                + [c.x(t["baseline"] / t[k]) for k in SHOWN]
                + [
                    f"{t['multicast+aggregation'] / t['ring-reduce']:.2f}",
                    f"{t['late'] / t['ring-reduce']:.2f}",
                    c.leaders({k: t[k] for k in SHOWN}),
                ]
            )
        print(
            c.table(
                ["bandwidth", "baseline s"]
                + SHOWN
                + ["mc+agg / ring time", "same, forward after distribution", "fastest"],
                rows,
            )
        )
        print()

    def draw(plt: object) -> None:
        fig, axes = plt.subplots(1, len(MODELS), figsize=(13, 3.6))  # type: ignore[attr-defined]
        for ax, m in zip(axes, MODELS):
            for k in SHOWN:
                ax.plot(
                    BANDWIDTHS_GBPS,
                    [res[m][g]["baseline"] / res[m][g][k] for g in BANDWIDTHS_GBPS],
                    marker="o",
                    label=k,
                )
            ax.set_xscale("log")
            ax.set_xlabel("Gbps")
            ax.set_ylabel("speedup over 1 PS")
            ax.set_title(f"{c.DISPLAY[m]}, {WORKERS} workers")
        axes[0].legend(fontsize=7)

    c.plot("seed000_bandwidth", draw, not opts.no_plot)


if __name__ == "__main__":
    main()
