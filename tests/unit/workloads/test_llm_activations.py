"""LLM activation memory (``llm.activation_bytes``, docs/llm.md "Activation memory"): closed
forms written out from each published architecture, independently of the function;
invariants (linear in the micro-batch, non-decreasing in the sequence length, recomputation
smaller, MoE's MLP scaling with top-k); the peaks measured on an H200; bad input naming its
field."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorwire import InputError
from tensorwire.workloads import llm

GiB = 2**30


def llama_per_token(d: int, heads: int, kv_heads: int, head_dim: int, ffn: int) -> int:
    """Bytes one Llama block saves per token, tensor by tensor (docs/llm.md)."""
    q, kv = heads * head_dim, kv_heads * head_dim
    attention = (
        2 * d  # attention-norm input (the block's input)
        + 2 * d  # attention-norm output: q/k/v projections' input
        + 2 * q  # Q
        + 2 * kv  # K
        + 2 * kv  # V
        + 2 * q  # O: FlashAttention's output, o_proj's input
        + 4 * heads  # fp32 logsumexp
    )
    mlp = 2 * d + 2 * d + 4 * (2 * ffn)  # MLP-norm input and output; gate, up, silu(gate), product
    return attention + mlp


def head_per_token(d: int, vocab: int) -> int:
    """Final norm's input and output (bf16), fp32 logits and fp32 log-softmax."""
    return 2 * d + 2 * d + 4 * vocab + 4 * vocab


def loss_backward_per_token(vocab: int) -> int:
    """The loss's backward over the end of the forward: the fp32 logits freed, the gradients
    with respect to the log-softmax and to the logits (fp32 each) beside the saved log-softmax."""
    return -4 * vocab + 4 * vocab + 4 * vocab


def test_llama3_8b_at_8192_tokens_is_the_hand_computed_sum() -> None:
    # Meta-Llama-3-8B: 32 layers, hidden 4096, 32 heads / 8 KV heads of 128, ffn 14336, vocab 128256.
    block = llama_per_token(4096, 32, 8, 128, 14336)
    assert block == 168_064
    head = head_per_token(4096, 128256)
    assert head == 1_042_432
    loss = loss_backward_per_token(128256)
    s = 8192
    assert llm.activation_bytes("llama3_8b", 8192) == (32 * block + head + loss) * s == 56_799_264_768
    assert llm.activation_bytes("llama3_8b") == 56_799_264_768  # the context length by default
    # full recomputation: 32 block inputs of 2 x 4096 bytes per token, then the loss's
    # backward, which outweighs one recomputed block with its incoming gradient
    assert head + loss > block + 2 * 4096
    recomputed = (32 * 2 * 4096 + head + loss) * s
    assert llm.activation_bytes("llama3_8b", 8192, recompute=True) == recomputed == 14_889_779_200
    assert 52.8 < 56_799_264_768 / GiB < 52.9 and 13.8 < recomputed / GiB < 13.9


def test_with_recomputation_a_block_outweighing_the_loss_sets_the_peak() -> None:
    # A vocabulary of 8 tokens: the head and loss hold 4 d + 12 x 8 bytes per token, a
    # recomputed block its 168,064 bytes and its incoming gradient, 2 d.
    a = dataclasses.replace(llm.architecture("llama3_8b"), vocab=8, layers=3)
    block, s, b = llama_per_token(4096, 32, 8, 128, 14336), 100, 2
    assert llm.peak_activation_bytes(a, s, b, recompute=True) == (3 * 2 * 4096 + block + 2 * 4096) * s * b
    assert llm.peak_activation_bytes(a, s, b) == (3 * block + head_per_token(4096, 8) + 4 * 8) * s * b


def test_llama3_70b_and_mixtral_closed_forms() -> None:
    block70 = llama_per_token(8192, 64, 8, 128, 28672)
    head70 = head_per_token(8192, 128256) + loss_backward_per_token(128256)
    assert llm.activation_bytes("llama3_70b", 8192) == (80 * block70 + head70) * 8192 == 230_477_004_800
    # Mixtral 8x7B: Llama's attention and norms; router logits (bf16) and probabilities (fp32)
    # of 8 experts; per selected expert (2) its gathered input, the 4 SwiGLU tensors, its output.
    d, f, s = 4096, 14336, 4096
    dense_mlp = 4 * (2 * f)
    attention_and_norms = llama_per_token(d, 32, 8, 128, f) - dense_mlp
    block = attention_and_norms + (2 + 4) * 8 + 2 * (2 * d + 4 * (2 * f) + 2 * d)
    assert llm.block_activation_bytes(llm.architecture("mixtral_8x7b"), s) == block * s
    total = (32 * block + head_per_token(d, 32000) + loss_backward_per_token(32000)) * s * 2
    assert llm.activation_bytes("mixtral_8x7b", s, micro_batch=2) == total


