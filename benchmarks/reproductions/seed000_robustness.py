"""Seed 000 section 9 (robustness to end-host design): Table 8 (8 parameter servers with
every tensor split evenly), Table 9 (no global barrier), section 9.2 (message pipelining)
and Table 10 (block distribution against in-network aggregation at 10 and 100 Gbps).
32 workers; Table 3 compute times.

Run: .venv/bin/python benchmarks/reproductions/seed000_robustness.py
"""

from __future__ import annotations

import _common as c

WORKERS = 32
MULTIAGG = "ps+multicast+ina"
SHARDED = "ps+multicast+ina:num_ps=8,placement=sharded"
NO_BARRIER = "ps+multicast+ina:barrier=false"
PIECE = "4MiB"

#: Table 8: 1 PS multiagg, 8 PS multiagg, ring-reduce (s), 32 workers, 25 Gbps.
PAPER_T8 = {
    "vgg16": (0.765, 0.539, 0.683),
    "resnet200": (0.830, 0.820, 0.824),
    "resnet101": (0.598, 0.551, 0.556),
    "inception_v3": (0.569, 0.549, 0.562),
}
#: Table 9: multiagg, ring-reduce, multiagg without barrier (s). The paper measures from the
#: first parameter's aggregation in iteration 1 to the same event in iteration 3, i.e. two
#: iterations (its multiagg and ring columns are twice Table 8's).
PAPER_T9 = {
    "vgg16": (1.53, 1.37, 1.76),
    "resnet200": (1.65, 1.65, 1.65),
    "resnet101": (1.17, 1.13, 1.08),
    "inception_v3": (1.14, 1.13, 0.988),
}
#: Table 10: aggregation and block distribution (s), 32 workers, at 10 and 100 Gbps.
PAPER_T10 = {
    ("inception_v3", 10): (2.99, 3.1),
    ("vgg16", 10): (22.3, 21.7),
    ("resnet101", 10): (4.9, 4.94),
    ("resnet200", 10): (7.77, 7.79),
    ("inception_v3", 100): (0.71, 0.77),
    ("vgg16", 100): (2.23, 2.27),
    ("resnet101", 100): (0.89, 0.94),
    ("resnet200", 100): (1.19, 1.45),
}
ORDER = ("vgg16", "resnet200", "resnet101", "inception_v3")


def main() -> None:
    c.args(__doc__)
    models = {m: c.seed000_model(m) for m in ORDER}

    print("### Table 8: 8 parameter servers, every tensor split evenly; 32 workers, 25 Gbps; seconds, ours (paper)\n")
    rows = []
    for m in ORDER:
        t = [c.iteration_time(models[m], WORKERS, "25Gbps", spec) for spec in (MULTIAGG, SHARDED, "ring")]
        rows.append(
            [c.DISPLAY[m]]
            + [f"{a:.3f} ({p:.3f})" for a, p in zip(t, PAPER_T8[m])]
            + [c.leaders({"mc+agg 8 PS": t[1], "ring-reduce": t[2]})]
        )
    print(c.table(["model", "mc+agg, 1 PS", "mc+agg, 8 PS sharded", "ring-reduce", "faster of the last two"], rows))

    print(
        "\n### Table 9: no global barrier; 32 workers, 25 Gbps; seconds per iteration, ours (paper's two-iteration span / 2)\n"
    )
    rows = []
    for m in ORDER:
        t = [c.iteration_time(models[m], WORKERS, "25Gbps", spec) for spec in (MULTIAGG, "ring", NO_BARRIER)]
        rows.append(
            [c.DISPLAY[m]]
            + [f"{a:.3f} ({p / 2:.3f})" for a, p in zip(t, PAPER_T9[m])]
            + [f"{t[2] / t[0]:.2f} ({PAPER_T9[m][2] / PAPER_T9[m][0]:.2f})"]
        )
    print(c.table(["model", "mc+agg", "ring-reduce", "mc+agg, no barrier", "no barrier / barrier"], rows))

    print(f"\n### Section 9.2: message pipelining ({PIECE} messages); 32 workers, 25 Gbps; seconds\n")
    specs = {
        "ps": "ps",
        f"ps:pipeline={PIECE}": f"ps:pipeline={PIECE}",
        "mc+agg": MULTIAGG,
        f"mc+agg:pipeline={PIECE}": f"{MULTIAGG}:pipeline={PIECE}",
        f"mc+agg:pipeline={PIECE},credit={PIECE}": f"{MULTIAGG}:pipeline={PIECE},credit={PIECE}",
        "ring": "ring",
        f"ring:partition={PIECE}": f"ring:partition={PIECE}",
    }
    b = 25e9 / 8
    rows = [
        [c.DISPLAY[m]]
        + [c.s(c.iteration_time(models[m], WORKERS, "25Gbps", spec)) for spec in specs.values()]
        + [c.s(2 * models[m].total_bytes / b), c.s(max(t.bytes for t in models[m].tensors) / b)]
        for m in ORDER
    ]
    print(c.table(["model"] + list(specs) + ["2 S / B", "largest tensor / B"], rows))

    print("\n### Pushes one at a time (credit=1B) against all at once (the default); 32 workers; seconds\n")
    rows = []
    for m in ("resnet200", "vgg16"):
        for g in (1, 25):
            t = [
                c.iteration_time(models[m], WORKERS, f"{g}Gbps", spec)
                for spec in (MULTIAGG, f"{MULTIAGG}:credit=1B", "ring")
            ]
            rows.append([c.DISPLAY[m], str(g)] + [c.s(v) for v in t])
    print(c.table(["model", "Gbps", "mc+agg", "mc+agg:credit=1B", "ring-reduce"], rows))

    print("\n### Table 10: in-network aggregation against block distribution; 32 workers; seconds, ours (paper)\n")
    rows = []
    for g in (10, 100):
        for m in ("inception_v3", "vgg16", "resnet101", "resnet200"):
            bw = f"{g}Gbps"
            agg, block, rr = (
                c.iteration_time(models[m], WORKERS, bw, spec) for spec in ("ps+ina", "ps:distribution=block", "ps")
            )
            pa, pb = PAPER_T10[(m, g)]
            rows.append(
                [
                    c.DISPLAY[m],
                    f"{g}",
                    f"{agg:.3f} ({pa})",
                    f"{block:.3f} ({pb})",
                    f"{block / agg:.2f} ({pb / pa:.2f})",
                    c.s(rr),
                ]
            )
    print(
        c.table(
            [
                "model",
                "Gbps",
                "aggregation (ps+ina)",
                "block distribution (ps)",
                "block / aggregation",
                "round-robin distribution (ps)",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
