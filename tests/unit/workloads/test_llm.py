"""LLM workloads: exact parameter counts against published totals and independent closed
forms, FLOP rules, MFU / GPU / micro-batch scaling, and bad input naming its field."""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any

import pytest
import tensorwire as tw
from tensorwire import InputError, hardware
from tensorwire.workloads import llm

# Totals published with the models (HF safetensors metadata / model cards) or required by the brief.
EXACT = {"llama3_8b": 8_030_261_248, "llama3_70b": 70_553_706_496, "mixtral_8x7b": 46_702_792_704}
# len(list(model.parameters())) of the HF models (GPT-3 in GPT2LMHeadModel layout: 12 per block + 4).
TENSORS = {"llama3_8b": 291, "llama3_70b": 723, "mixtral_8x7b": 995, "gpt3_175b": 96 * 12 + 4}


def llama_closed_form(layers: int, d: int, kv: int, ffn: int, vocab: int, experts: int = 0) -> int:
    """HF LlamaForCausalLM / MixtralForCausalLM, untied: written from the config, independently
    of llm.block_tensors."""
    attention = d * d + 2 * d * kv + d * d
    mlp = 3 * d * ffn if experts == 0 else experts * 3 * d * ffn + experts * d
    return 2 * vocab * d + d + layers * (attention + mlp + 2 * d)


def gpt_closed_form(layers: int, d: int, vocab: int, n_ctx: int) -> int:
    """GPT-2 layout, tied head: 12 d^2 + 13 d per block (Kaplan et al. 2020's 12 d^2 plus biases
    and LayerNorms)."""
    return vocab * d + n_ctx * d + layers * (12 * d * d + 13 * d) + 2 * d


@pytest.mark.parametrize(("name", "total"), sorted(EXACT.items()))
def test_exact_parameter_totals(name: str, total: int) -> None:
    w = tw.load_model(name)
    assert llm.parameters(name) == total
    assert w.total_bytes == 2 * total  # bf16 gradients by default
    assert getattr(w, "dtype_bytes", 2) == 2


def test_closed_forms_match_the_layer_by_layer_build() -> None:
    assert llm.parameters("llama3_8b") == llama_closed_form(32, 4096, 1024, 14336, 128256)
    assert llm.parameters("llama3_70b") == llama_closed_form(80, 8192, 1024, 28672, 128256)
    assert llm.parameters("mixtral_8x7b") == llama_closed_form(32, 4096, 1024, 14336, 32000, experts=8)
    assert llm.parameters("gpt3_175b") == gpt_closed_form(96, 12288, 50257, 2048) == 174_604_259_328


def test_gpt3_is_within_half_a_percent_of_175_billion() -> None:
    assert abs(llm.parameters("gpt3_175b") / 175e9 - 1) < 0.005


def test_mixtral_active_parameters_are_the_published_12_9_billion() -> None:
    a = llm.architecture("mixtral_8x7b")
    inactive = a.layers * (a.experts - a.top_k) * 3 * a.d_model * a.ffn
    assert (llm.parameters("mixtral_8x7b") - inactive) / 12.9e9 == pytest.approx(1, abs=0.005)


@pytest.mark.parametrize(("name", "count"), sorted(TENSORS.items()))
def test_tensor_counts_and_names(name: str, count: int) -> None:
    w = tw.load_model(name)
    names = [t.name for t in w.tensors]
    assert len(names) == count == len(set(names))
    for layer in w.layers:
        assert all(t.name.startswith(layer.name + ".") for t in layer.tensors)


def test_llama_block_tensors_in_parameters_order_with_hf_shapes() -> None:
    # Shapes of model.layers.5.* in the Meta-Llama-3-8B checkpoint (out x in).
    hf = [
        ("self_attn.q_proj.weight", (4096, 4096)),
        ("self_attn.k_proj.weight", (1024, 4096)),
        ("self_attn.v_proj.weight", (1024, 4096)),
        ("self_attn.o_proj.weight", (4096, 4096)),
        ("mlp.gate_proj.weight", (14336, 4096)),
        ("mlp.up_proj.weight", (14336, 4096)),
        ("mlp.down_proj.weight", (4096, 14336)),
        ("input_layernorm.weight", (4096,)),
        ("post_attention_layernorm.weight", (4096,)),
    ]
    layer = next(x for x in tw.load_model("llama3_8b").layers if x.name == "model.layers.5")
    assert [(t.name, t.bytes) for t in layer.tensors] == [("model.layers.5." + n, 2 * math.prod(s)) for n, s in hf]


