"""The two launch arrows a trace can draw: ours (a tick on the launching lane and a flow from it,
after the kernel) and Proton's (a ``launch->kernel`` flow alone, before the kernel, so that the
kernel stays the trace's last event as Proton's tests read it)."""

from __future__ import annotations

from deuteron.formats import chrome_trace
from deuteron.model.trace import TraceEvent


def _kernel(proton_flow: bool) -> TraceEvent:
    return TraceEvent("kernel", "k", 5_000, 9_000, 10_000, ("ROOT", "k"), launched_from=(0, 2_000),
                      proton_flow=proton_flow)  # fmt: skip


def test_protons_arrow_is_a_flow_pair_before_its_kernel() -> None:
    events = chrome_trace.to_json([_kernel(True)], pid=7)["traceEvents"]
    assert [(e["cat"], e["ph"]) for e in events] == [("flow", "s"), ("flow", "f"), ("kernel", "X")]
    start, end, kernel = events
    assert start["name"] == end["name"] == "launch->kernel" and start["bp"] == end["bp"] == "e"
    assert start["id"] == end["id"]
    assert (start["tid"], start["ts"]) == (0, 0.0)  # the launch, on the launching lane
    assert (end["tid"], end["ts"]) == (kernel["tid"], kernel["ts"]) == (10_000, 3.0)


def test_our_arrow_is_a_tick_and_a_flow_after_its_kernel() -> None:
    events = chrome_trace.to_json([_kernel(False)], pid=7)["traceEvents"]
    shape = [(e["cat"], e["ph"]) for e in events]
    assert shape == [("kernel", "X"), ("launch", "X"), ("launch", "s"), ("launch", "f")]