def test_gpt3_is_korthikantis_34_sbh_per_layer_with_flashattention() -> None:
    # Korthikanti et al. 2022, equation 1 with t = 1 and no S x S term (FlashAttention):
    # 34 s b h bytes per layer, plus FlashAttention's fp32 logsumexp (4 bytes x 96 heads).
    s, b, h, layers = 2048, 3, 12288, 96
    a = llm.architecture("gpt3_175b")
    assert llm.block_activation_bytes(a, s, b) == 34 * s * b * h + 4 * 96 * s * b
    # head: embedding dropout mask (1 byte), final LayerNorm input and output, fp32 logits and log-softmax
    head = (h + 4 * h + 8 * 50257 + loss_backward_per_token(50257)) * s * b
    assert llm.activation_bytes("gpt3_175b", s, b) == layers * (34 * h + 4 * 96) * s * b + head


MEASURED = Path(__file__).resolve().parents[2] / "fixtures" / "gpu" / "llm_activations_h200.json"


def test_the_peaks_measured_on_an_h200() -> None:
    """benchmarks/llm_gpu_check.py on an H200 (its readings in tests/fixtures/gpu): stacks of
    1, 2 and 4 Llama 3 blocks with embedding, head and loss, torchtitan's step, the bytes
    allocated at the peak of forward + backward over those before the forward. Every
    estimate within 0.01%, but the process's first, which also holds cuBLAS's 32 MiB
    workspace, allocated at the first matrix product."""
    readings = json.loads(MEASURED.read_text())
    assert readings["device"] == "NVIDIA H200"
    checked = 0
    for row in readings["memory"]:
        a = llm.architecture(row["model"])
        for n, measured in zip(row["blocks"], row["peak"]):
            estimate = llm.peak_activation_bytes(dataclasses.replace(a, layers=n), row["seq_len"], 1, row["recompute"])
            first = checked == 0
            tolerance = 32 * 2**20 + 1e-4 * measured if first else 1e-4 * measured
            assert abs(measured - estimate) <= tolerance, (row["model"], row["seq_len"], row["recompute"], n)
            checked += 1
    assert checked == 14


NAMES = llm.names()


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NAMES), seq=st.integers(1, 32768), b=st.integers(1, 64), recompute=st.booleans())
def test_linear_in_micro_batch(name: str, seq: int, b: int, recompute: bool) -> None:
    s = min(seq, llm.architecture(name).context)
    one = llm.activation_bytes(name, s, 1, recompute)
    assert llm.activation_bytes(name, s, b, recompute) == b * one


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NAMES), seq=st.integers(1, 32767), recompute=st.booleans())
def test_non_decreasing_in_seq_len(name: str, seq: int, recompute: bool) -> None:
    context = llm.architecture(name).context
    s = min(seq, context - 1)
    assert llm.activation_bytes(name, s + 1, recompute=recompute) >= llm.activation_bytes(name, s, recompute=recompute)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NAMES), seq=st.integers(1, 32768), b=st.integers(1, 8))
def test_full_recomputation_holds_strictly_less(name: str, seq: int, b: int) -> None:
    a = llm.architecture(name)
    s = min(seq, a.context)
    assert a.layers > 1
    assert llm.activation_bytes(name, s, b, recompute=True) < llm.activation_bytes(name, s, b)


@settings(max_examples=30, deadline=None)
@given(seq=st.integers(1, 32768), b=st.integers(1, 4))
def test_mixtrals_mlp_scales_with_top_k(seq: int, b: int) -> None:
    a = llm.architecture("mixtral_8x7b")
    per_expert = 2 * (2 * a.d_model + 4 * a.ffn) * seq * b  # gathered input, 4 SwiGLU tensors, output
    sizes = [llm.block_activation_bytes(dataclasses.replace(a, top_k=k), seq, b) for k in range(1, a.experts + 1)]
    assert [y - x for x, y in zip(sizes, sizes[1:])] == [per_expert] * (a.experts - 1)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"name": "llama3_9b"}, "model"),
        ({"seq_len": 8193}, "seq_len"),
        ({"seq_len": 0}, "seq_len"),
        ({"seq_len": 2.5}, "seq_len"),
        ({"micro_batch": 0}, "micro_batch"),
        ({"micro_batch": True}, "micro_batch"),
        ({"recompute": "yes"}, "recompute"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    args = {"name": "llama3_8b", **kwargs}
    with pytest.raises(InputError) as e:
        llm.activation_bytes(**args)
    assert e.value.args[0] == field
