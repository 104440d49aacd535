"""Which way of synchronising gradients is fastest for ResNet-50 on 32 workers at 25 Gbps?

Every strategy below runs the same workload on the same cluster; the table is sorted by
iteration time. Run: ``python examples/compare_strategies.py``.
"""

import tensorwire as tw

workload = tw.load_model("resnet50")
cluster = tw.Cluster(workers=32, bandwidth="25Gbps")

rows = []
specs = ["ring", "double-tree", "halving-doubling", "ps:num_ps=4", "ring:schedule=priority,partition=4MiB,credit=8MiB"]
for spec in specs:
    r = tw.simulate(workload, cluster, spec)
    rows.append((r.iteration_time_s, spec, r.scaling_factor))

print(f"{workload.name} on {cluster.describe()}")
print(f"{'strategy':<52} {'iteration':>10} {'scaling':>8}")
for t, spec, scaling in sorted(rows):
    print(f"{spec:<52} {t * 1e3:>8.1f}ms {scaling:>8.3f}")
