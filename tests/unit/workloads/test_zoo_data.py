"""Data checks for the built-in workload zoo (python/tensorwire/workloads/zoo).

These tests read the JSON files directly with the json module; they do not
import tensorwire, so they run without the compiled extension.
"""

import json
import math
import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ZOO = os.path.join(REPO, "python", "tensorwire", "workloads", "zoo")
DERIVE = os.path.join(ZOO, "derive.py")

# Published parameter totals (fp32 bytes = 4 x params).
PUBLISHED_PARAMS = {
    "resnet50": 25_557_032,  # torchvision resnet50
    "resnet101": 44_549_160,  # torchvision resnet101
    "resnet152": 60_192_808,  # torchvision resnet152
    "resnet200": 64_673_832,  # [3, 24, 36, 3] torchvision-style Bottleneck
    "vgg16": 138_357_544,  # torchvision vgg16
    "vgg19": 143_667_240,  # torchvision vgg19
    "inception_v3": 23_834_568,  # torchvision inception_v3, aux_logits=False
    "alexnet": 61_100_840,  # torchvision alexnet
    "bert_base": 109_482_240,  # bert-base-uncased BertModel (with pooler)
    "bert_large": 335_141_888,  # bert-large-uncased BertModel (with pooler)
    "gpt2": 124_439_808,  # HF gpt2, tied lm_head counted once
    "gpt2_medium": 354_823_168,  # HF gpt2-medium, tied lm_head counted once
}


def transformer_big_params(vocab=32768, d=1024, ffn=4096, enc=6, dec=6):
    """fairseq transformer_vaswani_wmt_en_de_big, shared embeddings.

    No published exact total exists for this exact configuration (Vaswani et
    al. report ~213M with a ~37k vocabulary); this closed form is independent
    of derive.py's layer-by-layer construction.
    """

    def linear(i: int, o: int) -> int:
        return i * o + o

    ln = 2 * d
    mha = 4 * linear(d, d)
    ffn_p = linear(d, ffn) + linear(ffn, d)
    enc_layer = mha + ln + ffn_p + ln
    dec_layer = mha + ln + mha + ln + ffn_p + ln
    return vocab * d + enc * enc_layer + dec * dec_layer


EXPECTED_PARAMS = dict(PUBLISHED_PARAMS, transformer_big=transformer_big_params())

# len(list(model.parameters())) for the corresponding torch models.
EXPECTED_TENSORS = {
    "resnet50": 161,
    "resnet101": 314,
    "resnet152": 467,
    "resnet200": 611,
    "vgg16": 32,
    "vgg19": 38,
    "inception_v3": 284,
    "alexnet": 16,
    "bert_base": 199,
    "bert_large": 391,
    "gpt2": 148,
    "gpt2_medium": 292,
    "transformer_big": 253,
}

# (first tensor, last tensor) of model.parameters().
FIRST_LAST = {
    "resnet50": ("conv1.weight", "fc.bias"),
    "resnet200": ("conv1.weight", "fc.bias"),
    "vgg16": ("features.0.weight", "classifier.6.bias"),
    "vgg19": ("features.0.weight", "classifier.6.bias"),
    "alexnet": ("features.0.weight", "classifier.6.bias"),
    "inception_v3": ("Conv2d_1a_3x3.conv.weight", "fc.bias"),
    "bert_base": ("bert.embeddings.word_embeddings.weight", "bert.pooler.dense.bias"),
    "gpt2": ("transformer.wte.weight", "transformer.ln_f.bias"),
    "transformer_big": ("encoder.embed_tokens.weight", "decoder.layers.5.final_layer_norm.bias"),
}

MODELS = sorted(EXPECTED_PARAMS)

MEASURED_V100 = {  # seed 004, slide 10: (batch, forward_s, backward_s)
    "resnet50": (32, 0.032, 0.064),
    "vgg16": (32, 0.049, 0.100),
    "transformer_big": (16, 0.095, 0.114),
    "bert_base": (85, 0.188, 0.281),
    "bert_large": (35, 0.339, 0.508),
}

NETOP2020 = {  # seed 000, Table 3: (batch, forward_s, backward_s)
    "inception_v3": (32, 0.176, 0.296),
    "vgg16": (32, 0.169, 0.024),
    "resnet101": (32, 0.176, 0.180),
    "resnet200": (32, 0.357, 0.34),
}

TOP_KEYS = [
    "format",
    "name",
    "display_name",
    "family",
    "sample",
    "dtype_bytes",
    "parameters",
    "architecture_source",
    "layers",
    "default_device",
    "devices",
]
LAYER_KEYS = ["name", "forward_flops", "forward_s", "backward_s", "tensors"]
DEVICE_KEYS = ["batch_size", "forward_s", "backward_s", "source"]


