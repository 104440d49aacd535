"""Published data-parallel training results against tensorwire's predictions
(docs/reproductions.md, section "Data-parallel training against published results").

Every published figure, with its source URL, is in ``data/training.json``: PyTorch DDP's
benchmark README (DGX-1 V100, 1-16 GPUs, p50 seconds per iteration), Horovod's
published scaling efficiencies (128 and 512 Pascal GPUs on 25 Gbit/s RoCE) and MosaicML's
llm-foundry FSDP benchmarks (MPT models, FULL_SHARD, tokens/s per GPU at 8 to 512 H100s and
16 to 128 A100s).

Each result runs as a tensorwire simulation: the zoo model (parameter sizes from the model
definitions), its compute scaled so that one iteration's forward + backward on one GPU is
the source's own single-GPU time (``compute_s``; never fitted to the result), on the cluster
the source describes, with the strategy the source ran (``ddp`` for PyTorch DDP; Horovod's
Tensor Fusion, ``ring:fusion=64MiB,cycle=5ms``, for Horovod; ``fsdp`` with the source's
mixed precision for MosaicML). An LLM not in the zoo is built from the architecture the
source publishes (``llm``: GPT-2 layout as in ``tensorwire.workloads.llm``; its parameter
count is checked against the source's), its compute per iteration taken from the source's
smallest GPU count (tokens per GPU per iteration / published tokens/s per GPU) and spread
over the layers by their FLOPs. Until a strategy exists the script falls back to
``fallback_strategy`` and says so in the notes.

Reported: predicted against published seconds per iteration, scaling efficiency
(= single-GPU compute time / iteration time = per-GPU throughput over single-GPU
throughput) or tokens/s per GPU (= tokens per GPU per iteration / iteration time); target
within 10%. A study of ``kind`` "check" (metric ``rdma_over_tcp``: Horovod's RDMA-vs-TCP
comparison) runs the study twice, with ``strategy`` and ``compare_strategy``, and reports
the ratio of the iteration times; it is labelled as a check and not counted in the summary.
``--only ID`` and ``--max-rows N`` run a subset;
``--markdown PATH`` writes the tables for docs/reproductions.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import tensorwire as tw
from tensorwire import _core
from tensorwire.workload import Layer, Tensor
from tensorwire.workloads import llm

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "training.json"
TARGET = 0.10


def load(path: Path = DATA) -> list[dict[str, Any]]:
    studies: list[dict[str, Any]] = json.loads(path.read_text())["studies"]
    return studies


@dataclass
class Row:
    study: str
    model: str
    gpus: int
    metric: str
    published: float
    predicted: Optional[float]
    strategy: str
    note: str
    counted: bool = True

    @property
    def error(self) -> Optional[float]:
        return None if self.predicted is None else self.predicted / self.published - 1


def workload(name: str, compute_s: float, batch: int) -> tw.Workload:
    """The zoo model ``name`` at ``batch`` per GPU with its compute scaled to ``compute_s``
    per iteration (the source's single-GPU time); gradient sizes unchanged."""
    w = tw.load_model(name, batch_size=batch)
    return w.with_compute_speedup(w.compute_time_s / compute_s)


def architecture(m: dict[str, Any]) -> llm.Architecture:
    """The published architecture of an LLM entry (``m["llm"]``) in ``tensorwire.workloads.llm``'s
    GPT-2 layout (LayerNorm and biases, GELU MLP of 4 x d_model, learned positions for
    ``seq_len`` tokens, head tied to the token embedding): MPT with llm-foundry's defaults
    (``no_bias`` false, ``learned_pos_emb`` true)."""
    a = m["llm"]
    d, h = a["d_model"], a["heads"]
    return llm.Architecture(
        name=m["model"],
        display_name=m["model"],
        style="gpt",
        layers=a["layers"],
        d_model=d,
        heads=h,
        kv_heads=h,
        head_dim=d // h,
        ffn=4 * d,
        vocab=a["vocab"],
        context=a["seq_len"],
        tied=True,
        published_parameters=a["parameters"],
    )


def parameters(a: llm.Architecture) -> int:
    """Trainable parameters of ``a`` (the tied head counted once)."""
    return sum(n for spec in llm.layers(a, 1) for _, n in spec.tensors)


def tokens_per_gpu(m: dict[str, Any]) -> int:
    """Tokens one GPU processes per iteration: micro-batch x sequence length (no gradient
    accumulation in the encoded rows)."""
    return int(m["micro_batch"] * m["llm"]["seq_len"])


def llm_workload(m: dict[str, Any]) -> tw.Workload:
    """An LLM entry as a workload: the architecture's layers and bf16 tensors, the forward
    time of each layer proportional to its FLOPs, backward 2 x forward (3 x for blocks with
    ``recompute``), all scaled so that forward + backward is ``compute_s``."""
    a = architecture(m)
    s, recompute = m["llm"]["seq_len"], bool(m.get("recompute", False))
    specs = llm.layers(a, s)
    weights = [spec.forward_flops * (1 + (3 if recompute and spec.block else 2)) for spec in specs]
    per_weight = m["compute_s"] / sum(weights)
    layers = []
    for spec in specs:
        fwd = spec.forward_flops * per_weight
        bwd = (3 if recompute and spec.block else 2) * fwd
        layers.append(Layer(spec.name, fwd, bwd, tuple(Tensor(t, n * 2) for t, n in spec.tensors)))
    description = f"{m['model']} ({a.layers} x d_model {a.d_model}), micro-batch {m['micro_batch']} x {s} tokens"
    return tw.Workload(m["model"], m["micro_batch"], tuple(layers), description, (m["compute_source"],), 2)


def strategy(study: dict[str, Any], c: tw.Cluster, w: tw.Workload) -> tuple[str, str]:
    """The study's strategy, or its fallback (with a note) when it does not exist yet."""
    try:
        tw.simulate(w, c, study["strategy"], iterations=1)
        return study["strategy"], ""
    except _core.InputError as e:
        fb = study["fallback_strategy"]
        return fb, f"`{study['strategy']}` refused ({e.args[-1] if e.args else e}); ran `{fb}`"


def cluster(study: dict[str, Any], gpus: int) -> tw.Cluster:
    """``bandwidth`` null: the topology's own link rates (a ``rail`` node preset's NICs)."""
    return tw.Cluster(gpus, study["bandwidth"], topology=study["topology"])


def predicted(study: dict[str, Any], m: dict[str, Any], t: float) -> float:
    """The study's metric from an iteration time of ``t`` seconds."""
    if study["metric"] == "s_per_iter":
        return t
    if study["metric"] == "tokens_per_s_per_gpu":
        return tokens_per_gpu(m) / t
    if study["metric"] == "rdma_over_tcp":
        raise ValueError("rdma_over_tcp is a ratio of two runs; see run_study")
    return float(m["compute_s"]) / t


def run_study(study: dict[str, Any], max_rows: Optional[int]) -> list[Row]:
    rows: list[Row] = []
    for m in study["models"]:
        results = m["results"][:max_rows] if max_rows else m["results"]
        if m.get("zoo", True) is False or m["compute_s"] is None:
            why = "not in tensorwire's model zoo" if m.get("zoo", True) is False else m["compute_source"]
            for gpus, pub in results:
                rows.append(Row(study["id"], m["model"], gpus, study["metric"], pub, None, "", f"skipped: {why}"))
            continue
        w = llm_workload(m) if "llm" in m else workload(m["model"], m["compute_s"], study["batch_per_gpu"])
        spec, note = "", ""
        counted = study.get("kind", "reproduction") != "check"
        for gpus, pub in results:
            c = cluster(study, gpus)
            if not spec:
                spec, note = strategy(study, c, w)
            r = tw.simulate(w, c, spec, iterations=3, max_flows=None)
            if study["metric"] == "rdma_over_tcp":
                other = study["compare_strategy"]
                r2 = tw.simulate(w, c, other, iterations=3, max_flows=None)
                pred, shown = r2.iteration_time_s / r.iteration_time_s, f"{spec}` vs `{other}"
            else:
                pred, shown = predicted(study, m, r.iteration_time_s), spec
            rows.append(Row(study["id"], m["model"], gpus, study["metric"], pub, pred, shown, note, counted))
    return rows


def summary(rows: Sequence[Row]) -> dict[str, Any]:
    errs = [abs(r.error) for r in rows if r.error is not None and r.counted]
    return {
        "rows": len(errs),
        "median_abs_error": statistics.median(errs) if errs else None,
        "max_abs_error": max(errs) if errs else None,
        "within_target": sum(1 for e in errs if e <= TARGET),
    }


def summary_line(s: dict[str, Any]) -> str:
    if not s["rows"]:
        return "no rows ran"
    return (
        f"{s['rows']} rows; median |error| {s['median_abs_error']:.1%}, max {s['max_abs_error']:.1%};"
        f" {s['within_target']} of {s['rows']} within 10%"
    )


def fmt(metric: str, v: Optional[float]) -> str:
    if v is None:
        return "-"
    if metric == "tokens_per_s_per_gpu":
        return f"{v:,.0f} tok/s"
    if metric == "rdma_over_tcp":
        return f"{v:.3f}x"
    return f"{v:.3f} s" if metric == "s_per_iter" else f"{v:.0%}"


def markdown(rows: Sequence[Row]) -> str:
    lines = [
        "Error = predicted / published - 1; target within 10%. s/iter = p50 seconds per iteration;"
        " efficiency = per-GPU throughput / single-GPU throughput; tok/s = tokens per second per GPU;"
        " rdma_over_tcp = iteration time over TCP / over RDMA (a check, not counted).",
        "",
        "| study | model | GPUs | metric | published | predicted | error | strategy |",
        "|---|---|---:|---|---:|---:|---:|---|",
    ]
    for r in rows:
        err = "" if r.error is None else f"{r.error:+.1%}" + ("" if r.counted else " (check, not counted)")
        lines.append(
            f"| {r.study} | {r.model} | {r.gpus} | {r.metric} | {fmt(r.metric, r.published)}"
            f" | {fmt(r.metric, r.predicted)} | {err} | `{r.strategy}` |"
            if r.predicted is not None
            else f"| {r.study} | {r.model} | {r.gpus} | {r.metric} | {fmt(r.metric, r.published)} | - | | {r.note} |"
        )
    lines += ["", "Summary: " + summary_line(summary(rows))]
    notes = sorted({f"{r.study}: {r.note}" for r in rows if r.note and r.predicted is not None})
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=[], help="run only the study with this id (repeatable)")
    ap.add_argument("--max-rows", type=int, default=None, help="run only the first N GPU counts of each model")
    ap.add_argument("--markdown", metavar="PATH", help="also write the Markdown tables to PATH")
    ap.add_argument(
        "--no-plot", action="store_true", help="accepted for the golden runner; this script writes no plots"
    )
    ap.add_argument("--data", type=Path, default=DATA, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    rows: list[Row] = []
    for s in load(a.data):
        if not a.only or s["id"] in a.only:
            rows += run_study(s, a.max_rows)
    text = markdown(rows)
    print(text)
    if a.markdown:
        Path(a.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
