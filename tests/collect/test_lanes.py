"""Proton's trace (``start(data="trace")``) as Triton 3.9's Proton writes it: one event per scope,
a ``metric`` event (named by its metrics) for a scope given any, kernels with a ``launch->kernel``
arrow each. The expected names and values below are what Triton 3.9's libproton wrote for the
same scopes (its instrumentation profiler, which runs without a GPU)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

import deuteron
from deuteron.collect.lanes import graph_scope_events, proton_value
from deuteron.model.trace import TraceEvent
from tests.helpers import kernels as k


def _trace(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["traceEvents"]  # type: ignore[no-any-return]


def test_values_print_as_protons() -> None:
    assert [proton_value(v) for v in (1.0, 2, -3, 1e20, 1e-9, [1.5, 2.0], [1, 2, 3], "x")] == [
        "1.000000", "2", "-3", "100000000000000000000.000000", "0.000000", "[1.5,2]", "[1,2,3]", "x",
    ]  # fmt: skip


def test_scopes_are_scope_or_metric_events_and_nothing_else_without_kernels(tmp_path: Path) -> None:
    deuteron.start(str(tmp_path / "t"), backend="interpreter", data="trace")
    deuteron.enter_scope("a", metrics={"m": 1.0, "k": 2})
    with deuteron.scope("b"):
        pass
    deuteron.enter_scope("c", metrics={"v": [1, 2, 3]})
    deuteron.exit_scope(metrics={"e (exc)": 3.5, "v": [1, 1, 1]})  # added to what it was given
    deuteron.exit_scope()
    with deuteron.cpu_timed_scope("d"):
        pass
    deuteron.finalize()
    events = _trace(tmp_path / "t.chrome_trace")
    assert [(e["cat"], e["args"]["call_stack"]) for e in events] == [
        ("metric", ["ROOT", "a"]), ("scope", ["ROOT", "a", "b"]), ("metric", ["ROOT", "a", "c"]),
        ("metric", ["ROOT", "d"]),
    ]  # fmt: skip
    a, b, c, d = events
    assert a["name"] == "a: <k, 2>, <m, 1.000000>" and a["args"]["metrics"] == {"k": "2", "m": "1.000000"}
    assert b["name"] == "b" and set(b["args"]) == {"call_stack"}
    assert c["name"] == "c: <e (exc), 3.500000>, <v, [2,3,4]>"
    (cpu_time,) = d["args"]["metrics"].items()  # what Proton's cpu_timed_scope adds, by its name
    assert cpu_time[0] == "cpu_time (ns)(exc)" and int(cpu_time[1]) > 0
    assert {e["ph"] for e in events} == {"X"} and len({e["tid"] for e in events}) == 1
    assert a["ts"] <= b["ts"] and b["ts"] + b["dur"] <= a["ts"] + a["dur"]  # the scope's span


def test_each_kernel_has_its_launch_arrow_and_the_last_kernel_comes_last(tmp_path: Path) -> None:
    deuteron.start(str(tmp_path / "k"), backend="interpreter", data="trace")
    with deuteron.scope("outer", metrics={"m1": 1.0}):
        k.add(torch.rand(8), torch.rand(8))
        with deuteron.scope("inner"):
            k.add(torch.rand(8), torch.rand(8))
    deuteron.finalize()
    events = _trace(tmp_path / "k.chrome_trace")
    kernels = [e for e in events if e["cat"] == "kernel"]
    flows = [e for e in events if e["cat"] == "flow"]
    assert [e["args"]["call_stack"] for e in kernels] == [
        ["ROOT", "outer", "add_kernel"], ["ROOT", "outer", "inner", "add_kernel"],
    ]  # fmt: skip
    assert [e["ph"] for e in flows] == ["s", "f", "s", "f"]
    assert all(e["name"] == "launch->kernel" and e["bp"] == "e" for e in flows)
    starts = {e["id"]: e for e in flows if e["ph"] == "s"}
    ends = {e["id"]: e for e in flows if e["ph"] == "f"}
    assert set(starts) == set(ends) and len(starts) == 2
    metric = next(e for e in events if e["cat"] == "metric")
    assert metric["name"] == "outer: <m1, 1.000000>"
    assert all(e["tid"] == metric["tid"] for e in starts.values())  # launched from the scope's thread
    assert all(end["ts"] == kernel["ts"] for end, kernel in zip(ends.values(), kernels, strict=True))
    assert events[-1] == kernels[-1]


def test_our_own_trace_keeps_its_shape_and_shows_a_scopes_metrics(tmp_path: Path) -> None:
    with deuteron.profile(str(tmp_path / "ours"), backend="interpreter", output_format="chrome_trace"):
        with deuteron.scope("s", {"flops": 4}):
            k.add(torch.rand(8), torch.rand(8))
    events = _trace(tmp_path / "ours.chrome_trace")
    scope = next(e for e in events if e.get("cat") == "scope")
    assert scope["args"]["metrics"] == {"flops": 4.0}
    assert not any(e.get("cat") in ("metric", "flow") for e in events)


def _replayed(name: str, stack: tuple[str, ...], start: int, end: int, stream: int = 7) -> TraceEvent:
    return TraceEvent("kernel", name, start, end, 10_000, ("ROOT", "test0", "<captured_at>", *stack),
                      {"device": 0, "stream": stream})  # fmt: skip


def test_graph_replays_rebuild_the_captured_scopes_per_stream() -> None:
    """Proton's ``Graph: Stream N`` lanes: the scopes a graph was captured in, spanning their
    replayed kernels; launch-metadata kernels open the scopes above their bookkeeping frames only;
    kernels not replayed from a graph add nothing."""
    kernels = [
        _replayed("<metric>", ("a", "b", "c", "__proton_launch_metadata", "<metric>"), 100, 110),
        _replayed("foo", ("a", "b", "c", "foo"), 120, 150),
        _replayed("foo", ("a", "b", "foo"), 160, 170),
        _replayed("foo", ("a", "foo"), 180, 200),
        _replayed("bar", ("x", "bar"), 300, 310, stream=9),
        TraceEvent("kernel", "plain", 0, 5, 10_001, ("ROOT", "plain"), {"device": 0, "stream": 7}),
    ]
    events, names = graph_scope_events(kernels)
    assert names == {30_000: "Graph: Stream 7", 30_001: "Graph: Stream 9"}
    spans = {(e.lane, e.call_stack[3:]): (e.start_ns, e.end_ns) for e in events}
    assert spans == {
        (30_000, ()): (100, 200),  # <captured_at>
        (30_000, ("a",)): (100, 200),
        (30_000, ("a", "b")): (100, 170),
        (30_000, ("a", "b", "c")): (100, 150),
        (30_001, ()): (300, 310),
        (30_001, ("x",)): (300, 310),
    }
    assert all(e.category == "scope" and e.name == e.call_stack[-1] for e in events)
    assert graph_scope_events(kernels[-1:]) == ([], {})
