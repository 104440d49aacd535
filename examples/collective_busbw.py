"""A collective microbenchmark: algorithm and bus bandwidth of all-reduce, as nccl-tests reports them.

One 8-worker ring at 100 Gbps, message sizes from 1 MiB to 256 MiB. algbw = buffer bytes /
time per collective; busbw = algbw x 2(n-1)/n, comparable with the link rate (docs/sources.md).
Run: ``python examples/collective_busbw.py``.
"""

import tensorwire as tw

workers = 8
cluster = tw.Cluster(workers=workers, bandwidth="100Gbps", latency="2us")
print(f"all-reduce, ring, {cluster.describe()}")
print(f"{'size':>8} {'time':>10} {'algbw':>11} {'busbw':>11}")
for mib in [1, 4, 16, 64, 256]:
    workload = tw.Workload.collective(f"allreduce:{mib}MiB")
    r = tw.simulate(workload, cluster, "ring", iterations=1)
    algbw = workload.total_bytes / r.iteration_time_s
    busbw = algbw * 2 * (workers - 1) / workers
    print(f"{mib:>5}MiB {r.iteration_time_s * 1e3:>8.3f}ms {algbw / 1e9:>7.2f}GB/s {busbw / 1e9:>7.2f}GB/s")
print(f"link rate: {cluster.bandwidth / 1e9:.2f}GB/s per direction")
