"""Large language models as workloads, built on demand from their published architectures.

Unlike the measured zoo (``zoo/*.json``), an LLM's compute time is computed: the forward
FLOPs of each layer for ``micro_batch`` sequences of ``seq_len`` tokens, divided by the GPU's
peak mixed-precision rate (:mod:`tensorwire.workloads.hardware`) times a model-FLOP utilisation (MFU).

>>> w = workload("llama3_8b", gpu="h100", seq_len=8192, micro_batch=1)
>>> sum(t.bytes for t in w.tensors) // 2 == 8_030_261_248, len(w.layers), w.batch_size
(True, 35, 1)

Layers and tensors (docs/llm.md has the full rules and the sources of every figure):

- one layer per transformer block (``model.layers.{i}`` for Llama and Mixtral,
  ``transformer.h.{i}`` for GPT-3 in GPT-2's HuggingFace layout), plus the token embedding,
  the final norm and the output head (and GPT-3's learned positions); each layer owns its
  tensors in ``module.parameters()`` order, HuggingFace names;
- gradient bytes = parameters x ``dtype_bytes`` (2: BF16 gradients by default);
- forward FLOPs per sequence of S tokens: ``2 x (weight-matrix parameters used per token) x S``
  for the matmuls (an MoE block counts its router and its top-k experts only) plus
  ``2 x 2 x S^2 x heads x head_dim`` for attention scores and the weighted sum (the full
  S x S product, also for causal attention, as in PaLM's MFU definition), plus 2 FLOPs per
  element for each norm and the embedding lookup (the zoo's convention);
- backward = 2 x forward; with ``recompute=True`` (full activation recomputation) each block's
  backward is 3 x its forward;
- activation memory (:func:`activation_bytes`, bytes per GPU): the tensors autograd saves
  for backward, 16-bit, with FlashAttention (Korthikanti et al. 2022, section 4).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

from tensorwire._core import InputError
from tensorwire.limits import U32_MAX, check_int, check_real, is_int, require_real, wrong_type
from tensorwire.workload import Layer, Tensor, Workload
from tensorwire.workloads import hardware

#: Model-FLOP utilisation used when none is given.
DEFAULT_MFU = 0.40
MFU_SOURCE = (
    "MFU default 0.40: Llama Team, 'The Llama 3 Herd of Models' (arXiv 2407.21783, 2024), Table 4: "
    "38-43% BF16 MFU for Llama 3 405B pre-training on 8,192-16,384 H100 GPUs"
)
#: GPU the LLMs run on when none is given.
DEFAULT_GPU = "h100"
#: Gradient bytes per element: BF16 unless asked otherwise.
DEFAULT_DTYPE_BYTES = 2


@dataclass(frozen=True)
class Architecture:
    """A decoder-only transformer as published. ``style`` picks the HuggingFace layout:
    ``llama`` (RMSNorm, SwiGLU, no biases), ``mixtral`` (llama with a sparse MoE block),
    ``gpt`` (GPT-2: LayerNorm with biases, GELU MLP, learned positions, tied head)."""

    name: str
    display_name: str
    style: str
    layers: int
    d_model: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    context: int
    tied: bool
    experts: int = 1
    top_k: int = 1
    published_parameters: int = 0
    published_exact: bool = True
    source: str = ""


ARCHITECTURES: tuple[Architecture, ...] = (
    Architecture(
        name="llama3_8b",
        display_name="Llama 3 8B",
        style="llama",
        layers=32,
        d_model=4096,
        heads=32,
        kv_heads=8,
        head_dim=128,
        ffn=14336,
        vocab=128256,
        context=8192,
        tied=False,
        published_parameters=8_030_261_248,
        source=(
            "Llama Team 2024 ('The Llama 3 Herd of Models', Table 3); HuggingFace meta-llama/Meta-Llama-3-8B "
            "config.json (LlamaForCausalLM: 32 layers, hidden 4096, 32 heads / 8 KV heads, intermediate "
            "14336, vocab 128256, max_position_embeddings 8192, tie_word_embeddings false)"
        ),
    ),
    Architecture(
        name="llama3_70b",
        display_name="Llama 3 70B",
        style="llama",
        layers=80,
        d_model=8192,
        heads=64,
        kv_heads=8,
        head_dim=128,
        ffn=28672,
        vocab=128256,
        context=8192,
        tied=False,
        published_parameters=70_553_706_496,
        source=(
            "Llama Team 2024 ('The Llama 3 Herd of Models', Table 3); HuggingFace meta-llama/Meta-Llama-3-70B "
            "config.json (LlamaForCausalLM: 80 layers, hidden 8192, 64 heads / 8 KV heads, intermediate "
            "28672, vocab 128256, max_position_embeddings 8192, tie_word_embeddings false)"
        ),
    ),
    Architecture(
        name="mixtral_8x7b",
        display_name="Mixtral 8x7B",
        style="mixtral",
        layers=32,
        d_model=4096,
        heads=32,
        kv_heads=8,
        head_dim=128,
        ffn=14336,
        vocab=32000,
        context=32768,
        tied=False,
        experts=8,
        top_k=2,
        published_parameters=46_702_792_704,
        source=(
            "Jiang et al. 2024 ('Mixtral of Experts', arXiv 2401.04088, Table 1); HuggingFace "
            "mistralai/Mixtral-8x7B-v0.1 config.json (MixtralForCausalLM: 32 layers, hidden 4096, 32 heads "
            "/ 8 KV heads, 8 local experts of intermediate 14336, 2 experts per token, vocab 32000, "
            "max_position_embeddings 32768, untied); transformers 4.36-4.x MixtralSparseMoeBlock layout "
            "(gate, experts.{j}.w1/w2/w3)"
        ),
    ),
    Architecture(
        name="gpt3_175b",
        display_name="GPT-3 175B",
        style="gpt",
        layers=96,
        d_model=12288,
        heads=96,
        kv_heads=96,
        head_dim=128,
        ffn=4 * 12288,
        vocab=50257,
        context=2048,
        tied=True,
        published_parameters=175_000_000_000,
        published_exact=False,
        source=(
            "Brown et al. 2020 ('Language Models are Few-Shot Learners', Table 2.1: 96 layers, d_model "
            "12288, 96 heads of 128, context 2048; 'the same model and architecture as GPT-2', GPT-2's "
            "50,257-token BPE); built in HuggingFace GPT2LMHeadModel layout (pre-LayerNorm, biases, learned "
            "positions, lm_head tied to transformer.wte and counted once); all layers dense (the paper's "
            "alternating locally banded sparse layers are counted as dense attention)"
        ),
    ),
)


def names() -> list[str]:
    """Names of the LLM workloads, sorted."""
    return sorted(a.name for a in ARCHITECTURES)


def architecture(name: str) -> Architecture:
    """The architecture called ``name``."""
    for a in ARCHITECTURES:
        if a.name == name:
            return a
    raise InputError("model", f"unknown LLM {name!r}; choose one of {', '.join(names())}")


# -- tensors -------------------------------------------------------------------------------


def block_tensors(a: Architecture, i: int) -> list[tuple[str, int]]:
    """Tensors (HuggingFace name, elements) of block ``i`` in ``module.parameters()`` order;
    ``i`` is 0 to ``a.layers - 1``, else :class:`InputError` naming ``block`` (``-1`` and
    ``a.layers`` named blocks the model does not have).

    >>> block_tensors(architecture("llama3_8b"), 31)[0]
    ('model.layers.31.self_attn.q_proj.weight', 16777216)
    """
    i = check_block(a, i)
    d, q, kv, f = a.d_model, a.heads * a.head_dim, a.kv_heads * a.head_dim, a.ffn
    if a.style == "gpt":
        p = f"transformer.h.{i}."
        return [
            (p + "ln_1.weight", d), (p + "ln_1.bias", d),
            (p + "attn.c_attn.weight", d * 3 * d), (p + "attn.c_attn.bias", 3 * d),
            (p + "attn.c_proj.weight", d * d), (p + "attn.c_proj.bias", d),
            (p + "ln_2.weight", d), (p + "ln_2.bias", d),
            (p + "mlp.c_fc.weight", d * f), (p + "mlp.c_fc.bias", f),
            (p + "mlp.c_proj.weight", f * d), (p + "mlp.c_proj.bias", d),
        ]  # fmt: skip
    p = f"model.layers.{i}."
    out = [
        (p + "self_attn.q_proj.weight", q * d),
        (p + "self_attn.k_proj.weight", kv * d),
        (p + "self_attn.v_proj.weight", kv * d),
        (p + "self_attn.o_proj.weight", d * q),
    ]
    if a.style == "mixtral":
        m = p + "block_sparse_moe."
        out.append((m + "gate.weight", a.experts * d))
        for j in range(a.experts):
            e = f"{m}experts.{j}."
            out += [(e + "w1.weight", f * d), (e + "w2.weight", d * f), (e + "w3.weight", f * d)]
    else:
        out += [
            (p + "mlp.gate_proj.weight", f * d),
            (p + "mlp.up_proj.weight", f * d),
            (p + "mlp.down_proj.weight", d * f),
        ]
    out += [(p + "input_layernorm.weight", d), (p + "post_attention_layernorm.weight", d)]
    return out


def _matmul_params_per_token(a: Architecture) -> int:
    """Weight-matrix elements one token multiplies through in one block (MoE: router and
    top-k experts only)."""
    d, q, kv, f = a.d_model, a.heads * a.head_dim, a.kv_heads * a.head_dim, a.ffn
    attention = d * q + 2 * d * kv + q * d
    if a.style == "gpt":
        return attention + 2 * d * f
    if a.style == "mixtral":
        return attention + a.experts * d + a.top_k * 3 * d * f
    return attention + 3 * d * f


def block_forward_flops(a: Architecture, seq_len: int) -> int:
    """Forward FLOPs of one block for one sequence of ``seq_len`` tokens (1 to the model's
    context length, else :class:`InputError` naming ``seq_len``)."""
    seq_len = check_seq_len(a, seq_len)
    matmul = 2 * _matmul_params_per_token(a) * seq_len
    attention = 2 * 2 * seq_len * seq_len * a.heads * a.head_dim
    norms = 2 * (2 * a.d_model * seq_len)
    return matmul + attention + norms


@dataclass(frozen=True)
class _LayerSpec:
    name: str
    forward_flops: int  # per sequence
    tensors: tuple[tuple[str, int], ...]
    block: bool


def layers(a: Architecture, seq_len: int) -> list[_LayerSpec]:
    """The layers in forward order, with forward FLOPs per sequence and owned tensors, for
    sequences of ``seq_len`` tokens (1 to the model's context length, else
    :class:`InputError` naming ``seq_len``)."""
    d, s = a.d_model, check_seq_len(a, seq_len)
    block = block_forward_flops(a, s)
    head = 2 * d * a.vocab * s
    if a.style == "gpt":
        out = [
            _LayerSpec("transformer.wte", 2 * d * s, (("transformer.wte.weight", a.vocab * d),), False),
            _LayerSpec("transformer.wpe", 2 * d * s, (("transformer.wpe.weight", a.context * d),), False),
        ]
        out += [_LayerSpec(f"transformer.h.{i}", block, tuple(block_tensors(a, i)), True) for i in range(a.layers)]
        out.append(
            _LayerSpec(
                "transformer.ln_f", 2 * d * s, (("transformer.ln_f.weight", d), ("transformer.ln_f.bias", d)), False
            )
        )
        out.append(_LayerSpec("lm_head", head, (), False))  # weight = transformer.wte.weight
        return out
    out = [_LayerSpec("model.embed_tokens", 2 * d * s, (("model.embed_tokens.weight", a.vocab * d),), False)]
    out += [_LayerSpec(f"model.layers.{i}", block, tuple(block_tensors(a, i)), True) for i in range(a.layers)]
    out.append(_LayerSpec("model.norm", 2 * d * s, (("model.norm.weight", d),), False))
    out.append(_LayerSpec("lm_head", head, () if a.tied else (("lm_head.weight", a.vocab * d),), False))
    return out


@lru_cache(maxsize=None)
def parameters(name: str) -> int:
    """Total trainable parameters (a tied weight counted once)."""
    a = architecture(name)
    return sum(n for spec in layers(a, 1) for _, n in spec.tensors)


def forward_flops(name: str, seq_len: int) -> int:
    """Forward FLOPs of the whole model for one sequence of ``seq_len`` tokens: an integer
    from 1 to the model's context length (as :func:`tokens_per_sample` takes it), else
    :class:`InputError` naming ``seq_len`` (-5 gave negative FLOPs, 2.5 a float).

    >>> forward_flops("llama3_8b", 1) > 0
    True
    """
    return sum(spec.forward_flops for spec in layers(architecture(name), seq_len))


# -- activation memory ---------------------------------------------------------------------

#: Bytes of one 16-bit activation element (bf16, or fp16 on V100): Korthikanti et al.'s unit.
ACTIVATION_ELEMENT_BYTES = 2
#: Bytes of one fp32 element: FlashAttention's logsumexp, the fp32 logits and log-softmax.
FP32_BYTES = 4


def block_activation_bytes(a: Architecture, seq_len: int, micro_batch: int = 1) -> int:
    """Bytes one transformer block of ``a`` saves for its backward for ``micro_batch``
    sequences of ``seq_len`` tokens (1 to the context length, else :class:`InputError`
    naming ``seq_len``), counted as Korthikanti et al. 2022 (section 4) count them: each
    tensor autograd keeps from the block's forward to its backward, 2 bytes per 16-bit
    element, 4 per fp32 one, with FlashAttention (no S x S scores: its output O and the
    fp32 logsumexp, 4 bytes per head and token). Per token:

    - ``llama``: attention-norm input ``d`` (the block's input, the residual) and output
      ``d`` (the q/k/v projections' shared input), Q ``heads x head_dim``, K and V
      ``kv_heads x head_dim`` each (grouped-query attention, FlashAttention takes them
      unrepeated), O ``heads x head_dim`` (also the o-projection's input), logsumexp; the
      MLP-norm input ``d`` and output ``d``, SwiGLU's gate, up, silu(gate) and their product
      (the down projection's input), ``ffn`` each: 2 x (4 d + 2 q + 2 kv + 4 ffn) + 4 heads;
    - ``mixtral``: the same attention and MLP norms, the router's bf16 logits and the fp32
      probabilities its softmax saves (2 + 4 bytes per expert), and per selected expert
      (``top_k`` copies) the token's gathered input ``d``, gate, up, silu(gate), product
      (``ffn`` each) and the expert's output ``d`` (kept by the multiply with its routing
      weight);
    - ``gpt``: Korthikanti's 34 x d bytes (their equation 1 without the 5 a s / h bytes of
      S x S tensors FlashAttention does not store, the softmax's output, its dropout mask
      and the dropout's output: their selective-recomputation figure; it counts GPT-3's
      two 1-byte dropout masks) plus the logsumexp.

    Left out (a few bytes per token or shared by every token): the norms' fp32 statistics,
    FlashAttention's RNG state, RoPE's tables, the router's top-k indices and weights."""
    s, b = check_seq_len(a, seq_len), _micro_batch(micro_batch)
    d, q, kv, f, e = a.d_model, a.heads * a.head_dim, a.kv_heads * a.head_dim, a.ffn, ACTIVATION_ELEMENT_BYTES
    lse = FP32_BYTES * a.heads
    if a.style == "gpt":
        per_token = 34 * d + lse
    else:
        attention = e * (2 * d + q + 2 * kv + q) + lse
        if a.style == "mixtral":
            router = (e + FP32_BYTES) * a.experts
            mlp = e * 2 * d + router + a.top_k * e * (2 * d + 4 * f)
        else:
            mlp = e * (2 * d + 4 * f)
        per_token = attention + mlp
    return per_token * s * b


def head_activation_bytes(a: Architecture, seq_len: int, micro_batch: int = 1) -> int:
    """Bytes the layers after the blocks hold at the end of the forward for ``micro_batch``
    sequences of ``seq_len`` tokens: the final norm's input and output (2 bytes x ``d``
    each per token; the output is the head's input) and the loss's logits in fp32, 4 bytes
    x ``vocab`` for the logits cast to fp32 (torchtitan and HuggingFace cast them before the
    loss; the bf16 logits are freed by the cast, which saves nothing) and 4 x ``vocab`` for
    the log-softmax cross-entropy saves: 8 bytes x ``vocab`` per token, both live when the
    loss is computed. GPT style adds the embedding's 1-byte dropout mask per element
    (Korthikanti et al.). Left out: the token ids and labels (8 bytes each per token)."""
    s, b = check_seq_len(a, seq_len), _micro_batch(micro_batch)
    per_token = ACTIVATION_ELEMENT_BYTES * 2 * a.d_model + 2 * FP32_BYTES * a.vocab
    if a.style == "gpt":
        per_token += a.d_model
    return per_token * s * b


def loss_backward_bytes(a: Architecture, seq_len: int, micro_batch: int = 1) -> int:
    """Bytes the loss's backward holds beyond the end of the forward, for ``micro_batch``
    sequences of ``seq_len`` tokens: 4 bytes x ``vocab`` per token. In the log-softmax's
    backward three fp32 tensors of the logits' size are live, the saved log-softmax, the
    gradient with respect to it and the gradient with respect to the logits, where the end
    of the forward held two (the fp32 logits and the log-softmax; a training step drops its
    reference to the logits before the backward, as torchtitan's does). This is the peak of
    a step when the head's tensors outweigh a block's, as they do for every model here;
    measured on an H200 (``benchmarks/llm_gpu_check.py``) as 3.914 GiB over the end of the
    forward for Llama 3 8B at 8,192 tokens, exactly this count."""
    s, b = check_seq_len(a, seq_len), _micro_batch(micro_batch)
    return FP32_BYTES * a.vocab * s * b


def activation_bytes(name: str, seq_len: Optional[int] = None, micro_batch: int = 1, recompute: bool = False) -> int:
    """Bytes of activations one GPU holds at its peak, training LLM ``name`` on
    ``micro_batch`` sequences of ``seq_len`` tokens (default the context length) in data
    parallelism: every data-parallel strategy (DDP, ZeRO, FSDP, HSDP) holds its own
    micro-batch's activations whole; none shards them.

    The peak is in the loss's backward: what the forward saved, :func:`block_activation_bytes`
    for every block and :func:`head_activation_bytes` (Korthikanti et al. 2022, section 4,
    adapted to each style, with FlashAttention), plus :func:`loss_backward_bytes`. With
    ``recompute=True`` (full activation checkpointing of every block) each block keeps only
    its input, 2 bytes x ``d`` per token, and the peak is the larger of the loss's backward
    (head and loss as above) and a block recomputed in the backward (its activations and the
    incoming gradient, 2 bytes x ``d`` per token; the head's are freed by then). Everything
    is linear in ``seq_len x micro_batch`` (FlashAttention stores nothing of size S x S).
    On an H200, Llama 3 8B and 70B blocks built from these records (``torch.nn`` layers,
    PyTorch's FlashAttention, torchtitan's step) peaked within 0.002% of this count, with and
    without recomputation, but for a process's first stack, which also held cuBLAS's 32 MiB
    workspace (``benchmarks/llm_gpu_check.py``, docs/llm.md).

    Not counted: the caching allocator's fragmentation and reserve, NCCL's buffers, cuBLAS
    workspace, a kernel's temporary buffers, the optimizer step's transient. docs/llm.md,
    "Activation memory", has the derivation and the comparisons with measured peaks.

    >>> activation_bytes("llama3_8b", 8192) / 2**30  # doctest: +ELLIPSIS
    52.89...
    """
    a = architecture(name)
    return peak_activation_bytes(a, a.context if seq_len is None else seq_len, micro_batch, recompute)


def peak_activation_bytes(a: Architecture, seq_len: int, micro_batch: int = 1, recompute: bool = False) -> int:
    """:func:`activation_bytes` of an architecture record rather than a name (a record with
    fewer layers gives a stack of its blocks, as ``benchmarks/llm_gpu_check.py`` builds)."""
    s, b = check_seq_len(a, seq_len), _micro_batch(micro_batch)
    if not isinstance(recompute, bool):
        raise InputError("recompute", f"{recompute!r} must be true or false")
    block = block_activation_bytes(a, s, b)
    loss = head_activation_bytes(a, s, b) + loss_backward_bytes(a, s, b)
    if recompute:
        block_input = ACTIVATION_ELEMENT_BYTES * a.d_model * s * b
        return a.layers * block_input + max(loss, block + block_input)
    return a.layers * block + loss


# -- validation ----------------------------------------------------------------------------


def _int_at_least_1(field: str, value: Any) -> int:
    """``value`` as a plain ``int`` if it is an integer >= 1 (numpy's too; not a ``bool``),
    else :class:`InputError` naming ``field``. An upper bound is the caller's (the context
    length) or the workload's (its 32-bit ``batch_size``)."""
    require_real(field, value, "an integer >= 1")
    if not is_int(value) or value < 1:
        raise InputError(field, f"{value!r} must be an integer >= 1")
    return int(value)


def _micro_batch(value: Any) -> int:
    """``value`` as a micro-batch: an integer from 1 to the core's 32-bit batch size (2**40
    was refused as ``workload.batch_size``, a field the caller never gave)."""
    return check_int("micro_batch", value, 1, U32_MAX)


def check_seq_len(a: Architecture, value: Any) -> int:
    """``value`` as a sequence length of ``a``: 1 to the model's context length."""
    s = _int_at_least_1("seq_len", value)
    if s > a.context:
        raise InputError("seq_len", f"{s} is longer than {a.display_name}'s context of {a.context} tokens")
    return s


def check_block(a: Architecture, value: Any) -> int:
    """``value`` as the index of one of ``a``'s transformer blocks: an integer from 0 to
    ``a.layers - 1`` (numpy's too), else :class:`InputError` naming ``block``."""
    require_real("block", value, f"an integer from 0 to {a.layers - 1} (a block of {a.display_name})")
    if not is_int(value) or not 0 <= value < a.layers:
        raise InputError(
            "block", f"{value!r} is not a block of {a.display_name}; give an integer from 0 to {a.layers - 1}"
        )
    return int(value)


def check_mfu(value: Any) -> float:
    """``value`` as a model-FLOP utilisation: a real number in (0, 1] (numpy's too), as a
    plain ``float``."""
    require_real("mfu", value, "a number in (0, 1] (fraction of the GPU's peak)")
    if not (0 < value <= 1):
        raise InputError("mfu", f"{value!r} must be a number in (0, 1] (fraction of the GPU's peak)")
    return check_real("mfu", value)


# -- workloads -----------------------------------------------------------------------------


def workload(
    name: str,
    *,
    gpu: Optional[str] = None,
    seq_len: Optional[int] = None,
    micro_batch: int = 1,
    mfu: Optional[float] = None,
    recompute: bool = False,
    dtype_bytes: int = DEFAULT_DTYPE_BYTES,
) -> Workload:
    """LLM ``name`` as a data-parallel workload: ``micro_batch`` sequences (the workload's
    ``batch_size``) of ``seq_len`` tokens (default: the model's context length) per worker and
    iteration on ``gpu`` (default ``h100``) at ``mfu`` (default 0.40) of its peak BF16 rate
    (FP16 on V100). ``dtype_bytes`` is the gradient element size (2 = the GPU's mixed precision,
    BF16, or FP16 on V100; 4 = FP32)."""
    a = architecture(name)
    g = hardware.gpu(DEFAULT_GPU if gpu is None else gpu)
    s = a.context if seq_len is None else check_seq_len(a, seq_len)
    b = _micro_batch(micro_batch)
    u = DEFAULT_MFU if mfu is None else check_mfu(mfu)
    if not isinstance(recompute, bool):
        raise wrong_type("recompute", "True or False", recompute)
    require_real("dtype_bytes", dtype_bytes, "2 (bf16) or 4 (fp32)")
    if not is_int(dtype_bytes) or dtype_bytes not in (2, 4):  # 2.0 was taken, then refused by the core
        raise InputError("dtype_bytes", f"{dtype_bytes!r} is not allowed; choose 2 (bf16) or 4 (fp32)")
    dtype_bytes = int(dtype_bytes)
    rate = g.mixed_precision_flops * u  # FLOP/s achieved
    built = []
    for spec in layers(a, s):
        fwd = spec.forward_flops * b / rate
        bwd = (3 if recompute and spec.block else 2) * fwd
        built.append(Layer(spec.name, fwd, bwd, tuple(Tensor(t, n * dtype_bytes) for t, n in spec.tensors)))
    description = (
        f"{a.display_name} on {g.display_name}, micro-batch {b} x {s} tokens, "
        f"MFU {u:.2f} of {g.mixed_precision_flops / 1e12:.1f} TFLOP/s {g.mixed_precision_dtype}, "
        # 2-byte gradients are in the GPU's mixed precision: fp16 on a V100, which has no bf16.
        f"gradients {g.mixed_precision_dtype if dtype_bytes == 2 else 'fp32'}"
        + (", full recomputation" if recompute else "")
    )
    sources = (a.source, *g.sources, MFU_SOURCE if mfu is None else f"MFU {u} given by the user")
    w = Workload(name, b, tuple(built), description, sources, dtype_bytes)
    # Name what the user chose that made it so: a tiny mfu, or else a huge micro-batch.
    tiny_mfu = mfu is not None and u < DEFAULT_MFU
    field, value = ("mfu", u) if tiny_mfu else ("micro_batch", b)
    fix = "use a larger mfu" if tiny_mfu else "use a smaller micro-batch (--batch on the command line)"
    w.refuse_compute_past_horizon(field, value, fix, f" (micro-batch {b}, MFU {u:g})")
    return w


def tokens_per_sample(name: str, seq_len: Optional[int] = None) -> int:
    """Tokens in one sample (one sequence) of ``name``: ``seq_len`` or the context length."""
    a = architecture(name)
    return a.context if seq_len is None else check_seq_len(a, seq_len)
