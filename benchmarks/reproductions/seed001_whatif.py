"""Seed 001's what-if analysis: the scaling factor of ResNet-50, ResNet-101 and VGG-16
(V100 compute times, batch 32) under Horovod-style ring all-reduce with the network fully
used, against the link rate from 1 to 100 Gbps; and the gradient compression ratio needed
for near-linear scaling at 10 and 100 Gbps.

Model (seed 001): a fusion buffer with Horovod's defaults (64 MiB, 5 ms cycle); each fused
all-reduce moves 2 S (N-1) / N bytes per host at the link rate (flow model, no latency, no
per-message overhead: "the network fully used") and adds received chunks at the AddEst
rate (2400 Gbps: a V100's 900 GB/s HBM2 reads two operands and writes one, 3 bytes moved
per gradient byte, i.e. 300 GB/s). One worker stands for one 8-GPU server (seed 001 runs
p3dn.24xlarge machines; NVLink inside a server is not the network): N = 8 servers.
Compression divides the bytes on the wire by the ratio.

Run: .venv/bin/python benchmarks/reproductions/seed001_whatif.py
"""

from __future__ import annotations

import _common as c
import tensorwire as tw

MODELS = ("resnet50", "resnet101", "vgg16")
SERVERS = 8
LATENCY_S = 0.0
HOROVOD = "ring:fusion=64MiB,cycle=5ms,reduce=2400Gbps"
BANDWIDTHS_GBPS = (1, 2.5, 5, 10, 25, 40, 100)
RATIOS = (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 50, 100)
SHOWN_RATIOS = (1, 2, 3, 5, 10, 20)
#: "Compression never needed": a ratio so large that the network costs nothing.
LIMIT_RATIO = 1000
#: Near-linear: within 1% of what the same job reaches with a free network.
NEAR = 0.99
#: Seed 001: moving all parameters at 100 Gbps takes 7.8, 13.6 and 42.2 ms.
PAPER_TRANSFER_MS = {"resnet50": 7.8, "resnet101": 13.6, "vgg16": 42.2}
PAPER_NEEDED = {
    ("resnet50", 10): "2-5x",
    ("resnet101", 10): "2-5x",
    ("vgg16", 10): "~10x",
    ("resnet50", 100): "none",
    ("resnet101", 100): "none",
    ("vgg16", 100): "none",
}


def scaling(w: tw.Workload, gbps: float, ratio: float = 1, servers: int = SERVERS, spec: str = HOROVOD) -> float:
    cluster = tw.Cluster(servers, f"{gbps}Gbps", latency=LATENCY_S)
    return tw.simulate(w, cluster, f"{spec},compression={ratio}", iterations=c.ITERATIONS).scaling_factor


def needed(w: tw.Workload, gbps: float) -> tuple[float, float]:
    """(smallest ratio in RATIOS within NEAR of the free-network scaling, that scaling)."""
    limit = scaling(w, gbps, LIMIT_RATIO)
    for r in RATIOS:
        if scaling(w, gbps, r) >= NEAR * limit:
            return r, limit
    return float("inf"), limit


def main() -> None:
    opts = c.args(__doc__)
    models = {m: tw.load_model(m, "v100") for m in MODELS}

    print("### The models (V100, batch 32)\n")
    rows = [
        [
            c.DISPLAY[m],
            f"{w.total_bytes / 1e6:.1f}",
            f"{w.compute_time_s * 1e3:.1f}",
            f"{w.total_bytes * 8 / 100e9 * 1e3:.1f} ({PAPER_TRANSFER_MS[m]})",
            f"{w.total_bytes / 2**20 * 8 / 100:.1f}",
        ]
        for m, w in models.items()
    ]
    print(c.table(["model", "MB", "compute ms", "S at 100 Gbps, ms (paper)", "S in MiB read as MB, ms"], rows))

    print(f"\n### Scaling factor against bandwidth, {SERVERS} servers, {HOROVOD}\n")
    curve = {m: {g: scaling(w, g) for g in BANDWIDTHS_GBPS} for m, w in models.items()}
    rows = [[f"{g:g} Gbps"] + [f"{curve[m][g]:.3f}" for m in MODELS] for g in BANDWIDTHS_GBPS]
    print(c.table(["bandwidth"] + [c.DISPLAY[m] for m in MODELS], rows))

    print("\n### Scaling factor against compression ratio\n")
    rows = []
    for g in (10, 100):
        for m, w in models.items():
            rows.append(
                [f"{g}", c.DISPLAY[m]]
                + [f"{scaling(w, g, r):.3f}" for r in SHOWN_RATIOS]
                + [f"{scaling(w, g, LIMIT_RATIO):.3f}"]
            )
    print(c.table(["Gbps", "model"] + [f"{r:g}x" for r in SHOWN_RATIOS] + ["free network"], rows))

    print(f"\n### Compression needed for {NEAR:.0%} of the free-network scaling factor: ours (seed 001)\n")
    rows = []
    for g in (10, 100):
        for m, w in models.items():
            r, limit = needed(w, g)
            rows.append([f"{g}", c.DISPLAY[m], f"{r:g}x ({PAPER_NEEDED[(m, g)]})", f"{limit:.3f}"])
    print(c.table(["Gbps", "model", "ratio needed", "free-network scaling"], rows))

    print(f"\n### The fusion cycle caps the scaling factor: free network (compression {LIMIT_RATIO}x), 100 Gbps\n")
    variants = {
        "fusion 64MiB, cycle 5ms": HOROVOD,
        "fusion 64MiB, cycle 1ms": "ring:fusion=64MiB,cycle=1ms,reduce=2400Gbps",
        "no fusion": "ring:reduce=2400Gbps",
    }
    rows = [
        [c.DISPLAY[m]] + [f"{scaling(w, 100, LIMIT_RATIO, spec=v):.3f}" for v in variants.values()]
        for m, w in models.items()
    ]
    print(c.table(["model"] + list(variants), rows))

    print("\n### Number of servers, no compression\n")
    rows = [
        [f"{g}", str(n)] + [f"{scaling(w, g, servers=n):.3f}" for w in models.values()]
        for g in (10, 100)
        for n in (2, 4, 8)
    ]
    print(c.table(["Gbps", "servers"] + [c.DISPLAY[m] for m in MODELS], rows))

    def draw(plt: object) -> None:
        fig, ax = plt.subplots(figsize=(5.5, 3.6))  # type: ignore[attr-defined]
        for m in MODELS:
            ax.plot(BANDWIDTHS_GBPS, [curve[m][g] for g in BANDWIDTHS_GBPS], marker="o", label=c.DISPLAY[m])
        ax.set_xscale("log")
        ax.set_xlabel("Gbps")
        ax.set_ylabel("scaling factor")
        ax.set_title(f"{SERVERS} servers, Horovod fusion, network fully used", fontsize=9)
        ax.legend(fontsize=8)

    c.plot("seed001_whatif", draw, not opts.no_plot)


if __name__ == "__main__":
    main()
