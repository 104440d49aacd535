"""Every built-in strategy on every preset fabric at 1,024 workers: answered or refused.

Runs each strategy listed by ``tensorwire strategies`` on star, leaf-spine 4:1
oversubscribed, nodes (DGX A100 machines), rail DGX A100 and rail DGX H100, for ResNet-50
(25 Gbps) and Llama-3 70B (H100, 8,192 tokens, 400 Gbps), through ``tensorwire.simulate``
with the default flow budget. Each cell runs in a fresh process and prints its wall time,
``refused: <reason>`` (the flow budget refused it up front), or ``n/a: <reason>`` (the
strategy cannot run on that fabric by design). The table goes into docs/benchmarks.md.

Run: ``.venv/bin/python benchmarks/matrix.py [--models resnet50 llama3_70b]
[--max-flows N|none] [--estimate] [--timeout S]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys

CELL = r"""
import json, sys, time
import tensorwire as tw
from tensorwire import _core
spec = json.loads(sys.argv[1])
w = tw.load_model(spec["model"], gpu=spec["gpu"], seq_len=spec["seq_len"])
cluster = tw.Cluster(spec["workers"], spec["bandwidth"], topology=spec["topology"])
out = {}
if spec["estimate"]:
    try:
        tw.simulate(w, cluster, spec["strategy"], max_flows=1)
        out["estimate"] = 0
    except _core.InputError as e:
        out["estimate"] = e.args[1]
    print(json.dumps(out), flush=True)
t0 = time.perf_counter()
try:
    r = tw.simulate(w, cluster, spec["strategy"], max_flows=spec["max_flows"])
    out.update(wall_s=time.perf_counter() - t0, iteration_time_s=r.iteration_time_s, flows=r.flows)
except _core.InputError as e:
    out.update(wall_s=time.perf_counter() - t0, field=e.args[0], message=e.args[1])
print(json.dumps(out))
"""

MODELS = {
    "resnet50": {"model": "resnet50", "gpu": None, "seq_len": None, "bandwidth": "25Gbps"},
    "llama3_70b": {"model": "llama3_70b", "gpu": "h100", "seq_len": 8192, "bandwidth": "400Gbps"},
}


def fabrics(bandwidth: str) -> dict[str, str]:
    """The preset fabrics, by their column name (leaf-spine: 32 hosts and 8 uplinks a leaf)."""
    return {
        "star": "star",
        "leaf-spine 4:1": f"leaf-spine:hosts_per_leaf=32,spines=8,uplink={bandwidth}",
        "nodes dgx-a100": "nodes:machine=dgx-a100",
        "rail dgx-a100": "rail:node=dgx-a100",
        "rail dgx-h100": "rail:node=dgx-h100",
    }


def cell(spec: dict[str, object], timeout: float) -> str:
    """One cell's text: wall seconds, refused: reason, n/a: reason, or the timeout."""
    try:
        out = subprocess.run(
            [sys.executable, "-c", CELL, json.dumps(spec)], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as e:
        partial = (e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or "").strip()
        found = re.search(r"needs (about [^,]+ flows|more flows than can be counted)", partial)
        return f"> {timeout:.0f} s (stopped)" + (f" [{found.group(1)}]" if found else "")
    if out.returncode != 0:
        return f"error: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"
    r = json.loads(out.stdout.strip().splitlines()[-1])
    if spec["estimate"]:
        r["estimate"] = json.loads(out.stdout.strip().splitlines()[0]).get("estimate", 0)
    est = ""
    if "estimate" in r:
        found = re.search(r"needs (about [^,]+ flows|more flows than can be counted)", str(r["estimate"]))
        est = f" [{found.group(1) if found else 'estimate: 0'}]"
    if "message" in r:
        if r["field"] == "max_flows":
            REFUSALS.setdefault(str(spec["strategy"]), r["message"])
            found = re.search(r"needs (about [^,]+ flows|more flows than can be counted)", r["message"])
            return f"refused in {r['wall_s']:.2f} s ({found.group(1) if found else r['message']})"
        return "n/a (" + re.split("[:;]", r["message"])[0] + ")"
    return f"{r['wall_s']:.2f} s{est}"


REFUSALS: dict[str, str] = {}


def main() -> None:
    import tensorwire as tw
    from tensorwire import _core

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--strategies", nargs="+", default=[s.name for s in tw.strategies()])
    ap.add_argument("--fabrics", nargs="+", default=None, help="column names (default: all)")
    ap.add_argument("--workers", type=int, default=1024)
    ap.add_argument("--max-flows", default=str(_core.DEFAULT_MAX_FLOWS), help="a number, or none for no budget")
    ap.add_argument("--estimate", action="store_true", help="also show the up-front estimate (a run refused at 1)")
    ap.add_argument("--timeout", type=float, default=60.0, help="stop a cell after this many seconds")
    args = ap.parse_args()
    max_flows = None if args.max_flows == "none" else int(args.max_flows)
    print(
        f"machine: {platform.processor() or platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}; workers {args.workers}; max_flows {max_flows}"
    )
    for model in args.models:
        m = MODELS[model]
        fab = fabrics(str(m["bandwidth"]))
        columns = args.fabrics or list(fab)
        print(f"\n### {model}\n")
        print("| strategy | " + " | ".join(columns) + " |")
        print("|---|" + "---|" * len(columns))
        for strategy in args.strategies:
            row = []
            for column in columns:
                spec = dict(
                    m,
                    workers=args.workers,
                    topology=fab[column],
                    strategy=strategy,
                    max_flows=max_flows,
                    estimate=args.estimate,
                )
                row.append(cell(spec, args.timeout))
            print(f"| {strategy} | " + " | ".join(row) + " |", flush=True)
        print("\nRefusals (one per strategy):\n")
        for strategy, message in REFUSALS.items():
            print(f"- `{strategy}`: tensorwire: error: max_flows: {message}")
        REFUSALS.clear()


if __name__ == "__main__":
    main()
