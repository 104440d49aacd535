"""An LLM on a rail-optimised fabric: PyTorch DDP against FSDP and HSDP.

Llama-3 8B on 4 DGX H100 nodes (32 GPUs, one 400G NIC per GPU, rails as in docs/fabrics.md).
DDP all-reduces 25 MiB gradient buckets; FSDP shards parameters over all 32 GPUs; HSDP
shards inside a node and all-reduces across nodes. Every collective is timed by NCCL
2.30.7's model (docs/guide.md, "GPU clusters"). Run: ``python examples/llm_rail.py``.
"""

import tensorwire as tw

workload = tw.load_model("llama3_8b", gpu="h100", seq_len=4096)
cluster = tw.Cluster(workers=32, bandwidth=None, topology="rail:node=dgx-h100")
print(f"{workload.name}, {workload.total_bytes / 2**30:.1f} GiB of gradients, on {cluster.describe()}")
for spec in ["ddp", "fsdp", "hsdp"]:
    r = tw.simulate(workload, cluster, spec)
    print(
        f"{spec:<5} iteration {r.iteration_time_s:.3f}s  exposed comm {r.exposed_comm_s * 1e3:7.1f}ms"
        f"  scaling {r.scaling_factor:.3f}"
    )
