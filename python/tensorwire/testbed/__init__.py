"""The emulated cluster testbed: real jobs on emulated hosts, measured against predictions.

Each host is a Linux network namespace joined by a veth pair to a bridge in a namespace of
its own; both directions of each host link are shaped with HTB like a switch port. Jobs are
real torch.distributed (Gloo) processes, one per host (:mod:`tensorwire.testbed.jobs`);
:func:`calibrate` turns a microbenchmark into a :class:`tensorwire.Cluster`, and
:func:`tensorwire.testbed.validate.validate` compares measured and predicted iteration
times. Needs root; see docs/testbed.md.
"""

from tensorwire.testbed.calibrate import Calibration, calibrate
from tensorwire.testbed.jobs import JobFailed, JobResult, run_job
from tensorwire.testbed.netns import TestbedUnavailable, cleanup_leftovers, unavailable_reason
from tensorwire.testbed.testbed import Testbed, Throughput

__all__ = [
    "Calibration",
    "JobFailed",
    "JobResult",
    "Testbed",
    "TestbedUnavailable",
    "Throughput",
    "calibrate",
    "cleanup_leftovers",
    "run_job",
    "unavailable_reason",
]
