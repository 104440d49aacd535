"""Seed 000 Tables 2, 3 and 7: the four models as the simulator sees them (size, compute and
network time of the backward pass at 25 Gbps) and how unevenly TensorFlow's round-robin
placement spreads their bytes over 4 and 8 parameter servers.

Run: .venv/bin/python benchmarks/reproductions/seed000_models.py
"""

from __future__ import annotations

import _common as c

#: Table 2 model size (Gb) and Table 3: forward, backprop compute (without the first
#: backprop layer), backprop network time at 25 Gbps (s), compute:network ratio.
PAPER = {
    "inception_v3": (0.715, 0.176, 0.296, 0.028, 10.6),
    "vgg16": (6.58, 0.169, 0.024, 0.263, 0.09),
    "resnet101": (1.42, 0.176, 0.180, 0.052, 3.46),
    "resnet200": (2.06, 0.357, 0.34, 0.082, 4.14),
}
#: Table 7: share of the bytes on the least and most loaded server (None: not given).
PAPER_T7 = {
    ("vgg16", 4): (None, 0.918),
    ("vgg16", 8): (None, 0.859),
    ("inception_v3", 4): (0.0007, 0.451),
    ("inception_v3", 8): (0.0003, 0.292),
    ("resnet200", 4): (0.165, 0.33),
    ("resnet200", 8): (0.002, 0.22),
}


def shares(sizes: list[int], servers: int) -> tuple[float, float]:
    """Least and most loaded server's share of the bytes when tensor i goes to server
    i mod ``servers`` (TensorFlow's default; the simulator's ``placement=round-robin``)."""
    load = [0] * servers
    for i, b in enumerate(sizes):
        load[i % servers] += b
    return min(load) / sum(load), max(load) / sum(load)


def main() -> None:
    c.args(__doc__)
    print("### Tables 2 and 3: size, compute and backward-pass network time at 25 Gbps; ours (paper)\n")
    rows = []
    for m in c.SEED000_MODELS:
        w = c.seed000_model(m)
        fwd = sum(layer.forward_s for layer in w.layers)
        bwd = sum(layer.backward_s for layer in w.layers)
        first = w.layers[-1].backward_s  # the first layer of backprop is the model's last
        net = w.total_bytes * 8 / 25e9
        p = PAPER[m]
        biggest = max(t.bytes for t in w.tensors)
        rows.append(
            [
                c.DISPLAY[m],
                str(len(w.tensors)),
                f"{w.total_bytes * 8 / 1e9:.3f} ({p[0]})",
                f"{biggest / w.total_bytes:.0%}",
                f"{fwd:.3f} ({p[1]})",
                f"{bwd - first:.3f} ({p[2]})",
                f"{net:.3f} ({p[3]})",
                f"{(bwd - first) / net:.2f} ({p[4]})",
            ]
        )
    print(
        c.table(
            [
                "model",
                "tensors",
                "size Gb",
                "largest tensor",
                "forward s",
                "backprop compute s",
                "backprop net s",
                "comp:net",
            ],
            rows,
        )
    )

    print("\n### Table 7: round-robin placement, share of the bytes on the least / most loaded server; ours (paper)\n")
    rows = []
    for (m, p), (pmin, pmax) in PAPER_T7.items():
        lo, hi = shares([t.bytes for t in c.seed000_model(m).tensors], p)
        rows.append(
            [c.DISPLAY[m], str(p), f"{lo:.4f} ({'-' if pmin is None else pmin})", f"{hi:.3f} ({pmax})", f"{1 / p:.3f}"]
        )
    print(c.table(["model", "servers", "min share", "max share", "ideal"], rows))


if __name__ == "__main__":
    main()
