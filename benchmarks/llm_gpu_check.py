"""LLM blocks on a real GPU against tensorwire's estimates: activation memory and compute time.

tensorwire's memory column counts, per GPU, the bytes autograd saves between the forward and
the backward (:func:`tensorwire.workloads.llm.block_activation_bytes` and
:func:`~tensorwire.workloads.llm.head_activation_bytes`, Korthikanti et al. 2022 with
FlashAttention). This script builds the blocks of a Llama-style model from the same
architecture record (RMSNorm, grouped-query attention through PyTorch's
``scaled_dot_product_attention`` with ``enable_gqa``, RoPE, SwiGLU, bf16 weights; the head
casts its logits to fp32 before the cross-entropy, as torchtitan and HuggingFace do), runs
it on the GPU and reads ``torch.cuda.memory_allocated`` before the forward and after the
loss. Stacks of 1, 2 and 4 blocks give the bytes per block (the slope) and the head's bytes
(the intercept), which are compared with the estimates; nothing is fitted to them.

It also times forward + backward of a stack of blocks with CUDA events (median of 10 after
3 warm-ups) and prints the model-FLOP utilisation that implies, counted as tensorwire counts
FLOPs (:func:`~tensorwire.workloads.llm.block_forward_flops`, backward = 2 x forward), and
a large bf16 matrix product as the chip's measured ceiling. docs/benchmarks.md ("On a GPU")
records a run.

Run from the checkout, on a machine with a CUDA GPU: ``python benchmarks/llm_gpu_check.py``
(``--dry-run`` runs tiny shapes on the CPU, no memory readings, to check the code paths).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from tensorwire.workloads import hardware, llm  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

GIB = 2**30


class Block(torch.nn.Module):
    """One Llama block as torchtitan writes it (no biases, RMSNorm eps 1e-5)."""

    def __init__(self, a: llm.Architecture) -> None:
        super().__init__()
        d, q, kv, f = a.d_model, a.heads * a.head_dim, a.kv_heads * a.head_dim, a.ffn
        self.a = a
        self.attention_norm = torch.nn.RMSNorm(d, eps=1e-5)
        self.wq, self.wk, self.wv = (torch.nn.Linear(d, n, bias=False) for n in (q, kv, kv))
        self.wo = torch.nn.Linear(q, d, bias=False)
        self.ffn_norm = torch.nn.RMSNorm(d, eps=1e-5)
        self.w1, self.w3 = (torch.nn.Linear(d, f, bias=False) for _ in range(2))
        self.w2 = torch.nn.Linear(f, d, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        a, (b, s, _) = self.a, x.shape
        h = self.attention_norm(x)
        q = _rope(self.wq(h).view(b, s, a.heads, a.head_dim), cos, sin)
        k = _rope(self.wk(h).view(b, s, a.kv_heads, a.head_dim), cos, sin)
        v = self.wv(h).view(b, s, a.kv_heads, a.head_dim)
        o = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True
        )
        x = x + self.wo(o.transpose(1, 2).contiguous().view(b, s, -1))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def _rope(t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, rotate-half form; ``cos``/``sin`` are (S, 1, head_dim) constants."""
    half = t.shape[-1] // 2
    rotated = torch.cat((-t[..., half:], t[..., :half]), dim=-1)
    return t * cos + rotated * sin


class Model(torch.nn.Module):
    """Embedding, ``n`` blocks, final norm and untied head of architecture ``a``."""

    def __init__(self, a: llm.Architecture, n: int, seq_len: int) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(a.vocab, a.d_model)
        self.blocks = torch.nn.ModuleList(Block(a) for _ in range(n))
        self.norm = torch.nn.RMSNorm(a.d_model, eps=1e-5)
        self.head = torch.nn.Linear(a.d_model, a.vocab, bias=False)
        inv = 1.0 / (500000.0 ** (torch.arange(0, a.head_dim, 2).float() / a.head_dim))
        angles = torch.outer(torch.arange(seq_len).float(), inv)
        angles = torch.cat((angles, angles), dim=-1)[:, None, :]
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def blocks_forward(self, h: torch.Tensor, recompute: bool) -> torch.Tensor:
        for blk in self.blocks:
            if recompute:
                h = checkpoint(blk, h, self.cos, self.sin, use_reentrant=False)
            else:
                h = blk(h, self.cos, self.sin)
        return h


