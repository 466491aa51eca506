"""The timeline's lanes for the web UI: which kind each lane is (thread, GPU stream, or a lane
inside a kernel holding ``pl.scope`` spans), what an intra lane's name says, and the display order
the page relies on (threads, streams, then kernel by kernel, CTA by CTA, warp by warp)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deuteron.formats import chrome_trace
from deuteron.render.web.data import WebData
from deuteron.render.web.packed import unpack
from deuteron.render.web.timeline import intra_lane, lane_kinds, trace_ref


def _write(path: Path, events: list[dict[str, Any]], names: dict[int, str]) -> Path:
    meta = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": t, "args": {"name": n}} for t, n in names.items()
    ]
    path.write_text(json.dumps({"traceEvents": meta + events}))
    return path


def _x(name: str, cat: str, tid: int, ts: float, dur: float = 1.0) -> dict[str, Any]:
    return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


@pytest.mark.parametrize(
    ("label", "want"),
    [
        ("three Core124 CTA0 · warp 1", ("three", 0, 124, "warp", 1)),
        ("three Core7 CTA63 · warp group 2", ("three", 63, 7, "warp group", 2)),
        ("my kernel Core1 CTA10 · warp 3", ("my kernel", 10, 1, "warp", 3)),
        ("scoped_add · program 3", ("scoped_add", None, None, "program", 3)),
        ("ns::k<int> · program 12", ("ns::k<int>", None, None, "program", 12)),
        ("warp 1", ("warp 1", None, None, "", None)),  # Proton's own thread name: nothing more known
        ("", ("lane 5", None, None, "", None)),
    ],
)
def test_an_intra_lanes_name_says_kernel_cta_sm_and_unit(label: str, want: tuple[Any, ...]) -> None:
    got = intra_lane(label, "lane 5")
    assert (got["kernel"], got["cta"], got["sm"], got["unit"], got["index"]) == want


def test_lanes_of_only_intra_spans_are_their_own_kind(tmp_path: Path) -> None:
    events = [
        _x("step", "python", 0, 0, 100),
        _x("k", "kernel", 0, 1, 10),  # the interpreter's kernel on a thread with other spans: a thread
        _x("k", "kernel", 10000, 2, 10),
        _x("load", "intra", 20000, 3),
        _x("load", "intra", 20001, 3),
        _x("odd", "python", 20001, 5),  # a lane mixing intra spans with others stays a thread
    ]
    cols = chrome_trace.read_columns(_write(tmp_path / "t.json", events, {}))
    assert lane_kinds(cols) == ["thread", "stream", "intra", "thread"]


def test_intra_lanes_come_after_streams_kernel_by_kernel_cta_then_warp_numerically(tmp_path: Path) -> None:
    names = {0: "main thread", 10000: "GPU 0 stream 7"}
    # Lanes first seen out of order: CTA 10 before CTA 2, warp 1 before warp 0, kernel b between.
    seen = [("a", 10, 1), ("b", 0, 0), ("a", 2, 1), ("a", 2, 0), ("a", 10, 0), ("b", 1, 0)]
    events = []
    for k, (kernel, cta, warp) in enumerate(seen):
        tid = 20000 + k
        names[tid] = f"{kernel} Core{100 + cta} CTA{cta} · warp {warp}"
        events.append(_x("load", "intra", tid, 1 + k))
    events += [_x("k", "kernel", 10000, 0.5, 20), _x("step", "python", 0, 0, 30)]
    programs = {20100: "c · program 10", 20101: "c · program 9"}
    names.update(programs)
    events += [_x("work", "intra", tid, 40 + k) for k, tid in enumerate(programs)]
    cols = chrome_trace.read_columns(_write(tmp_path / "t.json", events, names))
    ref, order = trace_ref(cols, "t.json", "/api/trace/0.bin")
    assert [lane["name"] for lane in ref["lanes"]] == [
        "main thread",
        "GPU 0 stream 7",
        "a Core102 CTA2 · warp 0",
        "a Core102 CTA2 · warp 1",
        "a Core110 CTA10 · warp 0",
        "a Core110 CTA10 · warp 1",
        "b Core100 CTA0 · warp 0",
        "b Core101 CTA1 · warp 0",
        "c · program 9",
        "c · program 10",
    ]
    assert [lane["kind"] for lane in ref["lanes"]] == ["thread", "stream"] + ["intra"] * 8
    assert "intra" not in ref["lanes"][0] and "intra" not in ref["lanes"][1]
    assert ref["lanes"][2]["intra"] == {"kernel": "a", "cta": 2, "sm": 102, "unit": "warp", "index": 0}
    assert ref["lanes"][9]["intra"] == {
        "kernel": "c",
        "cta": None,
        "sm": None,
        "unit": "program",
        "index": 10,
    }
    assert [cols.lanes[i][2] for i in order] == [lane["name"] for lane in ref["lanes"]]


def test_packed_events_name_lanes_in_display_order(tmp_path: Path) -> None:
    names = {20000: "k Core3 CTA1 · warp 0", 20001: "k Core2 CTA0 · warp 0", 0: "main thread"}
    events = [_x("load", "intra", 20000, 0), _x("load", "intra", 20001, 1), _x("step", "python", 0, 2)]
    data = WebData()
    data.add_file(str(_write(tmp_path / "t.json", events, names)))
    ref = data.index()["traces"][0]
    packed = unpack(data.answer(ref["events"])[1])
    lanes = [ref["lanes"][lane]["name"] for lane in packed["lane"].tolist()]
    assert lanes == ["k Core3 CTA1 · warp 0", "k Core2 CTA0 · warp 0", "main thread"]
    assert [lane["name"] for lane in ref["lanes"]] == [
        "main thread",
        "k Core2 CTA0 · warp 0",
        "k Core3 CTA1 · warp 0",
    ]


def test_a_trace_without_intra_spans_keeps_its_order(tmp_path: Path) -> None:
    events = [_x("k", "kernel", 10000, 0), _x("step", "python", 0, 1), _x("k", "kernel", 10001, 2)]
    cols = chrome_trace.read_columns(_write(tmp_path / "t.json", events, {}))
    ref, order = trace_ref(cols, "t.json", "u")
    assert [lane["kind"] for lane in ref["lanes"]] == ["thread", "stream", "stream"]
    assert order == [1, 0, 2]


def test_each_events_call_stack_and_args_reach_the_page_interned(tmp_path: Path) -> None:
    """``args.call_stack`` and the other args ride as ids into two tables, in the events' order;
    a hostile or odd value is shown as text, never an error."""
    events = [
        {
            **_x("k", "kernel", 7, 5),
            "args": {"call_stack": ["ROOT", "step", "k"], "device": 0, "grid": [4, 1, 1]},
        },
        {**_x("step", "python", 0, 0, 100), "args": {"call_stack": ["ROOT", "step"]}},
        {
            **_x("k", "kernel", 7, 9),
            "args": {"call_stack": ["ROOT", "step", "k"], "device": 0, "grid": [4, 1, 1]},
        },
        {
            **_x("odd", "python", 0, 20),
            "args": {"call_stack": [1, None], "v": {"deep": [1.5, "x"]}, "b": True},
        },
        _x("bare", "python", 0, 30),
        {**_x("bad", "python", 0, 40), "args": {"call_stack": "ROOT"}},
    ]
    cols = chrome_trace.read_columns(_write(tmp_path / "t.json", events, {}))
    assert cols.stacks == [(), ("ROOT", "step", "k"), ("ROOT", "step"), ("1", "None")]  # file order
    assert cols.arg_sets == [
        (),
        (("device", "0"), ("grid", "[4,1,1]")),
        (("v", '{"deep":[1.5,"x"]}'), ("b", "true")),
    ]
    # By start: step, k, k, odd, bare, bad.
    assert cols.stack.tolist() == [2, 1, 1, 3, 0, 0]
    assert cols.args.tolist() == [0, 1, 1, 2, 0, 0]
    data = WebData()
    data.add_file(str(tmp_path / "t.json"))
    ref = data.index()["traces"][0]
    assert ref["stacks"][1] == ["ROOT", "step", "k"] and ref["arg_sets"][1] == [
        ["device", "0"],
        ["grid", "[4,1,1]"],
    ]
    packed = unpack(data.answer(ref["events"])[1])
    order = packed["name"].tolist()
    k = order.index(ref["names"].index("k"))
    assert ref["stacks"][int(packed["stack"][k])][-1] == "k"
    assert ref["arg_sets"][int(packed["args"][k])][0] == ["device", "0"]
