"""Chrome / Perfetto trace of one simulated iteration (open in ui.perfetto.dev or
chrome://tracing): one process for the workers (a track per worker with its forward and
backward passes, and one for its outgoing messages) and one for the links (a track per
directed link with every message crossing it). Times in microseconds from the start of
the iteration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tensorwire.io import write_atomic
from tensorwire.result import Result

WORKERS, LINKS = 1, 2


def chrome_trace(result: Result) -> dict[str, Any]:
    """The trace as a JSON-ready dict (``traceEvents`` format)."""
    if not result.timeline:
        raise ValueError("the result has no timeline; simulate with timeline=True")
    t0 = min(float(s["start_s"]) for s in result.timeline)

    def us(t: Any) -> float:
        """Seconds on the simulated clock -> microseconds since the first span."""
        return (float(t) - t0) * 1e6

    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": WORKERS, "name": "process_name", "args": {"name": f"workers ({result.strategy})"}},
        {"ph": "M", "pid": LINKS, "name": "process_name", "args": {"name": "links"}},
    ]
    links = sorted({str(s["link"]) for s in result.timeline if s["link"] is not None})
    link_tid = {name: i for i, name in enumerate(links)}
    for name, tid in link_tid.items():
        events.append({"ph": "M", "pid": LINKS, "tid": tid, "name": "thread_name", "args": {"name": name}})
    workers = sorted({int(s["worker"]) for s in result.timeline if s["worker"] is not None})
    for w in workers:
        events.append({"ph": "M", "pid": WORKERS, "tid": 2 * w, "name": "thread_name", "args": {"name": f"worker {w} compute"}})
        events.append({"ph": "M", "pid": WORKERS, "tid": 2 * w + 1, "name": "thread_name", "args": {"name": f"worker {w} sends"}})
    for i, s in enumerate(result.timeline):
        start, end = us(s["start_s"]), us(s["end_s"])
        if s["kind"] == "compute":
            events.append({"ph": "X", "pid": WORKERS, "tid": 2 * int(s["worker"]), "name": s["name"], "cat": "compute",
                           "ts": start, "dur": end - start})
            continue
        pid, tid = (LINKS, link_tid[str(s["link"])]) if s["link"] is not None else (WORKERS, 2 * int(s["worker"]) + 1)
        if s["link"] is None and s["worker"] is None:
            continue  # a server's message: shown on the links it crosses
        args = {"bytes": s["bytes"]}
        # Messages overlap on a track, so they are async slices (which may overlap).
        events.append({"ph": "b", "pid": pid, "tid": tid, "id": i, "cat": "flow", "name": s["name"], "ts": start, "args": args})
        events.append({"ph": "e", "pid": pid, "tid": tid, "id": i, "cat": "flow", "name": s["name"], "ts": end})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "metadata": {"model": result.model, "workers": result.workers, "strategy": result.strategy}}


def write_trace(path: str | Path, result: Result) -> None:
    """Writes the trace atomically."""
    write_atomic(Path(path), json.dumps(chrome_trace(result)), field="trace")
