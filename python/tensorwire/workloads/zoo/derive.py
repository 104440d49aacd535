#!/usr/bin/env python3
"""Derive the built-in tensorwire workload zoo.

Every model is defined here layer by layer (stdlib only, no torch needed) and
written as ``<name>.json`` in the zoo format ``tensorwire-zoo/1`` described in
README.md next to this file.

    python3 python/tensorwire/workloads/zoo/derive.py            # regenerate in place
    python3 python/tensorwire/workloads/zoo/derive.py --out DIR  # write elsewhere

The output is deterministic: running the script twice gives byte-identical
files.

Conventions (also documented in README.md):

* Layers are listed in forward order; a layer is a torch module that owns
  parameters, or a parameterless module that does significant compute
  (attention score / weighted-sum matmuls, a tied output projection, a shared
  embedding lookup).  Where sibling modules consume the same input
  independently (BERT's three embeddings, fairseq's k/v/q projections) they are
  listed in ``module.parameters()`` order, so that the flattened tensor list is
  exactly ``list(model.parameters())``.
* ``forward_flops`` is per sample (one image, or one sequence for
  transformers), forward pass only, counting a multiply-accumulate as 2 FLOPs:
    - convolution: 2 * kh * kw * (cin / groups) * cout * Hout * Wout
    - linear: 2 * in * out per token (per sample for CNN classifiers)
    - attention scores + weighted sum: 2 * 2 * Lq * Lk * d per attention module
    - BatchNorm, LayerNorm, embedding lookups: 2 FLOPs per output element
  Biases, activations, pooling, softmax, dropout and residual additions are not
  counted (their cost is absorbed by the proportional time split).
* Per-layer times: each device's measured (or derived) total forward/backward
  time at its batch size is split across layers in proportion to
  ``forward_flops``; the top-level per-layer ``forward_s``/``backward_s`` are that
  split for ``default_device``.
"""

import argparse
import json
import os
import sys

FORMAT = "tensorwire-zoo/1"
DTYPE_BYTES = 4  # fp32

SEED_004 = "seed 004 (Guo, 'Accelerating Distributed DNN Training', 2019)"
SEED_000 = "seed 000 (Chang et al., 'How to Train your DNN: The Network Operator Edition', 2020)"


# ---------------------------------------------------------------------------
# Layer builder
# ---------------------------------------------------------------------------


def conv_out(size, k, stride=1, pad=0):
    """Output spatial size of a convolution / pooling window (floor mode)."""
    return (size + 2 * pad - k) // stride + 1