def test_mixtral_and_gpt3_blocks_against_closed_forms() -> None:
    m = next(x for x in tw.load_model("mixtral_8x7b").layers if x.name == "model.layers.31")
    names = [t.name.removeprefix("model.layers.31.") for t in m.tensors]
    experts = [f"block_sparse_moe.experts.{j}.{w}.weight" for j in range(8) for w in ("w1", "w2", "w3")]
    assert names == [f"self_attn.{p}_proj.weight" for p in "qkvo"] + ["block_sparse_moe.gate.weight", *experts] + [
        "input_layernorm.weight",
        "post_attention_layernorm.weight",
    ]
    d, f = 4096, 14336
    assert sum(t.bytes for t in m.tensors) == 2 * (2 * d * d + 2 * d * 1024 + 8 * d + 8 * 3 * d * f + 2 * d)
    g = next(x for x in tw.load_model("gpt3_175b").layers if x.name == "transformer.h.0")
    d = 12288
    assert sum(t.bytes for t in g.tensors) == 2 * (12 * d * d + 13 * d)
    assert [t.name for t in g.tensors][:4] == [
        "transformer.h.0.ln_1.weight",
        "transformer.h.0.ln_1.bias",
        "transformer.h.0.attn.c_attn.weight",
        "transformer.h.0.attn.c_attn.bias",
    ]


def test_layer_order_embedding_blocks_norm_head() -> None:
    layers = [x.name for x in tw.load_model("llama3_8b").layers]
    assert layers == ["model.embed_tokens", *(f"model.layers.{i}" for i in range(32)), "model.norm", "lm_head"]
    gpt = tw.load_model("gpt3_175b").layers
    assert [x.name for x in gpt[:2]] == ["transformer.wte", "transformer.wpe"]
    assert gpt[-1].name == "lm_head" and gpt[-1].tensors == ()  # tied to transformer.wte.weight
    assert gpt[-1].forward_s > 0
    head = tw.load_model("llama3_8b").layers[-1]
    assert [t.name for t in head.tensors] == ["lm_head.weight"]


# -- FLOPs -----------------------------------------------------------------------------------


def training_flops(w: Any, gpu: str, mfu: float) -> float:
    """FLOPs of forward + backward implied by the workload's seconds."""
    return w.compute_time_s * hardware.gpu(gpu).mixed_precision_flops * mfu


@pytest.mark.parametrize(("name", "matmul_params"), [
    ("gpt3_175b", llm.parameters("gpt3_175b")),  # tied: the head multiplies by the embedding
    ("llama3_8b", llm.parameters("llama3_8b") - 128256 * 4096),  # the input embedding is a lookup
    ("llama3_70b", llm.parameters("llama3_70b") - 128256 * 8192),
])  # fmt: skip
def test_six_n_t_rule_for_dense_models_at_short_sequences(name: str, matmul_params: int) -> None:
    s, b = 128, 4
    w = tw.load_model(name, seq_len=s, micro_batch=b, mfu=0.5)
    assert training_flops(w, "h100", 0.5) == pytest.approx(6 * matmul_params * s * b, rel=0.02)


def test_moe_counts_the_top_k_experts_only() -> None:
    a = llm.architecture("mixtral_8x7b")
    active = llm.parameters("mixtral_8x7b") - a.layers * (a.experts - a.top_k) * 3 * a.d_model * a.ffn
    s = 128
    assert llm.forward_flops("mixtral_8x7b", s) == pytest.approx(2 * (active - a.vocab * a.d_model) * s, rel=0.02)


