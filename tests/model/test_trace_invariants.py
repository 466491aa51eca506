"""The rules a Chrome trace keeps (deuteron.model.trace_invariants): nesting within a lane,
durations, both ends of every flow; each broken on purpose in a written file and flagged, each
kept and passed (issue 39)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deuteron.formats import chrome_trace
from deuteron.model.trace import TraceEvent
from deuteron.model.trace_invariants import TOLERANCE_US, audit_trace, check_trace


def _written(tmp_path: Path, events: list[dict[str, Any]], name: str = "t.chrome_trace") -> list[Any]:
    """Events written as a trace file and read back raw, as the checker reads a user's file."""
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return json.loads(path.read_text())["traceEvents"]  # type: ignore[no-any-return]


def _x(name: str, ts: float, dur: float, tid: int = 1, pid: int = 0) -> dict[str, Any]:
    return {"name": name, "ph": "X", "ts": ts, "dur": dur, "pid": pid, "tid": tid}


def test_a_trace_deuteron_writes_keeps_every_rule(tmp_path: Path) -> None:
    """Scopes nested on a thread, a kernel on its stream lane with a launch tick and flow arrow."""
    events = [
        TraceEvent("scope", "step", 0, 10_000, lane=1),
        TraceEvent("scope", "forward", 1_000, 6_000, lane=1),
        TraceEvent("kernel", "k", 7_000, 9_000, lane=100, launched_from=(1, 2_000)),
        TraceEvent("kernel", "k2", 9_500, 9_900, lane=100, launched_from=(1, 5_000), proton_flow=True),
    ]
    path = chrome_trace.write(events, tmp_path / "deuteron.chrome_trace", lane_names={1: "main"})
    audit = audit_trace(json.loads(path.read_text())["traceEvents"])
    assert audit.violations == []
    assert [str(r) for r in audit.rules] == ["durations", "nesting (tolerance 1 µs)", "flows"]
    assert (audit.events, audit.lanes, audit.flows) == (5, 2, 2)  # the launch tick is an event too


@pytest.mark.broken_profile
def test_two_events_of_one_lane_that_overlap_without_nesting_are_flagged(tmp_path: Path) -> None:
    events = _written(tmp_path, [_x("a", 0, 20), _x("b", 10, 15), _x("c", 10, 5, tid=2)])
    assert [str(v) for v in check_trace(events)] == [
        "nesting: lane (pid 0, tid 1): ts+dur 'b' [10 µs, 25 µs] starts inside 'a' [0 µs, 20 µs] and ends "
        "5 µs after it (tolerance 1 µs)"
    ]


def test_nested_and_disjoint_events_pass_and_rounding_within_a_microsecond_is_tolerated(
    tmp_path: Path,
) -> None:
    events = [
        _x("step", 0, 100),
        _x("fwd", 0, 40),  # starts with its parent
        _x("op", 10, 30.5),  # ends 0.5 µs past fwd: rounding
        _x("bwd", 39.6, 60),  # starts 0.4 µs before fwd ends: rounding, then disjoint
        _x("late_parent_start", 100.5, 10),  # after step, disjoint
        _x("child_rounded_early", 100.2, 5),  # begins 0.3 µs before its parent
    ]
    assert check_trace(_written(tmp_path, events)) == []
    assert TOLERANCE_US == 1.0


@pytest.mark.broken_profile
def test_a_negative_duration_is_flagged(tmp_path: Path) -> None:
    events = _written(tmp_path, [_x("k", 5, -2, tid=7)])
    assert [str(v) for v in check_trace(events)] == [
        "durations: lane (pid 0, tid 7): dur of 'k' at 5 µs is -2, below 0"
    ]


@pytest.mark.broken_profile
def test_a_flow_with_one_end_is_flagged(tmp_path: Path) -> None:
    flow = {"name": "launch", "cat": "launch", "pid": 0, "tid": 1, "ts": 1}
    events = [
        {**flow, "ph": "s", "id": 7},  # no finish
        {**flow, "ph": "f", "id": 8, "bp": "e"},  # no start
        {**flow, "ph": "s", "id": 9},
        {**flow, "ph": "f", "id": 9, "cat": "flow"},  # same id, another category: not its end
        {**flow, "ph": "s", "id": 10},
        {**flow, "ph": "t", "id": 10},  # a step ends it
    ]
    assert sorted(str(v) for v in check_trace(_written(tmp_path, events))) == [
        "flows: flow 7: cat 'launch' starts (1) but never finishes",
        "flows: flow 8: cat 'launch' finishes (1) but never starts",
        "flows: flow 9: cat 'flow' finishes (1) but never starts",
        "flows: flow 9: cat 'launch' starts (1) but never finishes",
    ]


def test_a_trace_without_flows_says_the_rule_did_not_apply() -> None:
    assert [str(r) for r in audit_trace([_x("a", 0, 1)]).rules][-1] == "flows n/a (no flow events)"
