"""GPU and node profiles: datasheet relations that must hold, lookups, errors."""

from __future__ import annotations

import dataclasses

import pytest
from tensorwire import InputError, hardware


def test_profiles_and_lookup() -> None:
    assert [g.name for g in hardware.gpus()] == ["v100", "a100-40gb", "a100-80gb", "h100", "h200"]
    for g in hardware.gpus():
        assert hardware.gpu(g.name) is g
        assert g.sources and all(g.sources)
        assert g.fp32_flops < g.mixed_precision_flops
        if g.bf16_flops is not None:
            # Dense tensor rates: FP16 = BF16 = 2 x TF32 on Ampere and Hopper.
            assert g.fp16_flops == g.bf16_flops
            assert g.tf32_flops is not None and g.bf16_flops == pytest.approx(2 * g.tf32_flops, rel=1e-3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        hardware.gpu("h100").bf16_flops = 1.0  # type: ignore[misc]


def test_h100_bf16_peak_is_its_tensor_cores_at_boost_clock() -> None:
    # 132 SMs x 4 tensor cores x 512 BF16 FMA per clock x 2 FLOP x 1.83 GHz (H100 whitepaper).
    assert hardware.gpu("h100").bf16_flops == pytest.approx(132 * 4 * 512 * 2 * 1.83e9, rel=1e-4)


def test_v100_has_no_bf16_and_trains_in_fp16() -> None:
    v = hardware.gpu("v100")
    assert (v.bf16_flops, v.tf32_flops, v.mixed_precision_dtype, v.mixed_precision_flops) == (
        None,
        None,
        "fp16",
        125e12,
    )


def test_memory_is_gib_of_hbm() -> None:
    assert {g.name: g.memory_bytes / 2**30 for g in hardware.gpus()} == {
        "v100": 32,
        "a100-40gb": 40,
        "a100-80gb": 80,
        "h100": 80,
        "h200": 141,
    }


def test_unknown_gpu_and_node_name_the_field_and_choices() -> None:
    with pytest.raises(InputError) as e:
        hardware.gpu("tpu")
    assert e.value.args == ("gpu", "unknown GPU 'tpu'; choose one of v100, a100-40gb, a100-80gb, h100, h200")
    with pytest.raises(InputError) as e:
        hardware.node("dgx-1")
    assert e.value.args[0] == "node" and "dgx-a100, dgx-h100" in e.value.args[1]


def test_nodes_match_their_datasheets() -> None:
    a, h = hardware.node("dgx-a100"), hardware.node("dgx-h100")
    # Datasheet totals: 4.8 TB/s and 7.2 TB/s bidirectional NVSwitch bandwidth.
    assert (a.nvswitch_bidirectional_bytes_per_s, h.nvswitch_bidirectional_bytes_per_s) == (4.8e12, 7.2e12)
    assert (a.gpus, a.nics, a.nic_bits_per_s, a.nvswitches) == (8, 8, 200e9, 6)
    assert (h.gpus, h.nics, h.nic_bits_per_s, h.nvswitches) == (8, 8, 400e9, 4)
    for n in hardware.nodes():
        g = hardware.gpu(n.gpu)
        assert n.nvlink_bytes_per_s == g.nvlink_bytes_per_s and n.sources
