"""Your own model: a workload file written by hand, read back and simulated.

A ``tensorwire-workload/1`` file lists layers in forward order with their compute times
(seconds) and gradient tensors (bytes); docs/formats.md describes it. This example writes
one to a temporary folder, reads it with :func:`tensorwire.workloads.formats.load_workload`
and compares two strategies. Run: ``python examples/own_workload.py``.
"""

import json
import tempfile
from pathlib import Path

import tensorwire as tw
from tensorwire.workloads.formats import load_workload

MiB = 2**20
model = {
    "format": "tensorwire-workload/1",
    "name": "three_layers",
    "batch_size": 64,
    "layers": [
        {
            "name": "embed",
            "forward_s": 0.002,
            "backward_s": 0.004,
            "tensors": [{"name": "embed.weight", "bytes": 64 * MiB}],
        },
        {
            "name": "block",
            "forward_s": 0.010,
            "backward_s": 0.020,
            "tensors": [{"name": "block.weight", "bytes": 16 * MiB}, {"name": "block.bias", "bytes": 4096}],
        },
        {
            "name": "head",
            "forward_s": 0.001,
            "backward_s": 0.002,
            "tensors": [{"name": "head.weight", "bytes": 8 * MiB}],
        },
    ],
}

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "three_layers.json"
    path.write_text(json.dumps(model))
    workload = load_workload(path)

print(
    f"{workload.name}: {len(workload.layers)} layers, {len(workload.tensors)} tensors,"
    f" {workload.total_bytes / MiB:.1f} MiB of gradients, {workload.compute_time_s * 1e3:.1f} ms of compute"
)
cluster = tw.Cluster(workers=8, bandwidth="10Gbps")
for spec in ["ring", "ring:schedule=priority,partition=4MiB,credit=8MiB"]:
    r = tw.simulate(workload, cluster, spec)
    print(f"{spec:<52} {r.iteration_time_s * 1e3:>7.2f}ms  scaling {r.scaling_factor:.3f}")
