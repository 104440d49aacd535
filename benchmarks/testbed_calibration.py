"""Testbed calibration: what the emulated links really carry, as simulator parameters.

For each (hosts, rate) it builds a testbed, runs :func:`tensorwire.testbed.calibrate` and
prints one row: payload efficiency (achieved / shaped rate of a large Gloo message), the
latency per hop (raw TCP), and Gloo's per-message overheads (point-to-point; per ring step
of an all-reduce over all hosts). It also measures a raw TCP transfer
(``Testbed.measure_throughput``) as a cross-check of the efficiency.

Needs root and torch. Run: ``.venv/bin/python benchmarks/testbed_calibration.py``
(``--json`` for machine-readable rows; ``--case HOSTS,RATE`` to pick cases).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys

from tensorwire.testbed import Testbed, calibrate

CASES = (("2", "100Mbps"), ("2", "1Gbps"), ("4", "400Mbps"), ("8", "1Gbps"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="HOSTS,RATE (repeatable), e.g. 4,400Mbps")
    parser.add_argument("--json", action="store_true", help="print JSON rows")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    cases = [tuple(c.split(",", 1)) for c in args.case] if args.case else list(CASES)
    rows = []
    for hosts, rate in cases:
        with Testbed(hosts=int(hosts), rate=rate) as tb:
            cal = calibrate(tb, quick=args.quick)
            tcp = tb.measure_throughput(0, 1, max_seconds=1.0)
        rows.append(
            {
                "hosts": int(hosts),
                "rate": rate,
                "payload_efficiency": cal.payload_efficiency,
                "tcp_efficiency": tcp.efficiency,
                "allreduce_efficiency": cal.allreduce_efficiency,
                "latency_us": cal.latency_s * 1e6,
                "p2p_overhead_us": cal.p2p_overhead_s * 1e6,
                "allreduce_step_overhead_us": cal.allreduce_step_overhead_s * 1e6,
            }
        )
        if not args.json:
            r = rows[-1]
            print(
                f"{hosts} hosts {rate:>8}: efficiency {r['payload_efficiency']:.3f} (tcp {r['tcp_efficiency']:.3f}, "
                f"all-reduce {r['allreduce_efficiency']:.3f}), latency {r['latency_us']:.1f} us/hop, "
                f"p2p overhead {r['p2p_overhead_us']:.0f} us, all-reduce step overhead {r['allreduce_step_overhead_us']:.0f} us",
                flush=True,
            )
    if args.json:
        print(json.dumps({"machine": platform.platform(), "python": sys.version.split()[0], "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
