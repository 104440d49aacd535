"""tensorwire: which way of synchronising gradients is fastest on my network, by how much, and why.

The vocabulary is four words: a :class:`Workload` (a model as the network sees it) runs on a
:class:`Cluster` under a :class:`Strategy`, and :func:`simulate` returns a :class:`Result`.

>>> import tensorwire as tw
>>> r = tw.simulate(tw.Workload.collective("allreduce:1MiB"), tw.Cluster(workers=4, bandwidth="8Gbps", latency="0s"), "ring")
>>> round(r.iteration_time_s * 1e6, 1)  # 2(N-1) * (1 MiB / 4) / 1 GB/s
1572.9
"""

from tensorwire._core import InputError, __version__
from tensorwire.api import Job, Progress, simulate, simulate_jobs
from tensorwire.cluster import Cluster
from tensorwire.failures import Failure
from tensorwire.result import Result
from tensorwire.strategy import Strategy, StrategyInfo, strategies
from tensorwire.workload import Layer, Tensor, Workload
from tensorwire.workloads import ModelInfo, load_model, models

__all__ = [
    "Cluster",
    "Failure",
    "InputError",
    "Job",
    "Layer",
    "ModelInfo",
    "Progress",
    "Result",
    "Strategy",
    "StrategyInfo",
    "Tensor",
    "Workload",
    "__version__",
    "load_model",
    "models",
    "simulate",
    "simulate_jobs",
    "strategies",
]