@dataclasses.dataclass
class Reading:
    blocks: int
    end_of_forward: int  # bytes allocated after the loss, less those before the forward
    peak: int  # bytes at the peak of forward + backward, less those before the forward
    saved: int  # bytes of the distinct non-parameter storages autograd saved (0 with recompute)
    saved_tensors: list[str]  # "shape dtype" of each, in the order saved


def measure_memory(a: llm.Architecture, n: int, s: int, b: int, recompute: bool, dev: torch.device) -> Reading:
    """Bytes the forward leaves allocated (the logits kept, as a training step that computes
    the loss from them keeps them until the backward) and the peak through the backward."""
    torch.manual_seed(0)
    with dev:  # initialised on the device: the CPU takes seconds per billion parameters
        model = Model(a, n, s).to(torch.bfloat16)
    ids = torch.randint(0, a.vocab, (b, s), device=dev)
    labels = torch.randint(0, a.vocab, (b, s), device=dev)
    cuda = dev.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated() if cuda else 0
    params = {q.untyped_storage().data_ptr() for q in model.parameters()} | {
        q.untyped_storage().data_ptr() for q in model.buffers()
    }
    storages: dict[int, int] = {}
    shapes: list[str] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params and ptr not in storages:
            storages[ptr] = t.untyped_storage().nbytes()
            shapes.append(f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}")
        return t

    with contextlib.ExitStack() as stack:
        if not recompute:  # checkpoint installs hooks of its own
            stack.enter_context(torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t))
        h = model.blocks_forward(model.embed(ids), recompute)
        logits = model.head(model.norm(h)).float()
        del h
        loss = F.cross_entropy(logits.view(-1, a.vocab), labels.view(-1))
    after = torch.cuda.memory_allocated() if cuda else 0
    del logits
    loss.backward()
    peak = torch.cuda.max_memory_allocated() if cuda else 0
    del model, loss
    if cuda:
        torch.cuda.empty_cache()
    return Reading(n, after - before, peak - before, sum(storages.values()), shapes)


