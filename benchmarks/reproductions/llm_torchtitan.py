"""Llama 3 8B and 70B with FSDP2 on 64 A100 GPUs: torchtitan's published throughput beside
tensorwire's prediction (docs/reproductions.md, "LLM training with FSDP").

Published (pytorch/torchtitan, docs/performance.md, "Llama 3 performance numbers"): FSDP2
(1-D), 64 A100 80GB, local batch 1, sequence 8,192 (Llama 3's default in torchtitan),
bf16 parameters with fp32 reduction (torchtitan's default mixed precision):

| model | activation checkpointing | WPS (tokens/s per GPU) | MFU |
| 8B    | selective layer          | 2,904                  | 56.8% |
| 70B   | full                     | 331                    | 51.7% |

The compute efficiency is an input of the simulator, not something it predicts, so the
comparison is set up as a consistency check: the GPU efficiency is the published MFU
(scaled by 4/3 for full recomputation, whose extra forward MFU does not count), so that
compute alone would give the published WPS; what tensorwire adds is the communication:
how much of FSDP's all-gathers and reduce-scatters stay exposed on 8 DGX A100 nodes (8 x
200 Gbit/s NICs each, rail-optimised), and how the answer moves with the network.
Selective layer checkpointing (every second block recomputed) is modelled as no
recomputation with the published MFU; the difference is within the MFU's own rounding.

Run: ``.venv/bin/python benchmarks/reproductions/llm_torchtitan.py``
"""

from __future__ import annotations

import argparse

import tensorwire as tw
from tensorwire.workloads import llm

GPUS = 64
SEQ = 8192
TOPOLOGY = "rail:node=dgx-a100,nodes_per_group=8"
STRATEGY = "fsdp:param_dtype=bf16,reduce_dtype=fp32"

#: (model, full recomputation, published WPS per GPU, published MFU)
PUBLISHED = [("llama3_8b", False, 2904.0, 0.568), ("llama3_70b", True, 331.0, 0.517)]


def predict(model: str, recompute: bool, mfu: float, topology: str) -> tw.Result:
    """One FSDP iteration of ``model`` on 64 A100s at the efficiency that matches ``mfu``; the
    rail's NICs at the node preset's rate (200 Gbit/s) or the topology's ``nic=``."""
    efficiency = mfu * (4 / 3 if recompute else 1.0)  # hardware FLOPs include the recomputed forward
    w = llm.workload(model, gpu="a100-80gb", seq_len=SEQ, micro_batch=1, mfu=efficiency, recompute=recompute)
    return tw.simulate(w, tw.Cluster(GPUS, None, topology=topology), STRATEGY, iterations=3)


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    print(
        "| model | published WPS | predicted WPS | difference | compute s | compute slowed by collective kernels s "
        "| iteration s | exposed comm s | bytes sent per GPU |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for model, recompute, wps, mfu in PUBLISHED:
        r = predict(model, recompute, mfu, TOPOLOGY)
        predicted = SEQ / r.iteration_time_s
        print(
            f"| {model} | {wps:,.0f} | {predicted:,.0f} | {predicted / wps - 1:+.1%} | {r.compute_time_s:.3f} "
            f"| {r.compute_interference_s:.3f} | {r.iteration_time_s:.3f} | {r.exposed_comm_s:.3f} | {r.sent_bytes_per_worker / 1e9:.1f} GB |"
        )
    print("\nThe same jobs on slower networks (NIC rate per GPU; one-NIC-per-GPU rail fabric):\n")
    print("| model | NIC rate | predicted WPS | vs published | compute slowed s | exposed comm s |")
    print("|---|---|---:|---:|---:|---:|")
    for model, recompute, wps, mfu in PUBLISHED:
        for rate in ["100Gbps", "50Gbps", "25Gbps"]:
            r = predict(model, recompute, mfu, f"{TOPOLOGY},nic={rate}")
            predicted = SEQ / r.iteration_time_s
            print(
                f"| {model} | {rate} | {predicted:,.0f} | {predicted / wps - 1:+.1%} "
                f"| {r.compute_interference_s:.3f} | {r.exposed_comm_s:.3f} |"
            )


if __name__ == "__main__":
    main()
