"""Seed 000 Tables 4 and 6 and section 8.7: speedup of each mechanism over one parameter
server for Inception-v3, VGG-16, ResNet-101 and ResNet-200 (Table 3 compute times) on 32
workers at 25 Gbps, their ranking, and what 5 us of latency per hop changes.

Run: .venv/bin/python benchmarks/reproductions/seed000_headline.py
"""

from __future__ import annotations

import _common as c

WORKERS, BANDWIDTH = 32, "25Gbps"

#: Seed 000 Table 4 (network support) and Table 6 (end-host mechanisms), speedup over the
#: baseline, 32 workers, 25 Gbps.
PAPER = {
    "inception_v3": {
        "aggregation": 1.34,
        "multicast": 1.69,
        "multicast+aggregation": 3.28,
        "ring-reduce": 3.35,
        "ring-reduce+multicast": 3.41,
        "butterfly mixing": 3.41,
    },
    "vgg16": {
        "aggregation": 1.89,
        "multicast": 1.94,
        "multicast+aggregation": 22.0,
        "ring-reduce": 24.6,
        "ring-reduce+multicast": 24.6,
        "butterfly mixing": 11.3,
    },
    "resnet101": {
        "aggregation": 1.65,
        "multicast": 1.79,
        "multicast+aggregation": 6.07,
        "ring-reduce": 6.55,
        "ring-reduce+multicast": 6.71,
        "butterfly mixing": 6.46,
    },
    "resnet200": {
        "aggregation": 1.65,
        "multicast": 1.85,
        "multicast+aggregation": 6.7,
        "ring-reduce": 6.75,
        "ring-reduce+multicast": 6.76,
        "butterfly mixing": 6.79,
    },
}
#: Seed 000 Table 8, iteration time (s) of multicast + aggregation and of ring-reduce.
PAPER_TIMES = {
    "inception_v3": (0.569, 0.562),
    "vgg16": (0.765, 0.683),
    "resnet101": (0.598, 0.556),
    "resnet200": (0.830, 0.824),
}
#: Seed 000 Table 2, model size in Gb.
PAPER_SIZE_GB = {"inception_v3": 0.715, "vgg16": 6.58, "resnet101": 1.42, "resnet200": 2.06}
PAPER_RANKING = "ring-reduce > multicast+aggregation > butterfly mixing > multicast > aggregation"
RANKED = ["aggregation", "multicast", "multicast+aggregation", "ring-reduce", "butterfly mixing"]

#: The latency ablation: per-hop latency, and the Horovod-style fused ring.
LATENCY_S = 5e-6
FUSED_RING = "ring:fusion=64MiB,cycle=5ms"


