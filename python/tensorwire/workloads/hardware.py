"""GPU and node profiles: peak arithmetic rates, memory, NVLink and NIC rates, with sources.

Data only (no simulation). The LLM workloads (:mod:`tensorwire.workloads.llm`) turn a model's
FLOPs into per-layer seconds with a GPU's peak rate times a model-FLOP utilisation; the node
presets describe the machines whose network topology the core crate builds.

Units: FLOP/s, bytes, bytes/s (``GB/s`` in a datasheet = 1e9 B/s), NIC rates in bit/s
(``Gbit/s`` = 1e9 bit/s). Peak tensor rates are **dense** (no 2:4 structured sparsity);
where a datasheet prints only the with-sparsity figure it is halved, and the source says so.

>>> gpu("h100").bf16_flops
989400000000000.0
>>> gpu("v100").bf16_flops is None, gpu("v100").mixed_precision_flops
(True, 125000000000000.0)
>>> node("dgx-h100").nic_bits_per_s_total
3200000000000.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tensorwire import _core
from tensorwire._core import InputError

GiB = 2**30

V100_DATASHEET = "NVIDIA Tesla V100 GPU Accelerator datasheet (2018), V100 SXM2 column"
V100_WHITEPAPER = "NVIDIA Tesla V100 GPU Architecture whitepaper (WP-08608-001, 2017)"
A100_DATASHEET = "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB SXM and A100 40GB SXM columns"
A100_WHITEPAPER = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1"
H100_DATASHEET = "NVIDIA H100 Tensor Core GPU datasheet (2022-2023), H100 SXM column"
H100_WHITEPAPER = (
    "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), table comparing A100 / H100 SXM5 / "
    "H100 PCIe (dense figures at the 1,830 MHz tensor boost clock: 132 SMs x 4 tensor cores x "
    "512 BF16 FMA/clock x 2 FLOP x 1.83 GHz = 989.4 TFLOP/s)"
)


@dataclass(frozen=True)
class Gpu:
    """One GPU model: peak dense rates, memory and NVLink, each from a named NVIDIA document.

    ``None`` means the GPU has no such tensor-core path (V100 has neither TF32 nor BF16).
    ``nvlink_bytes_per_s`` is the GPU's total NVLink rate **per direction** (datasheets print
    the bidirectional sum, twice this).
    """

    name: str
    display_name: str
    fp32_flops: float
    tf32_flops: Optional[float]
    bf16_flops: Optional[float]
    fp16_flops: float
    memory_bytes: int
    memory_bytes_per_s: float
    nvlink_bytes_per_s: float
    sources: tuple[str, ...]

    @property
    def mixed_precision_flops(self) -> float:
        """The peak rate LLM training runs at: dense BF16 tensor, or FP16 tensor where the GPU
        has no BF16 (V100). FLOP/s."""
        return self.bf16_flops if self.bf16_flops is not None else self.fp16_flops

    @property
    def mixed_precision_dtype(self) -> str:
        """``"bf16"`` or ``"fp16"``: which rate :attr:`mixed_precision_flops` is."""
        return "bf16" if self.bf16_flops is not None else "fp16"


# HBM capacities: the datasheets' "32 GB" / "40 GB" / "80 GB" are GiB of HBM (power-of-two
# stacks: 4 x 8 GiB HBM2 on V100, 5 x 8 GiB HBM2 / 5 x 16 GiB HBM2e on A100, 5 x 16 GiB HBM3 on
# H100 SXM); CUDA reports slightly less as usable (ECC and reserved memory).
_GPUS: tuple[Gpu, ...] = (
    Gpu(
        name="v100",
        display_name="V100 SXM2 32GB",
        fp32_flops=15.7e12,
        tf32_flops=None,
        bf16_flops=None,
        fp16_flops=125e12,
        memory_bytes=32 * GiB,
        memory_bytes_per_s=900e9,
        nvlink_bytes_per_s=150e9,
        sources=(
            f"{V100_DATASHEET}: single precision 15.7 TFLOPS, tensor performance 125 TFLOPS "
            "(FP16 multiply, FP32 accumulate), 32 GB HBM2, 900 GB/s, NVLink 300 GB/s (bidirectional)",
            f"{V100_WHITEPAPER}: Volta tensor cores take FP16 inputs only (no TF32, no BF16)",
        ),
    ),
    Gpu(
        name="a100-40gb",
        display_name="A100 SXM 40GB",
        fp32_flops=19.5e12,
        tf32_flops=156e12,
        bf16_flops=312e12,
        fp16_flops=312e12,
        memory_bytes=40 * GiB,
        memory_bytes_per_s=1555e9,
        nvlink_bytes_per_s=300e9,
        sources=(
            f"{A100_DATASHEET}: FP32 19.5 TFLOPS, TF32 tensor 156 TFLOPS, BF16 / FP16 tensor 312 "
            "TFLOPS (dense; 312 / 624 with sparsity), 40 GB HBM2, 1,555 GB/s, NVLink 600 GB/s (bidirectional)",
            A100_WHITEPAPER,
        ),
    ),
    Gpu(
        name="a100-80gb",
        display_name="A100 SXM 80GB",
        fp32_flops=19.5e12,
        tf32_flops=156e12,
        bf16_flops=312e12,
        fp16_flops=312e12,
        memory_bytes=80 * GiB,
        memory_bytes_per_s=2039e9,
        nvlink_bytes_per_s=300e9,
        sources=(
            f"{A100_DATASHEET}: FP32 19.5 TFLOPS, TF32 tensor 156 TFLOPS, BF16 / FP16 tensor 312 "
            "TFLOPS (dense), 80 GB HBM2e, 2,039 GB/s, NVLink 600 GB/s (bidirectional)",
            A100_WHITEPAPER,
        ),
    ),
    Gpu(
        name="h100",
        display_name="H100 SXM 80GB",
        fp32_flops=66.9e12,
        tf32_flops=494.7e12,
        bf16_flops=989.4e12,
        fp16_flops=989.4e12,
        memory_bytes=80 * GiB,
        memory_bytes_per_s=3350e9,
        nvlink_bytes_per_s=450e9,
        sources=(
            f"{H100_WHITEPAPER}: FP32 66.9, TF32 tensor 494.7, BF16 / FP16 tensor 989.4 TFLOPS dense",
            f"{H100_DATASHEET}: FP32 67 TFLOPS, TF32 989 / BF16 1,979 / FP16 1,979 TFLOPS printed with "
            "sparsity (half of each is the dense rate above), 80 GB HBM3, 3.35 TB/s, NVLink 900 GB/s "
            "(bidirectional)",
        ),
    ),
    Gpu(
        name="h200",
        display_name="H200 SXM 141GB",
        fp32_flops=66.9e12,
        tf32_flops=494.7e12,
        bf16_flops=989.4e12,
        fp16_flops=989.4e12,
        memory_bytes=141 * GiB,
        memory_bytes_per_s=4800e9,
        nvlink_bytes_per_s=450e9,
        sources=(
            "NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM: FP32 67 TFLOPS, TF32 989 / BF16 "
            "1,979 / FP16 1,979 TFLOPS printed with sparsity (the same Hopper tensor cores as H100 SXM: "
            "dense rates as h100), 141 GB HBM3e, 4.8 TB/s, NVLink 900 GB/s (bidirectional)",
        ),
    ),
)


def gpus() -> list[Gpu]:
    """Every GPU profile, oldest first."""
    return list(_GPUS)


def gpu(name: str) -> Gpu:
    """The profile called ``name`` (``v100``, ``a100-40gb``, ``a100-80gb``, ``h100``, ``h200``)."""
    for g in _GPUS:
        if g.name == name:
            return g
    raise InputError("gpu", f"unknown GPU {name!r}; choose one of {', '.join(g.name for g in _GPUS)}")


@dataclass(frozen=True)
class Node:
    """A multi-GPU machine: GPUs joined by NVSwitch, one NIC per GPU for the scale-out network.

    ``nvlink_bytes_per_s`` is per GPU and per direction (through the NVSwitches every GPU can
    send to the others at this total rate); ``nic_bits_per_s`` is per NIC and per direction.
    Storage / in-band management NICs are not counted.
    """

    name: str
    display_name: str
    gpu: str
    gpus: int
    nvswitches: int
    nvlink_bytes_per_s: float
    nics: int
    nic_bits_per_s: float
    sources: tuple[str, ...]

    @property
    def nvswitch_bidirectional_bytes_per_s(self) -> float:
        """Total GPU-to-GPU NVSwitch bandwidth, both directions of every GPU (datasheet figure)."""
        return 2 * self.gpus * self.nvlink_bytes_per_s

    @property
    def nic_bits_per_s_total(self) -> float:
        """Scale-out bandwidth of the node per direction, bit/s."""
        return self.nics * self.nic_bits_per_s


def _simulated(name: str) -> dict[str, Any]:
    """The figures the simulator uses for node preset ``name`` (the core's table, so that
    they exist once): GPUs, NVLink bytes/s and NIC bit/s per GPU per direction."""
    core = next(p for p in _core.NODE_PRESETS if p["name"] == name)
    return {
        "gpus": core["gpus"],
        "nvlink_bytes_per_s": core["nvlink_bytes_per_s"],
        "nic_bits_per_s": core["nic_bytes_per_s"] * 8,
    }


_NODES: tuple[Node, ...] = (
    Node(
        name="dgx-a100",
        display_name="NVIDIA DGX A100 (640GB)",
        gpu="a100-80gb",
        nvswitches=6,
        nics=8,
        **_simulated("dgx-a100"),
        sources=(
            "NVIDIA DGX A100 datasheet (2020-2021): 8x A100 SXM (80GB in the 640GB system, 40GB in the "
            "320GB system), 6x NVIDIA NVSwitch, 4.8 TB/s bidirectional GPU-to-GPU bandwidth (600 GB/s "
            "per GPU), 8x single-port ConnectX-6 VPI 200 Gb/s HDR InfiniBand for the compute fabric",
            "NVIDIA DGX A100 System Architecture technical whitepaper (WP-10083-001, 2020)",
        ),
    ),
    Node(
        name="dgx-h100",
        display_name="NVIDIA DGX H100",
        gpu="h100",
        nvswitches=4,
        nics=8,
        **_simulated("dgx-h100"),
        sources=(
            "NVIDIA DGX H100 datasheet (2022-2023): 8x H100 SXM 80GB, 4x NVIDIA NVSwitch, 7.2 TB/s "
            "bidirectional GPU-to-GPU bandwidth (900 GB/s per GPU), 4 OSFP ports serving 8x "
            "single-port ConnectX-7 VPI, 400 Gb/s InfiniBand / Ethernet each",
            "NVIDIA DGX H100 User Guide, 'Network Modules' (two network modules of four ConnectX-7 each, one per GPU)",
        ),
    ),
    Node(
        name="hgx-h200",
        display_name="NVIDIA HGX H200 (8 GPUs)",
        gpu="h200",
        nvswitches=4,
        nics=8,
        **_simulated("hgx-h200"),
        sources=(
            "NVIDIA H200 datasheet (2024): HGX H200 with 8x H200 SXM on NVLink/NVSwitch, 900 GB/s per GPU",
            "Microsoft Azure ND H200 v5 (8x H200, 8x 400 Gb/s InfiniBand per VM); the simulator's rates "
            "as the core's hgx-h200 preset",
        ),
    ),
    Node(
        name="a3-mega",
        display_name="Google Cloud A3 Mega (a3-megagpu-8g)",
        gpu="h100",
        nvswitches=4,
        nics=8,
        **_simulated("a3-mega"),
        sources=(
            "Google Cloud GPU machine types, A3 Mega: 8x H100 80GB on NVSwitch, GPUDirect-TCPXO with "
            "8x 200 Gb/s GPU NICs (as the core's a3-mega preset; its rates not re-checked against the page)",
        ),
    ),
)


def nodes() -> list[Node]:
    """Every node preset."""
    return list(_NODES)


def node(name: str) -> Node:
    """The node preset called ``name`` (``dgx-a100``, ``dgx-h100``, ``hgx-h200``, ``a3-mega``)."""
    for n in _NODES:
        if n.name == name:
            return n
    raise InputError("node", f"unknown node {name!r}; choose one of {', '.join(n.name for n in _NODES)}")
