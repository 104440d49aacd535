"""Jobs on the testbed: real torch.distributed (Gloo) processes, one per emulated host.

A job trains a :class:`tensorwire.Workload` data-parallel with emulated compute (each
layer's profiled forward and backward time is slept, see :mod:`.compute`) and real
gradient tensors of the workload's sizes, synchronised by a strategy:

- ``ring``: one all-reduce per gradient piece, FIFO, one at a time (:mod:`.ring`);
- ``ps``: parameter servers on hosts of their own over send/recv (:mod:`.ps`);
- with ``runtime=True``, the runtime's :class:`~tensorwire.torch.ScheduledDataParallel`
  runs a ``ring`` spec in its ``fifo``, ``fusion`` or ``priority`` mode (:mod:`.runtime`).

Strategy specs are the simulator's (``ps:num_ps=2``, ``ring:partition=4MiB``), so the
same spec is measured here and predicted by :func:`tensorwire.simulate`. Needs the
``torch`` package in the job processes only.
"""

from tensorwire.testbed.jobs.launcher import JobFailed, JobResult, hosts_needed, run_job
from tensorwire.testbed.jobs.registry import JOB_STRATEGIES, JobStrategy

__all__ = ["JOB_STRATEGIES", "JobFailed", "JobResult", "JobStrategy", "hosts_needed", "run_job"]
