"""Seed 000 Figures 9-10 (section 8.5): Inception-v3 with 1 to 125 more modules on 32
workers at 25 Gbps; each mechanism's speedup over one parameter server.

Kinds of module: ``compute`` (35x35x288, Inception's Mixed_5d) and ``network`` (17x17x768,
Mixed_6e), both copied with their gradient sizes and their share of Table 3's compute
(split by FLOPs), as ``tensorwire.workloads.synthetic.add_modules`` builds them; and
``network, no compute``: the same Mixed_6e copies with their compute set to zero, the
extreme of a network-heavy module (see docs/reproductions.md for why it is shown).

Run: .venv/bin/python benchmarks/reproductions/seed000_synthetic.py
"""

from __future__ import annotations

import _common as c
import tensorwire as tw
from tensorwire.workloads.synthetic import add_modules

WORKERS, BANDWIDTH = 32, "25Gbps"
COUNTS = (0, 1, 5, 25, 125)
KINDS = ("compute", "network", "network, no compute")
SHOWN = ["aggregation", "multicast", "multicast+aggregation", "ring-reduce", "butterfly mixing"]


def synthetic(kind: str, count: int) -> tw.Workload:
    """Inception-v3 (Table 3 times) with ``count`` more modules of ``kind``."""
    base = c.seed000_model("inception_v3")
    if kind != "network, no compute":
        return add_modules(base, f"{kind}:{count}")
    w = add_modules(base, f"network:{count}")
    layers = tuple(tw.Layer(x.name, 0.0, 0.0, x.tensors) if "_copy" in x.name else x for x in w.layers)
    return tw.Workload(w.name + "-nocompute", w.batch_size, layers, w.description, w.sources)


def main() -> None:
    opts = c.args(__doc__)
    res: dict[str, dict[int, dict[str, float]]] = {}
    for kind in KINDS:
        res[kind] = {}
        print(f"### Inception-v3 + N {kind} modules, {WORKERS} workers, 25 Gbps: speedup over one parameter server\n")
        rows = []
        for n in COUNTS:
            w = synthetic(kind, n)
            t = {k: c.iteration_time(w, WORKERS, BANDWIDTH, c.MECHANISMS[k]) for k in ["baseline"] + SHOWN}
            res[kind][n] = t
            rows.append(
                [str(n), f"{w.total_bytes / 1e6:.0f}", c.s(w.compute_time_s), c.s(t["baseline"])]
                + [c.x(t["baseline"] / t[k]) for k in SHOWN]
                + [c.leaders({k: t[k] for k in SHOWN})]
            )
        print(c.table(["N", "MB", "compute s", "baseline s"] + SHOWN + ["fastest"], rows))
        print()

    def draw(plt: object) -> None:
        fig, axes = plt.subplots(1, len(KINDS), figsize=(13, 3.6))  # type: ignore[attr-defined]
        for ax, kind in zip(axes, KINDS):
            for k in SHOWN:
                ax.plot(
                    [n + 1 for n in COUNTS],
                    [res[kind][n]["baseline"] / res[kind][n][k] for n in COUNTS],
                    marker="o",
                    label=k,
                )
            ax.set_xscale("log")
            ax.set_xticks([n + 1 for n in COUNTS], [str(n) for n in COUNTS])
            ax.set_xlabel("modules added")
            ax.set_ylabel("speedup over 1 PS")
            ax.set_title(f"Inception-v3 + {kind}", fontsize=9)
        axes[0].legend(fontsize=7)

    c.plot("seed000_synthetic", draw, not opts.no_plot)


if __name__ == "__main__":
    main()