def test_attention_is_the_full_square_per_block() -> None:
    # f(S) = alpha S + beta S^2 with beta = layers x 4 x heads x head_dim (full S x S, causal too).
    for name in llm.names():
        a = llm.architecture(name)
        s = 512
        quadratic = llm.forward_flops(name, 2 * s) - 2 * llm.forward_flops(name, s)
        assert quadratic == a.layers * 4 * a.heads * a.head_dim * (4 * s * s - 2 * s * s)


def test_backward_is_twice_forward_and_recompute_adds_a_forward_per_block() -> None:
    w = tw.load_model("llama3_8b", seq_len=1024)
    assert all(x.backward_s == pytest.approx(2 * x.forward_s) for x in w.layers)
    r = tw.load_model("llama3_8b", seq_len=1024, recompute=True)
    for x, y in zip(w.layers, r.layers):
        assert y.forward_s == x.forward_s
        assert y.backward_s == pytest.approx((3 if y.name.startswith("model.layers.") else 2) * y.forward_s)


# -- scaling ---------------------------------------------------------------------------------


def test_halving_mfu_doubles_compute() -> None:
    w = tw.load_model("llama3_70b", gpu="h100", seq_len=8192, micro_batch=1, mfu=0.4)
    h = tw.load_model("llama3_70b", gpu="h100", seq_len=8192, micro_batch=1, mfu=0.2)
    assert h.compute_time_s == pytest.approx(2 * w.compute_time_s, rel=1e-12)
    assert [t.bytes for t in h.tensors] == [t.bytes for t in w.tensors]


def test_gpu_peak_scales_compute_and_v100_runs_fp16() -> None:
    times = {g.name: tw.load_model("llama3_8b", gpu=g.name, seq_len=2048).compute_time_s for g in hardware.gpus()}
    assert times["a100-40gb"] / times["h100"] == pytest.approx(989.4 / 312)
    assert times["a100-80gb"] == times["a100-40gb"]
    assert times["v100"] / times["h100"] == pytest.approx(989.4 / 125)


def test_micro_batch_is_the_batch_size_and_scales_linearly() -> None:
    one = tw.load_model("gpt3_175b", seq_len=2048)
    four = tw.load_model("gpt3_175b", seq_len=2048, micro_batch=4)
    assert (one.batch_size, four.batch_size) == (1, 4)
    assert four.compute_time_s == pytest.approx(4 * one.compute_time_s)
    assert (
        tw.load_model("gpt3_175b", batch_size=4).compute_time_s
        == tw.load_model("gpt3_175b", micro_batch=4).compute_time_s
    )
    assert "micro-batch 4 x 2048 tokens" in four.description


def test_default_mfu_and_its_source() -> None:
    w = tw.load_model("llama3_8b")
    assert w.compute_time_s == pytest.approx(tw.load_model("llama3_8b", mfu=llm.DEFAULT_MFU).compute_time_s)
    assert llm.DEFAULT_MFU == 0.40 and any("Llama 3 Herd" in s for s in w.sources)


def test_models_listing_has_the_llms_with_tokens_and_all_gpus() -> None:
    infos = {m.name: m for m in tw.models()}
    m = infos["llama3_70b"]
    assert (m.parameters, m.family, m.dtype_bytes, m.tokens_per_sample) == (70_553_706_496, "llm", 2, 8192)
    assert [d.name for d in m.devices] == [g.name for g in hardware.gpus()]
    assert infos["resnet50"].dtype_bytes == 4 and infos["resnet50"].tokens_per_sample is None
    assert infos["bert_base"].tokens_per_sample == 128


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"gpu": "tpu"}, "gpu"),
        ({"seq_len": 0}, "seq_len"),
        ({"seq_len": -5}, "seq_len"),
        ({"seq_len": 2.5}, "seq_len"),
        ({"seq_len": True}, "seq_len"),
        ({"seq_len": 8193}, "seq_len"),
        ({"mfu": 0}, "mfu"),
        ({"mfu": -0.1}, "mfu"),
        ({"mfu": 1.01}, "mfu"),
        ({"mfu": float("nan")}, "mfu"),
        ({"mfu": float("inf")}, "mfu"),
        ({"mfu": "0.4"}, "mfu"),
        ({"micro_batch": 0}, "micro_batch"),
        ({"micro_batch": 2, "batch_size": 3}, "micro_batch"),
    ],
)
def test_bad_llm_input_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as e:
        tw.load_model("llama3_8b", **kwargs)
    assert e.value.args[0] == field


