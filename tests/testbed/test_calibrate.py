"""Calibration turns a microbenchmark into simulator parameters."""

from __future__ import annotations

import pytest
import tensorwire as tw
from tensorwire.testbed import Testbed
from tensorwire.testbed.calibrate import calibrate

pytestmark = [pytest.mark.testbed, pytest.mark.needs_torch]


def test_calibration_measures_efficiency_latency_and_overheads() -> None:
    with Testbed(hosts=2, rate="400Mbps", delay="50us") as tb:
        cal = calibrate(tb, quick=True)
    assert 0.85 <= cal.payload_efficiency <= 1.0
    assert 0 < cal.latency_s < 1e-3
    assert 0 <= cal.p2p_overhead_s < 5e-3 and 0 <= cal.allreduce_step_overhead_s < 5e-3
    cluster = cal.cluster(2, "ps")
    assert isinstance(cluster, tw.Cluster)
    assert cluster.bandwidth == pytest.approx(cal.payload_efficiency * tb.rate)
    assert cluster.latency == pytest.approx(cal.latency_s + 50e-6)  # the emulated delay per hop
    assert cluster.per_message_overhead == cal.p2p_overhead_s
    assert cal.cluster(2, "ring").per_message_overhead == cal.allreduce_step_overhead_s
    # Both hosts sending to each other at once: the ring's rate, a little below one flow's.
    assert cal.ring_efficiency is not None and 0.8 <= cal.ring_efficiency <= 1.0
    assert cal.cluster(2, "ring").bandwidth == pytest.approx(cal.ring_efficiency * tb.rate)
