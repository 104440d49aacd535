"""Chrome / Perfetto trace of one simulated iteration (open in ui.perfetto.dev or
chrome://tracing): one process for the workers (a track per worker with its forward and
backward passes, and one for its outgoing messages), one for the links (a track per
directed link with every message crossing it) and, with parameter servers, one for the
servers (a track per server with its outgoing messages). Collectives timed by NCCL's model
move no message: each is a slice on its worker's track, with NCCL's algorithm, protocol
and channels in its args. Times in microseconds from the start of
the iteration.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from tensorwire.io import write_atomic
from tensorwire.result import Result

WORKERS, LINKS, SERVERS = 1, 2, 3


#: Workers whose compute and messages a trace shows by default: enough to see the pattern,
#: small enough that a 1,024-GPU FSDP trace stays in the tens of MB, not hundreds.
DEFAULT_TRACE_WORKERS = 8

#: With ``workers`` given, at most this many spans (the earliest; about 2 events each, some
#: 40 MB of JSON): one worker's sends in a 1,024-rank FSDP iteration alone are ~0.7 M spans.
MAX_SPANS = 150_000


def chrome_trace(result: Result, workers: Optional[int] = None) -> dict[str, Any]:
    """The trace as a JSON-ready dict (``traceEvents`` format); ``workers``: show only the
    compute and sends of workers 0..workers-1 and the links of their hosts (h0..), at most
    :data:`MAX_SPANS` spans (the earliest); None: every worker and link, every span."""
    if not result.timeline:
        if result.iteration_time_s == 0:
            return {"traceEvents": [], "displayTimeUnit": "ms", "metadata": {}}  # nothing ran: nothing to show
        raise ValueError("the result has no timeline; simulate with timeline=True")
    timeline = [s for s in result.timeline if workers is None or shown_in_trace(s, workers)]
    cut: Optional[dict[str, Any]] = None
    if workers is not None and len(timeline) > MAX_SPANS:
        # The earliest spans (the start of the iteration) up to the cap, in time order.
        ordered = sorted(timeline, key=lambda s: float(s["start_s"]))
        timeline = ordered[:MAX_SPANS]
        start = float(ordered[0]["start_s"])
        cut = {
            "spans_shown": MAX_SPANS,
            "spans_left_out": len(ordered) - MAX_SPANS,
            "shown_until_s": float(ordered[MAX_SPANS]["start_s"]) - start,
            "iteration_s": max(float(s["end_s"]) for s in ordered) - start,
        }
    result = replace(result, timeline=tuple(timeline))
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
    traced = sorted({int(s["worker"]) for s in result.timeline if s["worker"] is not None})
    # Timed collectives are no messages: their track says so.
    sends = "collectives" if any(s["kind"] == "collective" for s in result.timeline) else "sends"
    for w in traced:
        events.append(
            {"ph": "M", "pid": WORKERS, "tid": 2 * w, "name": "thread_name", "args": {"name": f"worker {w} compute"}}
        )
        events.append(
            {
                "ph": "M",
                "pid": WORKERS,
                "tid": 2 * w + 1,
                "name": "thread_name",
                "args": {"name": f"worker {w} {sends}"},
            }
        )
    servers = sorted({int(s["server"]) for s in result.timeline if s.get("server") is not None})
    if servers:
        events.append({"ph": "M", "pid": SERVERS, "name": "process_name", "args": {"name": "parameter servers"}})
    for p in servers:
        events.append(
            {"ph": "M", "pid": SERVERS, "tid": p, "name": "thread_name", "args": {"name": f"server {p} sends"}}
        )
    for i, s in enumerate(result.timeline):
        start, end = us(s["start_s"]), us(s["end_s"])
        if s["kind"] == "compute":
            events.append(
                {
                    "ph": "X",
                    "pid": WORKERS,
                    "tid": 2 * int(s["worker"]),
                    "name": s["name"],
                    "cat": "compute",
                    "ts": start,
                    "dur": end - start,
                }
            )
            continue
        if s["link"] is not None:
            pid, tid = LINKS, link_tid[str(s["link"])]
        elif s["worker"] is not None:
            pid, tid = WORKERS, 2 * int(s["worker"]) + 1
        elif s.get("server") is not None:
            pid, tid = SERVERS, int(s["server"])
        else:
            continue  # no sender known: shown on the links it crosses
        args = {"bytes": s["bytes"]}
        cat = "flow"
        if s["kind"] == "collective":
            cat = "collective"
            args.update(s.get("nccl") or {})
        # Messages overlap on a track, so they are async slices (which may overlap).
        events.append(
            {"ph": "b", "pid": pid, "tid": tid, "id": i, "cat": cat, "name": s["name"], "ts": start, "args": args}
        )
        events.append({"ph": "e", "pid": pid, "tid": tid, "id": i, "cat": cat, "name": s["name"], "ts": end})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "metadata": {
            "model": result.model,
            "workers": result.workers,
            "strategy": result.strategy,
            # Where the trace stops short of the iteration (MAX_SPANS): what it left out.
            **({"cut": cut} if cut is not None else {}),
        },
    }


_HOST = re.compile(r"(?<![A-Za-z0-9])h(\d+)")


def shown_in_trace(span: dict[str, Any], workers: int) -> bool:
    """Whether a span belongs to one of the first ``workers`` workers or their hosts' links."""
    if span["worker"] is not None:
        return int(span["worker"]) < workers
    if span["link"] is None:
        return True
    return any(int(h) < workers for h in _HOST.findall(str(span["link"])))


def write_trace(
    path: str | Path, result: Result, workers: Optional[int] = None
) -> tuple[int, int, Optional[dict[str, Any]]]:
    """Writes the trace atomically (of ``workers`` workers, see :func:`chrome_trace`),
    gzip-compressed where ``path`` ends in ``.gz`` (Perfetto and chrome://tracing open
    either); returns its size in bytes as written, its number of events, and where
    :data:`MAX_SPANS` cut it short what it left out (the trace's ``metadata.cut``; None when
    it is whole)."""
    trace = chrome_trace(result, workers)
    data = json.dumps(trace).encode()
    if Path(path).suffix == ".gz":
        data = gzip.compress(data, mtime=0)  # mtime 0: the same run writes the same bytes
    write_atomic(Path(path), data, field="trace")
    return len(data), len(trace["traceEvents"]), trace["metadata"].get("cut")
