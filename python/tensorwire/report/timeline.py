"""Recording one simulated iteration for the report's timeline.

``tensorwire.simulate(..., timeline=True)`` returns ``Result.timeline``: a list of spans
(see :data:`Span`). Builds of the core without it still give a
report, without the timeline section.
"""

from __future__ import annotations

import inspect
from typing import Any, Optional, Union

from tensorwire.api import simulate
from tensorwire.cluster import Cluster
from tensorwire.sweep.grid import FILE_GPU
from tensorwire.sweep.table import Row
from tensorwire.workload import Workload
from tensorwire.workloads import load_model
from tensorwire.workloads.formats import load_workload

#: A span of a recorded iteration, as ``Result.timeline`` gives it: ``kind`` (compute or
#: flow), ``worker`` (int or None), ``server`` (a parameter server's index, or None),
#: ``link`` (str or None), ``name``, ``start_s``,
#: ``end_s`` (seconds) and ``bytes`` (None for compute).
Span = dict[str, Any]

#: Up to this many workers the timeline run computes every worker's transfers.
UNFOLD_UP_TO = 128


def supported() -> bool:
    """Whether this build's :func:`tensorwire.simulate` can record a timeline."""
    return "timeline" in inspect.signature(simulate).parameters


def record(row: Row, workload_file: Optional[str] = None, workload_format: str = "auto") -> Union[list[Span], str]:
    """The spans of one iteration of the configuration in ``row`` (a sweep row), or why they
    cannot be recorded (a sentence for the page). A row of a workload file (``gpu`` is
    ``file``) is re-simulated from ``workload_file``, which a sweep file does not name."""
    if not supported():
        return (
            "this build of the core cannot record an iteration yet "
            "(<code>tensorwire.simulate(..., timeline=True)</code>)"
        )
    workload: Workload
    if row.get("gpu") == FILE_GPU:
        if workload_file is None:
            return (
                f"{row['model']} was read from a workload file, which the sweep file does not name; "
                "<code>tensorwire report --workload FILE</code> shows its timeline"
            )
        workload = load_workload(workload_file, workload_format)
    else:
        workload = load_model(
            str(row["model"]),
            row.get("gpu"),
            row.get("batch"),
            seq_len=row.get("seq_len"),
            mfu=row.get("mfu"),
            recompute=bool(row.get("recompute")),
        )
    speedup = float(row.get("compute_speedup") or 1.0)
    if speedup != 1.0:
        workload = workload.with_compute_speedup(speedup)
    cluster = Cluster(
        int(row["workers"]),
        float(row["bandwidth"]),
        float(row["latency_s"]),
        str(row["topology"]),
        str(row["network"]),
    )
    # Without the symmetric shortcut every worker's transfers are recorded (the folded run
    # records one representative); same timing either way, the cost grows with the workers.
    options: dict[str, Any] = {"timeline": True, "fold": int(row["workers"]) > UNFOLD_UP_TO}
    result = simulate(
        workload, cluster, str(row["strategy"]), iterations=int(row["iterations"]), seed=int(row["seed"]), **options
    )
    return [dict(s) for s in result.timeline]