def main() -> None:
    opts = c.args(__doc__)
    times: dict[str, dict[str, float]] = {}
    for m in c.SEED000_MODELS:
        w = c.seed000_model(m)
        times[m] = {label: c.iteration_time(w, WORKERS, BANDWIDTH, spec) for label, spec in c.MECHANISMS.items()}

    print(f"### Speedup over one parameter server, {WORKERS} workers, 25 Gbps, 0 us/hop: ours (paper)\n")
    labels = [k for k in c.MECHANISMS if k != "baseline"]
    rows = []
    for m in c.SEED000_MODELS:
        t = times[m]
        paper_base = PAPER_TIMES[m][1] * PAPER[m]["ring-reduce"]
        rows.append(
            [c.DISPLAY[m], f"{t['baseline']:.2f} ({paper_base:.2f})"]
            + [f"{c.x(t['baseline'] / t[k])} ({PAPER[m][k]:.2f}x)" for k in labels]
        )
    print(c.table(["model", "baseline s"] + labels, rows))
    print("\nPaper baseline seconds: Table 8 ring-reduce time x Table 6 ring-reduce speedup.\n")

    print("### The paper's baseline is one server: 2 N S / B against the baseline its tables imply (s)\n")
    rows = []
    for m in c.SEED000_MODELS:
        one_ps = 2 * WORKERS * PAPER_SIZE_GB[m] / 25
        rows.append(
            [
                c.DISPLAY[m],
                f"{PAPER_SIZE_GB[m]}",
                c.s(one_ps),
                c.s(PAPER_TIMES[m][1] * PAPER[m]["ring-reduce"]),
                c.s(PAPER_TIMES[m][0] * PAPER[m]["multicast+aggregation"]),
                c.s(times[m]["baseline"]),
            ]
        )
    print(
        c.table(
            [
                "model",
                "paper size Gb",
                "2 N S / B, paper size",
                "Table 8 ring x Table 6",
                "Table 8 mc+agg x Table 4",
                "ours",
            ],
            rows,
        )
    )
    print()

    print("### Iteration time (s): ours; paper's Table 8 where it has one\n")
    rows = []
    for m in c.SEED000_MODELS:
        t = times[m]
        w = c.seed000_model(m)
        rows.append(
            [c.DISPLAY[m], c.s(w.compute_time_s)]
            + [c.s(t[k]) for k in labels]
            + [c.s(PAPER_TIMES[m][0]), c.s(PAPER_TIMES[m][1])]
        )
    print(c.table(["model", "compute"] + labels + ["paper mc+agg", "paper ring"], rows))

    print("\n### Ranking (fastest first; `=` within 1%)\n")
    rows = [[c.DISPLAY[m], c.ranking({k: times[m][k] for k in RANKED})] for m in c.SEED000_MODELS]
    mean = {k: c.geomean(times[m]["baseline"] / times[m][k] for m in c.SEED000_MODELS) for k in RANKED}
    # Rank the geometric means like times: a larger speedup is a shorter time.
    rows.append(["all four (geometric mean speedup)", c.ranking({k: 1 / v for k, v in mean.items()})])
    rows.append(["paper (section 8.7)", PAPER_RANKING])
    print(c.table(["model", "ranking"], rows, "ll"))
    print("\nGeometric mean speedups: " + ", ".join(f"{k} {c.x(v)}" for k, v in mean.items()))

    print("\n### Forward pass not overlapped with the distribution (all forward compute on the last layer)\n")
    late: dict[str, dict[str, float]] = {}
    rows = []
    for m in c.SEED000_MODELS:
        w = c.forward_after_distribution(c.seed000_model(m))
        late[m] = {label: c.iteration_time(w, WORKERS, BANDWIDTH, spec) for label, spec in c.MECHANISMS.items()}
        rows.append(
            [c.DISPLAY[m], c.s(late[m]["baseline"])]
            + [f"{c.x(late[m]['baseline'] / late[m][k])} ({PAPER[m][k]:.2f}x)" for k in labels]
        )
    print(c.table(["model", "baseline s"] + labels, rows))
    print()
    rows = [[c.DISPLAY[m], c.ranking({k: late[m][k] for k in RANKED})] for m in c.SEED000_MODELS]
    mean_late = {k: c.geomean(late[m]["baseline"] / late[m][k] for m in c.SEED000_MODELS) for k in RANKED}
    rows.append(["all four (geometric mean speedup)", c.ranking({k: 1 / v for k, v in mean_late.items()})])
    rows.append(["paper (section 8.7)", PAPER_RANKING])
    print(c.table(["model", "ranking, forward after distribution"], rows, "ll"))
    print("\nGeometric mean speedups: " + ", ".join(f"{k} {c.x(v)}" for k, v in mean_late.items()))

    print(f"\n### With {LATENCY_S * 1e6:.0f} us per hop: speedup over one parameter server\n")
    specs = {
        "multicast+aggregation": "ps+multicast+ina",
        "ring-reduce": "ring",
        "ring-reduce (fused 64MiB/5ms)": FUSED_RING,
        "ring-reduce+multicast": "ring+multicast",
        "butterfly mixing": "butterfly",
    }
    rows = []
    lat: dict[str, dict[str, float]] = {}
    for m in c.SEED000_MODELS:
        w = c.seed000_model(m)
        base = c.iteration_time(w, WORKERS, BANDWIDTH, "ps", LATENCY_S)
        lat[m] = {k: c.iteration_time(w, WORKERS, BANDWIDTH, spec, LATENCY_S) for k, spec in specs.items()}
        # Each unfused ring all-reduce takes 2(N-1) steps of two hops, one collective at a time.
        floor = len(w.tensors) * 2 * (WORKERS - 1) * 2 * LATENCY_S
        rows.append([c.DISPLAY[m], len(w.tensors), c.s(floor), c.s(base)] + [c.x(base / lat[m][k]) for k in specs])
    print(c.table(["model", "tensors", "ring latency s", "baseline s"] + list(specs), rows))

    def draw(plt: object) -> None:
        import numpy as np

        fig, axes = plt.subplots(1, 4, figsize=(14, 3.6))  # type: ignore[attr-defined]
        for ax, m in zip(axes, c.SEED000_MODELS):
            ours = [times[m]["baseline"] / times[m][k] for k in labels]
            paper = [PAPER[m][k] for k in labels]
            pos = np.arange(len(labels))
            ax.bar(pos - 0.2, ours, 0.4, label="tensorwire")
            ax.bar(pos + 0.2, paper, 0.4, label="seed 000")
            ax.set_xticks(pos, [c.SHORT[k] for k in labels], fontsize=8, rotation=30)
            ax.set_title(c.DISPLAY[m])
            ax.set_ylabel("speedup over 1 PS")
        axes[0].legend(fontsize=8)

    c.plot("seed000_headline", draw, not opts.no_plot)


if __name__ == "__main__":
    main()