class Model:
    """Accumulates layers (forward order) and their parameter tensors."""

    def __init__(self):
        self.layers = []  # list of (name, forward_flops, [(tensor_name, numel)])
        self._names = set()

    def add(self, name, flops, tensors):
        if name in self._names:
            raise ValueError("duplicate layer name %r" % name)
        if flops <= 0:
            raise ValueError("layer %r has no compute" % name)
        self._names.add(name)
        self.layers.append((name, int(flops), list(tensors)))

    # -- CNN building blocks -------------------------------------------------
    def conv(self, name, cin, cout, kh, kw, hout, wout, bias, groups=1):
        flops = 2 * kh * kw * (cin // groups) * cout * hout * wout
        tensors = [(name + ".weight", cout * (cin // groups) * kh * kw)]
        if bias:
            tensors.append((name + ".bias", cout))
        self.add(name, flops, tensors)

    def bn(self, name, c, h, w):
        self.add(name, 2 * c * h * w, [(name + ".weight", c), (name + ".bias", c)])

    # -- generic -------------------------------------------------------------
    def linear(self, name, fin, fout, tokens=1, bias=True):
        tensors = [(name + ".weight", fin * fout)]
        if bias:
            tensors.append((name + ".bias", fout))
        self.add(name, 2 * fin * fout * tokens, tensors)

    def layernorm(self, name, d, tokens):
        self.add(name, 2 * d * tokens, [(name + ".weight", d), (name + ".bias", d)])

    def embedding(self, name, num, d, tokens):
        self.add(name, 2 * d * tokens, [(name + ".weight", num * d)])

    def compute(self, name, flops):
        """A module with significant compute but no parameters of its own."""
        self.add(name, flops, [])

    # -- totals --------------------------------------------------------------
    def parameters(self):
        return sum(n for _, _, ts in self.layers for _, n in ts)

    def flops(self):
        return sum(f for _, f, _ in self.layers)

    def tensor_count(self):
        return sum(len(ts) for _, _, ts in self.layers)


# ---------------------------------------------------------------------------
# CNNs
# ---------------------------------------------------------------------------


def resnet(blocks):
    """torchvision ResNet with Bottleneck blocks (v1.5: stride on the 3x3)."""
    m = Model()
    h = conv_out(224, 7, 2, 3)  # 112
    m.conv("conv1", 3, 64, 7, 7, h, h, bias=False)
    m.bn("bn1", 64, h, h)
    h = conv_out(h, 3, 2, 1)  # maxpool -> 56
    inplanes = 64
    for li, (planes, n) in enumerate(zip((64, 128, 256, 512), blocks)):
        stage_stride = 1 if li == 0 else 2
        for bi in range(n):
            stride = stage_stride if bi == 0 else 1
            p = "layer%d.%d" % (li + 1, bi)
            width, out = planes, planes * 4
            m.conv(p + ".conv1", inplanes, width, 1, 1, h, h, bias=False)
            m.bn(p + ".bn1", width, h, h)
            h2 = conv_out(h, 3, stride, 1)
            m.conv(p + ".conv2", width, width, 3, 3, h2, h2, bias=False)
            m.bn(p + ".bn2", width, h2, h2)
            m.conv(p + ".conv3", width, out, 1, 1, h2, h2, bias=False)
            m.bn(p + ".bn3", out, h2, h2)
            if stride != 1 or inplanes != out:
                m.conv(p + ".downsample.0", inplanes, out, 1, 1, h2, h2, bias=False)
                m.bn(p + ".downsample.1", out, h2, h2)
            inplanes, h = out, h2
    m.linear("fc", 512 * 4, 1000)
    return m


VGG_CFG = {
    "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "vgg19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def vgg(cfg):
    """torchvision VGG without batch norm (features / classifier indices)."""
    m = Model()
    h, cin, idx = 224, 3, 0
    for v in cfg:
        if v == "M":
            h = conv_out(h, 2, 2)
            idx += 1
        else:
            h = conv_out(h, 3, 1, 1)
            m.conv("features.%d" % idx, cin, v, 3, 3, h, h, bias=True)
            cin = v
            idx += 2  # Conv2d, ReLU
    # AdaptiveAvgPool2d((7, 7)) is the identity on a 7x7 map.
    m.linear("classifier.0", 512 * 7 * 7, 4096)
    m.linear("classifier.3", 4096, 4096)
    m.linear("classifier.6", 4096, 1000)
    return m


def alexnet():
    """torchvision AlexNet (single-tower variant of Krizhevsky 2014)."""
    m = Model()
    h = conv_out(224, 11, 4, 2)  # 55
    m.conv("features.0", 3, 64, 11, 11, h, h, bias=True)
    h = conv_out(h, 3, 2)  # 27
    h = conv_out(h, 5, 1, 2)
    m.conv("features.3", 64, 192, 5, 5, h, h, bias=True)
    h = conv_out(h, 3, 2)  # 13
    m.conv("features.6", 192, 384, 3, 3, h, h, bias=True)
    m.conv("features.8", 384, 256, 3, 3, h, h, bias=True)
    m.conv("features.10", 256, 256, 3, 3, h, h, bias=True)
    # maxpool -> 6x6, AdaptiveAvgPool2d((6, 6)) is then the identity.
    m.linear("classifier.1", 256 * 6 * 6, 4096)
    m.linear("classifier.4", 4096, 4096)
    m.linear("classifier.6", 4096, 1000)
    return m


def inception_v3():
    """torchvision Inception3, aux_logits=False, 299x299 input."""
    m = Model()

    def basic(name, cin, cout, k, hout, wout=None):
        kh, kw = (k, k) if isinstance(k, int) else k
        wout = hout if wout is None else wout
        m.conv(name + ".conv", cin, cout, kh, kw, hout, wout, bias=False)
        m.bn(name + ".bn", cout, hout, wout)

    h = conv_out(299, 3, 2)  # 149
    basic("Conv2d_1a_3x3", 3, 32, 3, h)
    h = conv_out(h, 3)  # 147
    basic("Conv2d_2a_3x3", 32, 32, 3, h)
    basic("Conv2d_2b_3x3", 32, 64, 3, h)  # padding 1
    h = conv_out(h, 3, 2)  # maxpool1 -> 73
    basic("Conv2d_3b_1x1", 64, 80, 1, h)
    h = conv_out(h, 3)  # 71
    basic("Conv2d_4a_3x3", 80, 192, 3, h)
    h = conv_out(h, 3, 2)  # maxpool2 -> 35

    def inception_a(p, cin, pool_features):
        basic(p + ".branch1x1", cin, 64, 1, h)
        basic(p + ".branch5x5_1", cin, 48, 1, h)
        basic(p + ".branch5x5_2", 48, 64, 5, h)
        basic(p + ".branch3x3dbl_1", cin, 64, 1, h)
        basic(p + ".branch3x3dbl_2", 64, 96, 3, h)
        basic(p + ".branch3x3dbl_3", 96, 96, 3, h)
        basic(p + ".branch_pool", cin, pool_features, 1, h)
        return 64 + 64 + 96 + pool_features

    c = inception_a("Mixed_5b", 192, 32)  # 256
    c = inception_a("Mixed_5c", c, 64)  # 288
    c = inception_a("Mixed_5d", c, 64)  # 288

    # InceptionB (Mixed_6a): 35 -> 17
    h2 = conv_out(h, 3, 2)
    basic("Mixed_6a.branch3x3", c, 384, 3, h2)
    basic("Mixed_6a.branch3x3dbl_1", c, 64, 1, h)
    basic("Mixed_6a.branch3x3dbl_2", 64, 96, 3, h)
    basic("Mixed_6a.branch3x3dbl_3", 96, 96, 3, h2)
    c, h = 384 + 96 + c, h2  # 768, 17

    def inception_c(p, cin, c7):
        basic(p + ".branch1x1", cin, 192, 1, h)
        basic(p + ".branch7x7_1", cin, c7, 1, h)
        basic(p + ".branch7x7_2", c7, c7, (1, 7), h)
        basic(p + ".branch7x7_3", c7, 192, (7, 1), h)
        basic(p + ".branch7x7dbl_1", cin, c7, 1, h)
        basic(p + ".branch7x7dbl_2", c7, c7, (7, 1), h)
        basic(p + ".branch7x7dbl_3", c7, c7, (1, 7), h)
        basic(p + ".branch7x7dbl_4", c7, c7, (7, 1), h)
        basic(p + ".branch7x7dbl_5", c7, 192, (1, 7), h)
        basic(p + ".branch_pool", cin, 192, 1, h)
        return 4 * 192

    c = inception_c("Mixed_6b", c, 128)
    c = inception_c("Mixed_6c", c, 160)
    c = inception_c("Mixed_6d", c, 160)
    c = inception_c("Mixed_6e", c, 192)
    # (AuxLogits would sit here; it is not part of this model.)

    # InceptionD (Mixed_7a): 17 -> 8
    h2 = conv_out(h, 3, 2)
    basic("Mixed_7a.branch3x3_1", c, 192, 1, h)
    basic("Mixed_7a.branch3x3_2", 192, 320, 3, h2)
    basic("Mixed_7a.branch7x7x3_1", c, 192, 1, h)
    basic("Mixed_7a.branch7x7x3_2", 192, 192, (1, 7), h)
    basic("Mixed_7a.branch7x7x3_3", 192, 192, (7, 1), h)
    basic("Mixed_7a.branch7x7x3_4", 192, 192, 3, h2)
    c, h = 320 + 192 + c, h2  # 1280, 8

    def inception_e(p, cin):
        basic(p + ".branch1x1", cin, 320, 1, h)
        basic(p + ".branch3x3_1", cin, 384, 1, h)
        basic(p + ".branch3x3_2a", 384, 384, (1, 3), h)
        basic(p + ".branch3x3_2b", 384, 384, (3, 1), h)
        basic(p + ".branch3x3dbl_1", cin, 448, 1, h)
        basic(p + ".branch3x3dbl_2", 448, 384, 3, h)
        basic(p + ".branch3x3dbl_3a", 384, 384, (1, 3), h)
        basic(p + ".branch3x3dbl_3b", 384, 384, (3, 1), h)
        basic(p + ".branch_pool", cin, 192, 1, h)
        return 320 + 768 + 768 + 192

    c = inception_e("Mixed_7b", c)  # 2048
    c = inception_e("Mixed_7c", c)  # 2048
    m.linear("fc", c, 1000)
    return m


# ---------------------------------------------------------------------------
# Transformers (forward_flops per sequence)
# ---------------------------------------------------------------------------


def bert(layers, d, seq_len, vocab=30522, max_pos=512, type_vocab=2):
    """HuggingFace BertModel (with pooler, no pre-training heads)."""
    m = Model()
    L, ffn = seq_len, 4 * d
    e = "bert.embeddings."
    m.embedding(e + "word_embeddings", vocab, d, L)
    m.embedding(e + "position_embeddings", max_pos, d, L)
    m.embedding(e + "token_type_embeddings", type_vocab, d, L)
    m.layernorm(e + "LayerNorm", d, L)
    for i in range(layers):
        p = "bert.encoder.layer.%d." % i
        m.linear(p + "attention.self.query", d, d, L)
        m.linear(p + "attention.self.key", d, d, L)
        m.linear(p + "attention.self.value", d, d, L)
        m.compute(p + "attention.self", 2 * 2 * L * L * d)
        m.linear(p + "attention.output.dense", d, d, L)
        m.layernorm(p + "attention.output.LayerNorm", d, L)
        m.linear(p + "intermediate.dense", d, ffn, L)
        m.linear(p + "output.dense", ffn, d, L)
        m.layernorm(p + "output.LayerNorm", d, L)
    m.linear("bert.pooler.dense", d, d, 1)  # [CLS] token only
    return m


def gpt2(layers, d, seq_len, vocab=50257, n_ctx=1024):
    """HuggingFace GPT2LMHeadModel; lm_head is tied to transformer.wte."""
    m = Model()
    L, ffn = seq_len, 4 * d
    m.embedding("transformer.wte", vocab, d, L)
    m.embedding("transformer.wpe", n_ctx, d, L)
    for i in range(layers):
        p = "transformer.h.%d." % i
        m.layernorm(p + "ln_1", d, L)
        m.linear(p + "attn.c_attn", d, 3 * d, L)
        m.compute(p + "attn", 2 * 2 * L * L * d)
        m.linear(p + "attn.c_proj", d, d, L)
        m.layernorm(p + "ln_2", d, L)
        m.linear(p + "mlp.c_fc", d, ffn, L)
        m.linear(p + "mlp.c_proj", ffn, d, L)
    m.layernorm("transformer.ln_f", d, L)
    m.compute("lm_head", 2 * d * vocab * L)  # weight = transformer.wte
    return m


def transformer_big(src_len, tgt_len, vocab=32768, d=1024, ffn=4096, enc_layers=6, dec_layers=6):
    """fairseq transformer_vaswani_wmt_en_de_big, --share-all-embeddings.

    Post-norm (normalize_before=False), sinusoidal positions (no parameters),
    no final encoder/decoder LayerNorm, output projection tied to the shared
    embedding.
    """
    m = Model()
    S, T = src_len, tgt_len

    def mha(p, lq, lk):
        # fairseq MultiheadAttention registers k_proj, v_proj, q_proj, out_proj
        m.linear(p + ".k_proj", d, d, lk)
        m.linear(p + ".v_proj", d, d, lk)
        m.linear(p + ".q_proj", d, d, lq)
        m.compute(p, 2 * 2 * lq * lk * d)
        m.linear(p + ".out_proj", d, d, lq)

    m.embedding("encoder.embed_tokens", vocab, d, S)
    for i in range(enc_layers):
        p = "encoder.layers.%d." % i
        mha(p + "self_attn", S, S)
        m.layernorm(p + "self_attn_layer_norm", d, S)
        m.linear(p + "fc1", d, ffn, S)
        m.linear(p + "fc2", ffn, d, S)
        m.layernorm(p + "final_layer_norm", d, S)
    m.compute("decoder.embed_tokens", 2 * d * T)  # shared weight lookup
    for i in range(dec_layers):
        p = "decoder.layers.%d." % i
        mha(p + "self_attn", T, T)
        m.layernorm(p + "self_attn_layer_norm", d, T)
        mha(p + "encoder_attn", T, S)
        m.layernorm(p + "encoder_attn_layer_norm", d, T)
        m.linear(p + "fc1", d, ffn, T)
        m.linear(p + "fc2", ffn, d, T)
        m.layernorm(p + "final_layer_norm", d, T)
    m.compute("decoder.output_projection", 2 * d * vocab * T)
    return m


# ---------------------------------------------------------------------------
# Model catalogue
# ---------------------------------------------------------------------------

BERT_SEQ = 128
GPT2_SEQ = 1024
WMT_SRC = 128
WMT_TGT = 128

RESNET_SRC = (
    "He et al. 2016 ('Deep Residual Learning for Image "
    "Recognition'), torchvision %s layout (Bottleneck v1.5, stride "
    "on the 3x3 conv), 224x224 input"
)

MODELS = [
    dict(
        name="resnet50",
        display_name="ResNet-50",
        family="cnn",
        sample="224x224x3 image",
        build=lambda: resnet((3, 4, 6, 3)),
        architecture_source=RESNET_SRC % "resnet50",
    ),
    dict(
        name="resnet101",
        display_name="ResNet-101",
        family="cnn",
        sample="224x224x3 image",
        build=lambda: resnet((3, 4, 23, 3)),
        architecture_source=RESNET_SRC % "resnet101",
    ),
    dict(
        name="resnet152",
        display_name="ResNet-152",
        family="cnn",
        sample="224x224x3 image",
        build=lambda: resnet((3, 8, 36, 3)),
        architecture_source=RESNET_SRC % "resnet152",
    ),
    dict(
        name="resnet200",
        display_name="ResNet-200",
        family="cnn",
        sample="224x224x3 image",
        build=lambda: resnet((3, 24, 36, 3)),
        architecture_source=(
            "He et al. 2016 ('Identity Mappings in Deep Residual Networks') "
            "block counts [3, 24, 36, 3], built with the torchvision "
            "(post-activation, v1.5) Bottleneck layout used for resnet152; "
            "224x224 input"
        ),
    ),
    dict(
        name="vgg16",
        display_name="VGG-16",
        family="cnn",
        sample="224x224x3 image",
        build=lambda: vgg(VGG_CFG["vgg16"]),
        architecture_source=(
            "Simonyan & Zisserman 2015, configuration D; torchvision vgg16 layout (no batch norm), 224x224 input"
        ),
    ),
    dict(
        name="vgg19",
        display_name="VGG-19",
        family="cnn",
        sample="224x224x3 image",
        build=lambda: vgg(VGG_CFG["vgg19"]),
        architecture_source=(
            "Simonyan & Zisserman 2015, configuration E; torchvision vgg19 layout (no batch norm), 224x224 input"
        ),
    ),
    dict(
        name="inception_v3",
        display_name="Inception-v3",
        family="cnn",
        sample="299x299x3 image",
        build=inception_v3,
        architecture_source=(
            "Szegedy et al. 2016 ('Rethinking the Inception Architecture for "
            "Computer Vision'); torchvision inception_v3 layout with "
            "aux_logits=False (auxiliary classifier omitted), 299x299 "
            "input"
        ),
    ),
    dict(
        name="alexnet",
        display_name="AlexNet",
        family="cnn",
        sample="224x224x3 image",
        build=alexnet,
        architecture_source=(
            "Krizhevsky et al. 2012 / Krizhevsky 2014 ('One weird trick') "
            "single-tower variant; torchvision alexnet layout, 224x224 "
            "input"
        ),
    ),
    dict(
        name="bert_base",
        display_name="BERT-base",
        family="transformer",
        sample="sequence of %d tokens" % BERT_SEQ,
        build=lambda: bert(12, 768, BERT_SEQ),
        architecture_source=(
            "Devlin et al. 2019; HuggingFace transformers bert-base-uncased "
            "(BertModel with pooler, no pre-training heads; tensor names "
            "carry the 'bert.' prefix of the BertFor* models), sequence "
            "length %d" % BERT_SEQ
        ),
    ),
    dict(
        name="bert_large",
        display_name="BERT-large",
        family="transformer",
        sample="sequence of %d tokens" % BERT_SEQ,
        build=lambda: bert(24, 1024, BERT_SEQ),
        architecture_source=(
            "Devlin et al. 2019; HuggingFace transformers bert-large-uncased "
            "(BertModel with pooler, no pre-training heads; tensor names "
            "carry the 'bert.' prefix of the BertFor* models), sequence "
            "length %d" % BERT_SEQ
        ),
    ),
    dict(
        name="gpt2",
        display_name="GPT-2 (124M)",
        family="transformer",
        sample="sequence of %d tokens" % GPT2_SEQ,
        build=lambda: gpt2(12, 768, GPT2_SEQ),
        architecture_source=(
            "Radford et al. 2019; HuggingFace transformers gpt2 "
            "(GPT2LMHeadModel, lm_head tied to transformer.wte and counted "
            "once), sequence length %d" % GPT2_SEQ
        ),
    ),
    dict(
        name="gpt2_medium",
        display_name="GPT-2 Medium (355M)",
        family="transformer",
        sample="sequence of %d tokens" % GPT2_SEQ,
        build=lambda: gpt2(24, 1024, GPT2_SEQ),
        architecture_source=(
            "Radford et al. 2019; HuggingFace transformers gpt2-medium "
            "(GPT2LMHeadModel, lm_head tied to transformer.wte and counted "
            "once), sequence length %d" % GPT2_SEQ
        ),
    ),
    dict(
        name="transformer_big",
        display_name="Transformer (big)",
        family="transformer",
        sample=("sentence pair of %d source + %d target tokens" % (WMT_SRC, WMT_TGT)),
        build=lambda: transformer_big(WMT_SRC, WMT_TGT),
        architecture_source=(
            "Vaswani et al. 2017 'big' model (d_model 1024, ffn 4096, 16 "
            "heads, 6+6 layers); fairseq transformer_vaswani_wmt_en_de_big "
            "with --share-all-embeddings (one 32,768-type joined BPE "
            "dictionary, as fairseq examples/scaling_nmt preprocesses "
            "WMT'16 En-De with --nwordssrc/--nwordstgt 32768), post-norm, "
            "sinusoidal positions; %d source + %d target tokens" % (WMT_SRC, WMT_TGT)
        ),
    ),
]


# ---------------------------------------------------------------------------
# Devices
# ---------------------------------------------------------------------------

# Published V100 measurements: seed 004, slide 10 ("DNN Models" table).
# (model, batch_size, forward_s, backward_s, label on the slide)
V100_MEASURED = {
    "resnet50": (32, 0.032, 0.064, "ResNet-50 FP 32 ms / BP 64 ms at batch 32"),
    "vgg16": (32, 0.049, 0.100, "VGG-16 FP 49 ms / BP 100 ms at batch 32"),
    "transformer_big": (16, 0.095, 0.114, "Transformer (WMT17) FP 95 ms / BP 114 ms at batch 16 (sequences)"),
    "bert_base": (85, 0.188, 0.281, "BERT-base FP 188 ms / BP 281 ms at batch 85"),
    "bert_large": (35, 0.339, 0.508, "BERT-large FP 339 ms / BP 508 ms at batch 35"),
}

V100_NOTES = {
    "transformer_big": (
        "; the slide does not give the sequence length and lists 61 M "
        "parameters for its Transformer, so mapping it onto transformer_big "
        "is an approximation"
    ),
    "bert_base": ("; the slide does not give the sequence length (%d assumed)" % BERT_SEQ),
    "bert_large": ("; the slide does not give the sequence length (%d assumed)" % BERT_SEQ),
}

# Models without a published V100 number: (reference model, batch size).
V100_DERIVED = {
    "resnet101": ("resnet50", 32),
    "resnet152": ("resnet50", 32),
    "resnet200": ("resnet50", 32),
    "inception_v3": ("resnet50", 32),
    "vgg19": ("vgg16", 32),
    "alexnet": ("vgg16", 32),
    "gpt2": ("bert_base", 8),
    "gpt2_medium": ("bert_large", 4),
}

# Seed 000, Table 3: forward pass / backprop compute time, batch 32 per worker.
# (batch_size, forward_s, backward_s, label in the table)
NETOP2020 = {
    "inception_v3": (32, 0.176, 0.296, "Inception-v3 0.176 sec / 0.296 sec"),
    "vgg16": (32, 0.169, 0.024, "VGG-16 0.169 sec / 0.024 sec"),
    "resnet101": (32, 0.176, 0.180, "Resnet-101 0.176 sec / 0.180 sec"),
    "resnet200": (32, 0.357, 0.34, "Resnet-200 0.357 sec / 0.34 sec"),
}


def gflop(f):
    return "%.3f GFLOP" % (f / 1e9)


def v100_device(name, flops):
    if name in V100_MEASURED:
        batch, fwd, bwd, label = V100_MEASURED[name]
        source = "%s, slide 10: %s on V100 (the talk's testbed, slide 38, is V100 GPUs)%s" % (
            SEED_004,
            label,
            V100_NOTES.get(name, ""),
        )
        return dict(batch_size=batch, forward_s=fwd, backward_s=bwd, source=source)
    ref, batch = V100_DERIVED[name]
    rbatch, rfwd, rbwd, rlabel = V100_MEASURED[ref]
    ratio = (batch * flops[name]) / (rbatch * flops[ref])
    fwd, bwd = rfwd * ratio, rbwd * ratio
    note = ""
    if ref.startswith("bert"):
        unit = "sequences of %d tokens" % GPT2_SEQ
        note = "; the reference's FLOPs use the assumed BERT sequence length of %d" % BERT_SEQ
    else:
        unit = "images"
    source = (
        "derived, not measured: %s, slide 10, %s on V100, scaled by the ratio "
        "of total forward FLOPs per batch (forward_flops per sample computed "
        "by derive.py): (%d x %s for %s) / (%d x %s for %s) = %.6f; "
        "batch size %d %s is a modelling choice; backward scaled by the "
        "same ratio%s"
        % (SEED_004, rlabel, batch, gflop(flops[name]), name, rbatch, gflop(flops[ref]), ref, ratio, batch, unit, note)
    )
    return dict(batch_size=batch, forward_s=fwd, backward_s=bwd, source=source)


def netop_device(name):
    batch, fwd, bwd, label = NETOP2020[name]
    source = (
        "%s, Table 3: %s (forward pass compute / backprop compute) at batch "
        "32 per worker, TensorFlow 1.4 on AWS EC2 (GPU model not named in the "
        "table). The paper states that the backprop compute time does not "
        "include the first layer of backpropagation (the model's last layer); "
        "recorded as given and split over all layers" % (SEED_000, label)
    )
    return dict(batch_size=batch, forward_s=fwd, backward_s=bwd, source=source)


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


def split(total, flops, total_flops):
    return total * flops / total_flops


def model_json(spec, model, devices):
    total_flops = model.flops()
    default = devices["v100"]
    layers = []
    for name, flops, tensors in model.layers:
        layers.append(
            {
                "name": name,
                "forward_flops": flops,
                "forward_s": split(default["forward_s"], flops, total_flops),
                "backward_s": split(default["backward_s"], flops, total_flops),
                "tensors": [{"name": t, "bytes": n * DTYPE_BYTES} for t, n in tensors],
            }
        )
    return {
        "format": FORMAT,
        "name": spec["name"],
        "display_name": spec["display_name"],
        "family": spec["family"],
        "sample": spec["sample"],
        "dtype_bytes": DTYPE_BYTES,
        "parameters": model.parameters(),
        "architecture_source": spec["architecture_source"],
        "layers": layers,
        "default_device": "v100",
        "devices": devices,
    }


def build_all():
    built = [(spec, spec["build"]()) for spec in MODELS]
    flops = {spec["name"]: m.flops() for spec, m in built}
    out = []
    for spec, m in built:
        name = spec["name"]
        devices = {"v100": v100_device(name, flops)}
        if name in NETOP2020:
            devices["netop2020"] = netop_device(name)
        out.append((spec, m, model_json(spec, m, devices)))
    return out


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=here, help="output directory (default: the zoo folder)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for spec, m, data in build_all():
        path = os.path.join(args.out, spec["name"] + ".json")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            json.dump(data, f, indent=1, sort_keys=False)
            f.write("\n")
        if not args.quiet:
            print(
                "%-16s params %12d  tensors %4d  layers %4d  fwd %s/sample"
                % (spec["name"], m.parameters(), m.tensor_count(), len(m.layers), gflop(m.flops()))
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
