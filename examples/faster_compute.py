"""What if the GPUs were faster? The same model and network, compute 1x to 8x faster.

Faster compute leaves less time to hide gradient synchronisation behind the backward
pass, so the scaling factor drops even though each iteration is shorter.
Run: ``python examples/faster_compute.py``.
"""

import tensorwire as tw

base = tw.load_model("vgg16")
cluster = tw.Cluster(workers=16, bandwidth="25Gbps")
print(f"{base.name}, ring, {cluster.describe()}")
print(f"{'speedup':>7} {'compute':>9} {'iteration':>10} {'exposed comm':>13} {'scaling':>8}")
for speedup in [1, 2, 4, 8]:
    workload = base.with_compute_speedup(speedup)
    r = tw.simulate(workload, cluster, "ring")
    print(
        f"{speedup:>6}x {r.compute_time_s * 1e3:>7.1f}ms {r.iteration_time_s * 1e3:>8.1f}ms"
        f" {r.exposed_comm_s * 1e3:>11.1f}ms {r.scaling_factor:>8.3f}"
    )
