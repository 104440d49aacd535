"""The timeline of a folded run (over ``UNFOLD_UP_TO`` workers) says that it is one: it said
"Workers 0–7 of 256 shown." over a chart of worker 0 alone, whose "receiving" rows, labelled
workers 1, 2, 4, ... 64, held only worker 0's messages to those hosts."""

from __future__ import annotations

from typing import Any, Optional

import pytest
from tensorwire.report import build_report, figures, timeline
from tensorwire.sweep import run_grid

needs_timeline = pytest.mark.skipif(not timeline.supported(), reason="this build of the core records no timeline")

FOLDED_NOTE = "Worker 0 of 256: the run folded ranks that behave alike and simulated only this one."


def _rows(workers: int) -> list[dict[str, Any]]:
    return run_grid("resnet50", str(workers), "25Gbps", "halving-doubling", jobs=1)


def _lanes(fig: Any) -> dict[str, set[str]]:
    """The rows each lane draws in (compute, sending, receiving)."""
    return {t.name: set(t.y) for t in fig.data}


def _span(worker: Optional[int], link: Optional[str] = None, kind: str = "compute") -> dict[str, Any]:
    return {"kind": kind, "worker": worker, "link": link, "name": "x", "start_s": 0.0, "end_s": 1.0, "bytes": 1.0}


@needs_timeline
def test_a_folded_run_shows_worker_0_and_says_the_run_was_folded() -> None:
    rows = _rows(timeline.UNFOLD_UP_TO * 2)
    spans = timeline.record(rows[0])
    assert isinstance(spans, list)
    fig, note = figures.timeline(spans, 256, "t")
    assert note == FOLDED_NOTE
    assert list(fig.layout.yaxis.categoryarray) == ["worker 0"]
    assert set().union(*_lanes(fig).values()) == {"worker 0"}, "rows of hosts that only received worker 0's messages"
    page = build_report(rows)
    assert FOLDED_NOTE in page and "Workers 0–7 of 256" not in page


@needs_timeline
def test_an_unfolded_run_keeps_its_note() -> None:
    spans = timeline.record(_rows(16)[0])
    assert isinstance(spans, list)
    fig, note = figures.timeline(spans, 16, "t")
    assert note == "Workers 0–7 of 16 shown."
    shown = [f"worker {w}" for w in range(8)]
    assert list(fig.layout.yaxis.categoryarray) == shown[::-1]
    assert _lanes(fig) == {"compute": set(shown), "sending": set(shown), "receiving": set(shown)}


def test_a_folded_run_of_several_representatives_names_them() -> None:
    # Workers 0 and 4 simulated; worker 0's messages reach hosts 1 and 4.
    spans = [_span(0), _span(4), _span(None, "h0->sw", "flow"), _span(None, "sw->h1", "flow")]
    spans.append(_span(None, "sw->h4", "flow"))
    fig, note = figures.timeline(spans, 16, "t")
    assert note == "Workers 0, 4 of 16: the run folded ranks that behave alike and simulated only these."
    assert list(fig.layout.yaxis.categoryarray) == ["worker 4", "worker 0"]
    # More representatives than rows: the rows drawn, and how many there were.
    fig, note = figures.timeline([_span(w) for w in range(12)], 256, "t")
    assert note == "Workers 0-7 of 256: the run folded ranks that behave alike and simulated 12."


def test_every_worker_with_spans_is_not_a_folded_run() -> None:
    fig, note = figures.timeline([_span(w) for w in range(4)], 4, "t")
    assert note == "" and len(fig.layout.yaxis.categoryarray) == 4