def load(name):
    with open(os.path.join(ZOO, name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def tensors(data):
    return [t for layer in data["layers"] for t in layer["tensors"]]


def is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0)


def test_zoo_contains_exactly_the_listed_models():
    files = sorted(f[:-5] for f in os.listdir(ZOO) if f.endswith(".json"))
    assert files == MODELS


@pytest.mark.parametrize("name", MODELS)
def test_schema(name):
    d = load(name)
    assert list(d) == TOP_KEYS
    assert d["format"] == "tensorwire-zoo/1"
    assert d["name"] == name
    assert d["family"] in ("cnn", "transformer")
    for key in ("display_name", "sample", "architecture_source"):
        assert isinstance(d[key], str) and d[key].strip()
    assert d["dtype_bytes"] == 4
    assert isinstance(d["parameters"], int)
    assert isinstance(d["layers"], list) and d["layers"]
    for layer in d["layers"]:
        assert list(layer) == LAYER_KEYS
        assert isinstance(layer["name"], str) and layer["name"]
        assert isinstance(layer["forward_flops"], int)
        assert is_num(layer["forward_s"]) and is_num(layer["backward_s"])
        assert isinstance(layer["tensors"], list)
        for t in layer["tensors"]:
            assert list(t) == ["name", "bytes"]
            assert isinstance(t["name"], str) and t["name"]
            assert isinstance(t["bytes"], int)
    assert isinstance(d["devices"], dict) and d["devices"]
    assert d["default_device"] == "v100"
    assert "v100" in d["devices"]
    for dev in d["devices"].values():
        assert list(dev) == DEVICE_KEYS
        assert isinstance(dev["batch_size"], int)
        assert is_num(dev["forward_s"]) and is_num(dev["backward_s"])
        assert isinstance(dev["source"], str) and dev["source"].strip()


@pytest.mark.parametrize("name", MODELS)
def test_family_and_sample(name):
    d = load(name)
    if d["family"] == "cnn":
        assert "image" in d["sample"]
    else:
        assert "tokens" in d["sample"]
    if name.startswith("bert"):
        assert "128 tokens" in d["sample"]
    if name.startswith("gpt2"):
        assert "1024 tokens" in d["sample"]


@pytest.mark.parametrize("name", MODELS)
def test_parameter_count(name):
    d = load(name)
    total_bytes = sum(t["bytes"] for t in tensors(d))
    assert all(t["bytes"] % d["dtype_bytes"] == 0 for t in tensors(d))
    assert total_bytes == d["dtype_bytes"] * d["parameters"]
    assert d["parameters"] == EXPECTED_PARAMS[name]


def test_transformer_big_total():
    # Derived total (no exact published number for this configuration).
    assert EXPECTED_PARAMS["transformer_big"] == 209_911_808
    assert 210e6 * 0.99 < load("transformer_big")["parameters"] < 213e6 * 1.01


@pytest.mark.parametrize("name", MODELS)
def test_tensor_count_and_order(name):
    d = load(name)
    ts = tensors(d)
    assert len(ts) == EXPECTED_TENSORS[name]
    if name in FIRST_LAST:
        assert (ts[0]["name"], ts[-1]["name"]) == FIRST_LAST[name]


@pytest.mark.parametrize("name", MODELS)
def test_names_unique_and_nested(name):
    d = load(name)
    layer_names = [layer["name"] for layer in d["layers"]]
    tensor_names = [t["name"] for t in tensors(d)]
    assert len(set(layer_names)) == len(layer_names)
    assert len(set(tensor_names)) == len(tensor_names)
    for layer in d["layers"]:
        for t in layer["tensors"]:
            # A tensor belongs to its module: "<module path>.<param name>".
            prefix, _, leaf = t["name"].rpartition(".")
            assert prefix == layer["name"]
            assert leaf in ("weight", "bias")


@pytest.mark.parametrize("name", MODELS)
def test_all_numbers_positive(name):
    d = load(name)
    assert d["parameters"] > 0
    for layer in d["layers"]:
        assert layer["forward_flops"] > 0
        assert layer["forward_s"] > 0 and layer["backward_s"] > 0
        for t in layer["tensors"]:
            assert t["bytes"] > 0
    for dev in d["devices"].values():
        assert dev["batch_size"] > 0
        assert dev["forward_s"] > 0 and dev["backward_s"] > 0


@pytest.mark.parametrize("name", MODELS)
def test_layer_times_match_default_device(name):
    d = load(name)
    dev = d["devices"][d["default_device"]]
    layers = d["layers"]
    fwd = math.fsum(layer["forward_s"] for layer in layers)
    bwd = math.fsum(layer["backward_s"] for layer in layers)
    assert close(fwd, dev["forward_s"])
    assert close(bwd, dev["backward_s"])
    # Split in proportion to forward_flops (backward split the same way).
    total_flops = sum(layer["forward_flops"] for layer in layers)
    for layer in layers:
        share = layer["forward_flops"] / total_flops
        assert close(layer["forward_s"], dev["forward_s"] * share)
        assert close(layer["backward_s"], dev["backward_s"] * share)


@pytest.mark.parametrize("name", MODELS)
def test_device_sources(name):
    d = load(name)
    v100 = d["devices"]["v100"]
    if name in MEASURED_V100:
        batch, fwd, bwd = MEASURED_V100[name]
        assert (v100["batch_size"], v100["forward_s"], v100["backward_s"]) == (batch, fwd, bwd)
        assert "seed 004" in v100["source"]
        assert "derived" not in v100["source"]
    else:
        assert v100["source"].startswith("derived")
        assert "seed 004" in v100["source"]
    if name in NETOP2020:
        dev = d["devices"]["netop2020"]
        assert (dev["batch_size"], dev["forward_s"], dev["backward_s"]) == NETOP2020[name]
        assert "seed 000" in dev["source"]
        assert "first layer of backpropagation" in dev["source"]
        assert set(d["devices"]) == {"v100", "netop2020"}
    else:
        assert set(d["devices"]) == {"v100"}


def _total_flops(name):
    return sum(layer["forward_flops"] for layer in load(name)["layers"])


@pytest.mark.parametrize(
    "name,ref",
    [
        ("resnet101", "resnet50"),
        ("resnet152", "resnet50"),
        ("resnet200", "resnet50"),
        ("inception_v3", "resnet50"),
        ("vgg19", "vgg16"),
        ("alexnet", "vgg16"),
        ("gpt2", "bert_base"),
        ("gpt2_medium", "bert_large"),
    ],
)
def test_derived_v100_follows_flop_ratio(name, ref):
    dev = load(name)["devices"]["v100"]
    rdev = load(ref)["devices"]["v100"]
    ratio = (dev["batch_size"] * _total_flops(name)) / (rdev["batch_size"] * _total_flops(ref))
    assert close(dev["forward_s"], rdev["forward_s"] * ratio)
    assert close(dev["backward_s"], rdev["backward_s"] * ratio)


def test_conv_flops_spot_checks():
    # conv1 of ResNet-50: 7x7x3 -> 64 at 112x112.
    r50 = {layer["name"]: layer for layer in load("resnet50")["layers"]}
    assert r50["conv1"]["forward_flops"] == 2 * 7 * 7 * 3 * 64 * 112 * 112
    assert r50["fc"]["forward_flops"] == 2 * 2048 * 1000
    # ResNet-50 is ~4.1 GMAC per image.
    assert 8.0e9 < _total_flops("resnet50") < 8.4e9
    # BERT-base attention matmuls: 2 * 2 * L * L * d per layer, L = 128.
    bert = {layer["name"]: layer for layer in load("bert_base")["layers"]}
    assert bert["bert.encoder.layer.0.attention.self"]["forward_flops"] == 2 * 2 * 128 * 128 * 768
    assert bert["bert.encoder.layer.0.attention.self"]["tensors"] == []


def test_gpt2_tied_embedding_counted_once():
    d = load("gpt2")
    names = [t["name"] for t in tensors(d)]
    assert names.count("transformer.wte.weight") == 1
    assert not any(n.startswith("lm_head") for n in names)
    lm_head = [layer for layer in d["layers"] if layer["name"] == "lm_head"]
    assert len(lm_head) == 1 and lm_head[0]["tensors"] == []
    assert lm_head[0]["forward_flops"] == 2 * 768 * 50257 * 1024


def test_inception_has_no_aux_classifier():
    names = [t["name"] for t in tensors(load("inception_v3"))]
    assert not any("AuxLogits" in n for n in names)


def test_derive_regenerates_identical_files(tmp_path):
    subprocess.run(
        [sys.executable, DERIVE, "--out", str(tmp_path), "--quiet"], check=True, cwd=str(tmp_path), timeout=120
    )
    generated = sorted(p.name for p in tmp_path.iterdir())
    assert generated == [m + ".json" for m in MODELS]
    for fname in generated:
        with open(os.path.join(ZOO, fname), "rb") as f:
            committed = f.read()
        assert (tmp_path / fname).read_bytes() == committed, fname
        assert committed.endswith(b"}\n")