def test_unknown_gpu_lists_the_choices_and_mfu_of_one_is_allowed() -> None:
    with pytest.raises(InputError, match="v100, a100-40gb, a100-80gb, h100"):
        tw.load_model("llama3_8b", gpu="tpu")
    assert tw.load_model("llama3_8b", mfu=1).compute_time_s > 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"mfu": 1e-308}, "mfu"), ({"mfu": 1e-12}, "mfu"), ({"micro_batch": 10**8}, "micro_batch")],
)
def test_compute_past_the_horizon_names_the_option_that_made_it(kwargs: dict[str, Any], field: str) -> None:
    # An LLM's compute is FLOPs / (peak x mfu) x micro-batch: the option that pushed it past
    # the engine's horizon is named, not the first layer it overflowed.
    with pytest.raises(InputError) as e:
        tw.load_model("llama3_8b", **kwargs)
    assert e.value.args[0] == field and "horizon" in str(e.value)
    # Just inside the horizon still builds (compute scales as 1 / mfu).
    w = tw.load_model("llama3_8b", mfu=0.4)
    assert tw.load_model("llama3_8b", mfu=0.4 * w.compute_time_s / 1e6).compute_time_s == pytest.approx(1e6)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"seq_len": 128}, "seq_len"),
        ({"micro_batch": 2}, "micro_batch"),
        ({"mfu": 0.4}, "mfu"),
        ({"recompute": True}, "recompute"),
    ],
)
def test_zoo_models_refuse_llm_options(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as e:
        tw.load_model("resnet50", **kwargs)
    assert e.value.args[0] == field and "llama3_8b" in e.value.args[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=120)


SIM = ["simulate", "-n", "4", "-b", "400Gbps", "-s", "ring"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--model", "llama3_8b", "--gpu", "tpu"], "gpu: unknown GPU 'tpu'"),
        (["--model", "llama3_8b", "--seq-len", "0"], "seq_len"),
        (["--model", "llama3_8b", "--mfu", "0"], "mfu"),
        (["--model", "llama3_8b", "--mfu", "1.5"], "mfu"),
        (["--model", "resnet50", "--seq-len", "128"], "seq_len"),
        (["--model", "resnet50", "--mfu", "0.4"], "mfu"),
    ],
)
def test_cli_bad_llm_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    p = run(*SIM, *args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tensorwire: error: ") and needle in lines[0], p.stderr
    assert p.stdout == ""


def test_cli_simulates_an_llm_with_its_options() -> None:
    import json

    p = run(
        *SIM,
        "--model",
        "llama3_8b",
        "--gpu",
        "a100-80gb",
        "--seq-len",
        "2048",
        "--mfu",
        "0.5",
        "--batch",
        "2",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    w = tw.load_model("llama3_8b", gpu="a100-80gb", seq_len=2048, micro_batch=2, mfu=0.5)
    assert out["compute_time_s"] == pytest.approx(w.compute_time_s, rel=1e-6)
    listing = run("models")
    assert listing.returncode == 0 and "8,030,261,248" in listing.stdout and "mixtral_8x7b" in listing.stdout


def test_two_byte_gradients_are_named_in_the_gpus_mixed_precision() -> None:
    # A V100 has no bf16: its title said "125.0 TFLOP/s fp16, gradients bf16".
    assert tw.load_model("llama3_8b", "v100").description.endswith("TFLOP/s fp16, gradients fp16")
    assert tw.load_model("llama3_8b", "h100").description.endswith("TFLOP/s bf16, gradients bf16")
    assert llm.workload("llama3_8b", gpu="h100", dtype_bytes=4).description.endswith("gradients fp32")
