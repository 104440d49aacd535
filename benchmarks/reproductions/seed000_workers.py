"""Seed 000 Figures 6-8 (section 8.3): each mechanism's speedup over one parameter server
at 25 Gbps as the cluster grows from 4 to 64 workers, for Inception-v3, ResNet-200 and
VGG-16 (Table 3 compute times).

Run: .venv/bin/python benchmarks/reproductions/seed000_workers.py
"""

from __future__ import annotations

import _common as c

BANDWIDTH = "25Gbps"
WORKERS = (4, 8, 16, 32, 64)
MODELS = ("inception_v3", "resnet200", "vgg16")
SHOWN = ["aggregation", "multicast", "multicast+aggregation", "ring-reduce", "butterfly mixing"]


def sweep() -> dict[str, dict[int, dict[str, float]]]:
    out: dict[str, dict[int, dict[str, float]]] = {}
    for m in MODELS:
        w = c.seed000_model(m)
        out[m] = {
            n: {k: c.iteration_time(w, n, BANDWIDTH, c.MECHANISMS[k]) for k in ["baseline"] + SHOWN} for n in WORKERS
        }
        late = c.forward_after_distribution(w)
        for n in WORKERS:
            out[m][n]["late"] = c.iteration_time(late, n, BANDWIDTH, c.MECHANISMS["multicast+aggregation"])
    return out


def main() -> None:
    opts = c.args(__doc__)
    res = sweep()
    for m in MODELS:
        print(f"### {c.DISPLAY[m]}, 25 Gbps: speedup over one parameter server\n")
        rows = []
        for n, t in res[m].items():
            rows.append(
                [str(n), c.s(t["baseline"])]
                + [c.x(t["baseline"] / t[k]) for k in SHOWN]
                + [
                    f"{t['multicast+aggregation'] / t['ring-reduce']:.2f}",
                    f"{t['late'] / t['ring-reduce']:.2f}",
                    c.leaders({k: t[k] for k in SHOWN}),
                ]
            )
        print(
            c.table(
                ["workers", "baseline s"]
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
                ax.plot(WORKERS, [res[m][n]["baseline"] / res[m][n][k] for n in WORKERS], marker="o", label=k)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("workers")
            ax.set_ylabel("speedup over 1 PS")
            ax.set_title(f"{c.DISPLAY[m]}, 25 Gbps")
        axes[0].legend(fontsize=7)

    c.plot("seed000_workers", draw, not opts.no_plot)


if __name__ == "__main__":
    main()
