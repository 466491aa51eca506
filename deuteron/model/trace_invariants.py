"""The rules a Chrome trace keeps (``deuteron run --trace``, Proton's ``.chrome_trace``), and a
checker that names each break: the trace side of :mod:`.invariants` (issue 39).

Why: the timeline draws each lane (a ``(pid, tid)`` pair: a thread, a GPU stream, a warp of a
kernel) as a stack of complete events, a child below the span it ran in, and an arrow from each
launch to its kernel. Two events of one lane that overlap without one holding the other cannot be
drawn as a stack (and mean two things ran at once on one thread or stream); a negative duration
is no span; a flow with one end draws no arrow, or one from nowhere. The rules:

- ``durations``: every complete event (``"ph": "X"``) has a duration of 0 or more;
- ``nesting``: within one lane, two complete events are disjoint or one holds the other (a child
  ends no later than its parent), to :data:`TOLERANCE_US` (timestamps are microseconds, rounded
  by some writers);
- ``flows``: every flow start (``"s"``) has a finish (``"f"`` or a step ``"t"``) with the same id
  and category, and every finish its start.

The checker reads the trace's raw events (the JSON list), so it judges what the file holds, not
what a reader made of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deuteron.model.invariants import Audit, Violation, number_text

TOLERANCE_US = 1.0  # how far a child may end past its parent (and start before it): µs rounding
DURATIONS, NESTING, FLOWS = "durations", "nesting", "flows"


@dataclass(frozen=True)
class _Span:
    start: float
    end: float
    name: str


@dataclass
class TraceAudit(Audit):
    """An :class:`Audit` of a trace, with what it holds (for the report's ``ok`` line)."""

    events: int = 0
    lanes: int = 0
    flows: int = 0


def _lane_key(ev: dict[str, Any]) -> tuple[str, str]:
    return str(ev.get("pid", 0))[:200], str(ev.get("tid", 0))[:200]


def _us(value: float) -> str:
    return f"{number_text(round(value, 3))} µs"


def audit_trace(events: Sequence[Any]) -> TraceAudit:
    """Every trace rule over a trace's raw event list (``traceEvents``)."""
    audit = TraceAudit()
    lanes: dict[tuple[str, str], list[_Span]] = {}
    labels: dict[tuple[str, str], str] = {}
    starts: dict[tuple[str, str], int] = {}
    finishes: dict[tuple[str, str], int] = {}
    for ev in events:
        if not isinstance(ev, dict):
            continue
        ph = ev.get("ph")
        key = _lane_key(ev)
        if ph == "M" and ev.get("name") == "thread_name" and isinstance(ev.get("args"), dict):
            labels[key] = str(ev["args"].get("name", ""))[:100]
        elif ph == "X":
            ts, dur = ev.get("ts"), ev.get("dur", 0)
            if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)):
                continue
            audit.events += 1
            name = str(ev.get("name", ""))[:200]
            if dur < 0 or not math.isfinite(dur):
                where = _lane_text(key, labels)
                text = f"of {name!r} at {_us(ts)} is {number_text(dur)}, below 0"
                audit.violations.append(Violation(DURATIONS, where, "dur", text))
                continue
            lanes.setdefault(key, []).append(_Span(float(ts), float(ts) + float(dur), name))
        elif ph in ("s", "t", "f"):
            flow_id = ev.get("id")
            if flow_id is None or isinstance(flow_id, (dict, list)):
                continue
            flow = (str(ev.get("cat", "")), str(flow_id))
            side = starts if ph == "s" else finishes
            side[flow] = side.get(flow, 0) + 1
    audit.rule(DURATIONS)
    audit.lanes = len(lanes)
    for key, spans in lanes.items():
        _nest(spans, _lane_text(key, labels), audit)
    audit.rule(NESTING, True, f"tolerance {TOLERANCE_US:g} µs")
    audit.flows = len(starts.keys() | finishes.keys())
    for (cat, flow_id), count in starts.items():
        if (cat, flow_id) not in finishes:
            audit.violations.append(
                Violation(FLOWS, f"flow {flow_id}", f"cat {cat!r}", f"starts ({count}) but never finishes")
            )
    for (cat, flow_id), count in finishes.items():
        if (cat, flow_id) not in starts:
            audit.violations.append(
                Violation(FLOWS, f"flow {flow_id}", f"cat {cat!r}", f"finishes ({count}) but never starts")
            )
    if audit.flows:
        audit.rule(FLOWS)
    else:
        audit.rule(FLOWS, False, "no flow events")
    return audit


def check_trace(events: Sequence[Any]) -> list[Violation]:
    """The violations of :func:`audit_trace`: an empty list for a trace that keeps every rule."""
    return audit_trace(events).violations


def _lane_text(key: tuple[str, str], labels: dict[tuple[str, str], str]) -> str:
    label = labels.get(key)
    return f"lane (pid {key[0]}, tid {key[1]})" + (f" {label!r}" if label else "")


def _nest(spans: list[_Span], where: str, audit: Audit) -> None:
    """One lane's events as a stack: by start (the longer first at one start), each event must end
    within the innermost open event it starts inside. An event that starts within the tolerance
    of an open one and outlasts it is that one's parent (rounded starts), not a break."""
    spans.sort(key=lambda s: (s.start, -s.end))
    open_: list[_Span] = []
    for span in spans:
        while open_ and open_[-1].end <= span.start + TOLERANCE_US:
            open_.pop()  # ended before this one began: disjoint
        while (
            open_ and span.end > open_[-1].end + TOLERANCE_US and span.start <= open_[-1].start + TOLERANCE_US
        ):
            open_.pop()  # began together (within rounding) and this one is longer: it holds that one
        if open_ and span.end > open_[-1].end + TOLERANCE_US:
            parent = open_.pop()
            text = (
                f"{span.name!r} [{_us(span.start)}, {_us(span.end)}] starts inside {parent.name!r} "
                f"[{_us(parent.start)}, {_us(parent.end)}] and ends {_us(span.end - parent.end)} after it "
                f"(tolerance {TOLERANCE_US:g} µs)"
            )
            audit.violations.append(Violation(NESTING, where, "ts+dur", text))
        open_.append(span)
