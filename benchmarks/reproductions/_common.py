"""Shared pieces of the reproduction scripts (seed 000 and seed 001); see docs/reproductions.md.

Every script prints markdown tables on stdout and, when matplotlib is installed, writes
its plots to ``docs/img/`` (``--no-plot`` skips them). Runs are deterministic: the
simulator has no randomness here (no stragglers), and each configuration is simulated
for ``ITERATIONS`` iterations, the first being warm-up.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

import tensorwire as tw

ROOT = Path(__file__).resolve().parents[2]
IMG = ROOT / "docs" / "img"

#: Iterations per simulation (first is warm-up); the steady state is reached by the second.
ITERATIONS = 3

#: Seed 000's simulator evidently models link bandwidth only: its ring-reduce with
#: per-parameter messaging ties multicast + aggregation on ResNet-200 (611 tensors), which
#: an unfused per-tensor ring cannot do if every one of its 2(N-1) steps pays a latency.
#: The seed 000 scripts therefore run with zero latency; headline.py shows what 5 us/hop
#: changes.
SEED000_LATENCY_S = 0.0

#: Seed 000's four models, all with its Table 3 compute times (device ``netop2020``).
SEED000_MODELS = ("inception_v3", "vgg16", "resnet101", "resnet200")
SEED000_GPU = "netop2020"

#: Seed 000's mechanisms as strategy specs. The baseline is one parameter server: Table 4's
#: speedups imply it (see docs/reproductions.md).
MECHANISMS = {
    "baseline": "ps",
    "aggregation": "ps+ina",
    "multicast": "ps+multicast",
    "multicast+aggregation": "ps+multicast+ina",
    "ring-reduce": "ring",
    "ring-reduce+multicast": "ring+multicast",
    "butterfly mixing": "butterfly",
}

#: Short names for plot axes.
SHORT = {
    "baseline": "1 PS",
    "aggregation": "agg",
    "multicast": "mc",
    "multicast+aggregation": "mc+agg",
    "ring-reduce": "ring",
    "ring-reduce+multicast": "ring+mc",
    "butterfly mixing": "butterfly",
}

DISPLAY = {
    "inception_v3": "Inception-v3",
    "vgg16": "VGG-16",
    "resnet50": "ResNet-50",
    "resnet101": "ResNet-101",
    "resnet200": "ResNet-200",
}


def seed000_model(name: str) -> tw.Workload:
    """A seed 000 model with its Table 3 compute times, batch 32 per worker."""
    return tw.load_model(name, SEED000_GPU)


def forward_after_distribution(w: tw.Workload) -> tw.Workload:
    """``w`` with its whole forward compute moved onto its last layer, so that the forward
    pass cannot start before every parameter has arrived.

    The simulator lets a parameter-server worker start layer i's forward pass as soon as
    layer i's parameters arrive, and its servers send parameters in forward order, so the
    forward pass hides behind the distribution. Seed 000 section 5 found that overlap
    "plays an insignificant role" in its traces (TensorFlow sends parameters in its own
    order). Gradient sizes, their order and the backward pass are unchanged; all-reduce
    strategies wait for the whole model anyway, so only the PS variants change.
    """
    fwd = sum(layer.forward_s for layer in w.layers)
    last = len(w.layers) - 1
    layers = tuple(
        tw.Layer(layer.name, fwd if i == last else 0.0, layer.backward_s, layer.tensors)
        for i, layer in enumerate(w.layers)
    )
    return tw.Workload(w.name + "-forward-after-distribution", w.batch_size, layers, w.description, w.sources)


def iteration_time(
    workload: tw.Workload, workers: int, bandwidth: str, spec: str, latency_s: float = SEED000_LATENCY_S
) -> float:
    """Steady-state iteration time, seconds (flow model, star, no host overhead)."""
    return simulate(workload, workers, bandwidth, spec, latency_s).iteration_time_s


def simulate(
    workload: tw.Workload, workers: int, bandwidth: str, spec: str, latency_s: float = SEED000_LATENCY_S
) -> tw.Result:
    """The whole result, for scripts that need more than the iteration time. Without the
    default flow budget: the reproductions are fixed runs known to end (a few seconds each;
    unfolded parameter servers on 32-64 workers are over the budget meant for ad-hoc runs)."""
    cluster = tw.Cluster(workers, bandwidth, latency=latency_s)
    return tw.simulate(workload, cluster, spec, iterations=ITERATIONS, max_flows=None)


def ranking(times: dict[str, float], tie: float = 0.01) -> str:
    """``a = b > c``: labels from fastest to slowest; ``=`` joins times within ``tie``
    (relative) of the previous one."""
    order = sorted(times, key=lambda k: (times[k], k))
    out = order[0]
    for prev, cur in zip(order, order[1:]):
        out += (" = " if times[cur] <= times[prev] * (1 + tie) else " > ") + cur
    return out


def leaders(times: dict[str, float], tie: float = 0.01) -> str:
    """The fastest label and every label tied with it (``a = b``), or ``all tie``."""
    order = ranking(times, tie)
    return order.split(" > ")[0] if " > " in order else "all tie"


def geomean(values: Iterable[float]) -> float:
    vals = list(values)
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], align: Optional[str] = None) -> str:
    """A markdown table; ``align`` has one letter per column, ``l`` or ``r`` (default: first
    column left, the rest right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def x(value: float) -> str:
    """A speedup such as ``4.14x``."""
    return f"{value:.2f}x"


def s(value: float) -> str:
    """Seconds with three decimals."""
    return f"{value:.3f}"


def args(description: Optional[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-plot", action="store_true", help="do not write plots to docs/img/")
    return ap.parse_args()


def plot(name: str, draw: Callable[[object], None], enabled: bool = True) -> Optional[Path]:
    """Calls ``draw(matplotlib.pyplot)``, saves the current figure as docs/img/NAME.png and
    prints where.

    Returns the path, or None when plots are disabled or matplotlib is missing (the tables
    are the result; plots are an illustration).
    """
    if not enabled:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    IMG.mkdir(parents=True, exist_ok=True)
    path = IMG / f"{name}.png"
    tmp = path.with_suffix(".png.tmp")
    draw(plt)
    plt.tight_layout()
    # No software/date metadata: the same numbers give the same bytes.
    plt.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    plt.close("all")
    tmp.replace(path)
    print(f"\nplot: {path.relative_to(ROOT)}")
    return path