def time_blocks(a: llm.Architecture, n: int, s: int, b: int, dev: torch.device, repeats: int) -> float:
    """Median seconds of forward + backward through ``n`` blocks (no head), CUDA events."""
    torch.manual_seed(0)
    with dev:  # initialised on the device: the CPU takes seconds per billion parameters
        model = Model(a, n, s).to(torch.bfloat16)
    x = torch.randn(b, s, a.d_model, device=dev, dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn_like(x)

    def step() -> None:
        model.blocks_forward(x, recompute=False).backward(grad)

    return _median_s(step, dev, repeats)


def matmul_tflops(dev: torch.device, n: int, repeats: int) -> float:
    """bf16 n x n x n matrix product on random data, TFLOP/s (median)."""
    x, y = (torch.randn(n, n, device=dev, dtype=torch.bfloat16) for _ in range(2))
    return 2 * n**3 / _median_s(lambda: torch.mm(x, y), dev, repeats) / 1e12


def _median_s(fn: Callable[[], Any], dev: torch.device, repeats: int) -> float:
    import time

    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        if dev.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def tiny(a: llm.Architecture) -> llm.Architecture:
    """Shapes small enough for a CPU dry run."""
    return dataclasses.replace(a, d_model=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=256)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dry-run", action="store_true", help="tiny shapes on the CPU: the code paths, no readings")
    p.add_argument("--json", type=Path, help="write every reading here")
    args = p.parse_args()
    dev = torch.device("cpu" if args.dry_run else "cuda")
    out: dict[str, Any] = {
        "device": "cpu" if args.dry_run else torch.cuda.get_device_name(),
        "torch": torch.__version__,
    }
    print(f"device: {out['device']}, torch {torch.__version__}")
    rows = []
    for name, seq, counts in (
        ("llama3_8b", 8192, (1, 2, 4)),
        ("llama3_8b", 4096, (1, 2)),
        ("llama3_70b", 8192, (1, 2)),
    ):
        a = llm.architecture(name)
        shapes = tiny(a) if args.dry_run else a
        s = 64 if args.dry_run else seq
        for recompute in (False, True):
            readings = [measure_memory(shapes, n, s, 1, recompute, dev) for n in counts]
            lo, hi = readings[0], readings[-1]
            reading = "saved" if args.dry_run else "end_of_forward"
            per_block = (getattr(hi, reading) - getattr(lo, reading)) / (hi.blocks - lo.blocks)
            head = getattr(lo, reading) - lo.blocks * per_block
            saved_per_block = (hi.saved - lo.saved) / (hi.blocks - lo.blocks)
            est_block = (
                llm.ACTIVATION_ELEMENT_BYTES * shapes.d_model * s
                if recompute
                else llm.block_activation_bytes(shapes, s)
            )
            est_head = llm.head_activation_bytes(shapes, s)
            est_peak = llm.peak_activation_bytes(dataclasses.replace(shapes, layers=hi.blocks), s, 1, recompute)
            row = dict(
                model=name,
                seq_len=seq,
                recompute=recompute,
                blocks=[r.blocks for r in readings],
                end_of_forward=[r.end_of_forward for r in readings],
                peak=[r.peak for r in readings],
                saved=[r.saved for r in readings],
                saved_tensors_one_block=lo.saved_tensors,
                saved_per_block=saved_per_block,
                measured_per_block=per_block,
                estimated_per_block=est_block,
                measured_head=head,
                estimated_head=est_head,
                estimated_peak=est_peak,
            )
            rows.append(row)
            print(
                f"{name} seq {seq} {'recompute' if recompute else 'no recompute'}: per block measured "
                f"({reading}) "
                f"{per_block / GIB:.4f} GiB, estimated {est_block / GIB:.4f} GiB ({_pct(per_block, est_block)}); "
                f"head measured {head / GIB:.3f} GiB, estimated {est_head / GIB:.3f} GiB ({_pct(head, est_head)}); "
                f"autograd saved {saved_per_block / GIB:.4f} GiB per block; "
                f"peak at {hi.blocks} blocks measured {hi.peak / GIB:.3f} GiB, estimated {est_peak / GIB:.3f} GiB "
                f"({_pct(hi.peak, est_peak)})"
            )
    out["memory"] = rows
    a = llm.architecture("llama3_8b")
    shapes, s, n = (tiny(a), 64, 2) if args.dry_run else (a, 8192, 4)
    seconds = time_blocks(shapes, n, s, 1, dev, 2 if args.dry_run else 10)
    flops = 3 * n * llm.block_forward_flops(a, 8192)
    peak = hardware.gpu("h200").mixed_precision_flops
    ceiling = matmul_tflops(dev, 256 if args.dry_run else 8192, 2 if args.dry_run else 20)
    out["compute"] = dict(blocks=n, seq_len=8192, seconds=seconds, model_flops=flops, matmul_tflops=ceiling)
    print(
        f"llama3_8b, {n} blocks, 8192 tokens, forward + backward: {seconds * 1e3:.2f} ms; "
        f"{flops / seconds / 1e12:.0f} TFLOP/s as tensorwire counts FLOPs, MFU {flops / seconds / peak:.3f} of "
        f"{peak / 1e12:.1f} (h200 bf16 dense); bf16 8192^3 matmul {ceiling:.0f} TFLOP/s"
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


def _pct(measured: float, estimated: float) -> str:
    return f"estimate {100 * (estimated - measured) / measured:+.1f}%" if measured else "no reading"


if __name__ == "__main__":
    main()
