"""Hatchet JSON and Chrome traces: round trips, Proton's own files, and hostile input."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from deuteron.formats import FormatError, chrome_trace, hatchet
from deuteron.model.trace import TraceEvent
from deuteron.model.tree import KERNEL, Node, Profile
from tests.helpers import H200_TABLE, find


def _sample() -> Profile:
    p = Profile()
    p.kinds.update({"slots": "exc", "tile": "pty"})
    train = p.root.child("train")
    train.metrics.update({"flops": 1e9, "slots": 3, "tile": 64})
    kern = train.child("add_kernel", KERNEL)
    kern.metrics.update(
        {"time (ns)": 1500, "count": 3, "bytes": 3e6, "device_id": "0", "device_type": "CUDA"}
    )
    p.devices = copy.deepcopy(H200_TABLE)
    p.metadata.update({"name": "sample", "command": "python x.py", "rank": "1"})
    return p


def test_hatchet_round_trip_keeps_tree_kinds_devices_metadata(tmp_path: Path):
    original = _sample()
    path = hatchet.write(original, tmp_path / "s.hatchet")
    back = hatchet.read(path)
    assert find(back, "train").metrics == {"flops": 1e9, "slots": 3, "tile": 64}
    assert (
        find(back, "train", "add_kernel").metrics
        == original.root.child("train").child("add_kernel", KERNEL).metrics
    )
    assert find(back, "train", "add_kernel").type == "kernel"
    assert back.kind("slots") == "exc" and back.kind("tile") == "pty" and back.kind("flops") == "inc"
    assert back.devices == original.devices
    assert back.metadata == original.metadata
    # the metadata frame does not come back as a node
    assert [c.name for c in back.root.children.values()] == ["train"]


def test_written_file_has_protons_layout(tmp_path: Path):
    data = json.loads(hatchet.write(_sample(), tmp_path / "s.hatchet").read_text())
    assert isinstance(data, list) and len(data) == 2
    root = data[0]
    assert root["frame"] == {"name": "ROOT", "type": "function"}
    for column in ("time (ns)", "count", "bytes", "flops"):
        assert root["metrics"][column] == 0  # Proton pads the root so every column exists
    assert data[1]["CUDA"]["0"]["arch"] == "90"


@pytest.mark.parametrize(
    "name", ["proton_shadow.hatchet", "proton_python.hatchet", "proton_shadow_hook.hatchet"]
)
def test_reads_protons_files(proton_fixtures: Path, name: str):
    prof = hatchet.read(proton_fixtures / name)
    raw = json.loads((proton_fixtures / name).read_text())
    expected_time = 0

    def total(node: dict) -> int:
        return node["metrics"].get("time (ns)", 0) + sum(total(c) for c in node["children"])

    expected_time = total(raw[0])
    assert sum(n.metrics.get("time (ns)", 0) for n in prof.root.walk()) == expected_time
    assert prof.devices["CUDA"]["0"]["num_sms"] == 132
    assert prof.kind("device_id") == "pty"
    if name != "proton_python.hatchet":
        assert find(prof, "train", "add_kernel").metrics["count"] == 12
        assert find(prof, "train").metrics["flops"] == 1e9


def test_chrome_trace_round_trip(tmp_path: Path):
    events = [
        TraceEvent("scope", "train", 1_000, 9_000, 0, ("ROOT", "train")),
        TraceEvent("kernel", "add_kernel", 2_000, 5_500, 0, ("ROOT", "train", "add_kernel"), {"bytes": 12}),
    ]
    path = chrome_trace.write(events, tmp_path / "t.chrome_trace", pid=7)
    back = chrome_trace.read(path)
    assert [(e.name, e.category, e.end_ns - e.start_ns, e.call_stack, e.args) for e in back] == [
        ("train", "scope", 8000, ("ROOT", "train"), {}),
        ("add_kernel", "kernel", 3500, ("ROOT", "train", "add_kernel"), {"bytes": 12}),
    ]
    assert back[1].start_ns - back[0].start_ns == 1000
    raw = json.loads(path.read_text())
    assert all(e["ph"] == "X" and e["pid"] == 7 for e in raw["traceEvents"])


def test_reads_protons_trace(proton_fixtures: Path):
    events = chrome_trace.read(proton_fixtures / "proton_trace.chrome_trace")
    assert len(events) == 104
    assert events[0].name == "add_kernel" and events[0].call_stack == ("ROOT", "train", "add_kernel")


BAD_FILES = {
    "missing": (None, "no such file"),
    "truncated": ('[{"frame": {"name": "ROOT"}, "metrics": {', "not valid JSON"),
    "object_not_list": ('{"frame": {}}', "not a hatchet profile"),
    "empty_list": ("[]", "not a hatchet profile"),
    "no_frame_name": ('[{"frame": {}, "metrics": {}, "children": []}]', "has no frame name"),
    "children_not_list": ('[{"frame": {"name": "R"}, "metrics": {}, "children": {}}]', "must be a list"),
    "metrics_not_object": ('[{"frame": {"name": "R"}, "metrics": [], "children": []}]', "must be an object"),
    "metric_is_list": (
        '[{"frame": {"name": "R"}, "metrics": {"t": [1]}, "children": []}]',
        "not a number or string",
    ),
    "bad_devices": ('[{"frame": {"name": "R"}, "metrics": {}, "children": []}, []]', "device table"),
    "device_row_not_object": (
        '[{"frame": {"name": "R"}, "metrics": {}, "children": []}, {"CUDA": {"0": 1}}]',
        "must map device ids",
    ),
    "binary": (b"\x80\x81\x82", "not a text file"),
    "child_not_object": ('[{"frame": {"name": "R"}, "metrics": {}, "children": [3]}]', "is not an object"),
    "damaged_metadata": (
        '[{"frame": {"name": "R"}, "metrics": {}, "children": [{"frame": {"name": '
        '"deuteron:metadata", "type": "metadata", "deuteron": "{oops"}}]}]',
        "metadata",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_hatchet_files_raise_one_clear_error(tmp_path: Path, case: str):
    content, message = BAD_FILES[case]
    path = tmp_path / f"{case}.hatchet"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(FormatError, match=message) as info:
        hatchet.read(path)
    assert str(path) in str(info.value)


def test_bad_trace_raises(tmp_path: Path):
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": "k"}]}')
    with pytest.raises(FormatError, match="lacks a name, ts or dur"):
        chrome_trace.read(path)
    path.write_text('{"events": 1}')
    with pytest.raises(FormatError, match="not a Chrome trace"):
        chrome_trace.read(path)


def test_deep_tree_round_trips_without_recursion(tmp_path: Path):
    p = Profile()
    node = p.root
    for i in range(800):  # deeper than any real call path; our own tree code is iterative
        node = node.child(f"f{i}")
    node.metrics["time (ns)"] = 5
    back = hatchet.read(hatchet.write(p, tmp_path / "deep.hatchet"))
    assert back.node_count() == 801
    leaf: Node = back.root
    while leaf.children:
        leaf = next(iter(leaf.children.values()))
    assert leaf.metrics == {"time (ns)": 5}
