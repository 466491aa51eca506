"""Hatchet JSON and Chrome traces: round trips, Proton's own files, and hostile input."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path

import pytest

from deuteron.formats import FormatError, chrome_trace, hatchet
from deuteron.model.trace import TraceEvent
from deuteron.model.tree import KERNEL, Node, Profile
from tests.helpers.profiles import H200_TABLE, find


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
    assert (root["frame"]["name"], root["frame"]["type"]) == ("ROOT", "function")
    # ROOT's children are only real frames; our run metadata rides in the root's frame
    real = [c.name for c in _sample().root.children.values()]
    assert [c["frame"]["name"] for c in root["children"]] == real
    meta = json.loads(root["frame"]["deuteron"])
    assert (meta["format"], meta["version"]) == ("deuteron-hatchet", 2)
    assert meta["metadata"]["name"] == "sample"
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
    "metric_is_list_of_strings": (  # a vector metric holds numbers only
        '[{"frame": {"name": "R"}, "metrics": {"t": ["a"]}, "children": []}]',
        "not a vector of at most",
    ),
    "metric_is_object": (
        '[{"frame": {"name": "R"}, "metrics": {"t": {"a": 1}}, "children": []}]',
        "not a number or string",
    ),
    "bad_devices": ('[{"frame": {"name": "R"}, "metrics": {}, "children": []}, []]', "device table"),
    "device_row_not_object": (
        '[{"frame": {"name": "R"}, "metrics": {}, "children": []}, {"CUDA": {"0": 1}}]',
        "must map device ids",
    ),
    "binary": (b"\x80\x81\x82", "not a text file"),
    "child_not_object": ('[{"frame": {"name": "R"}, "metrics": {}, "children": [3]}]', "is not an object"),
    "damaged_root_metadata": (
        '[{"frame": {"name": "R", "deuteron": "{oops"}, "metrics": {}, "children": []}]',
        "metadata",
    ),
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
    for text, said in (
        ('{"traceEvents": [{"ph": "X", "name": "k"}]}', "lacks a name, ts or dur"),
        ('{"events": 1}', "not a Chrome trace"),
    ):
        path.write_text(text)
        with pytest.raises(FormatError, match=said):
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


def test_hatchet_msgpack_is_the_same_document_and_reads_back(tmp_path: Path):
    """Proton's hatchet_msgpack: the JSON document's exact structure in msgpack, read by the same
    checked reader (``deuteron view`` takes either), at any depth."""
    import msgpack

    sample = _sample()
    as_json = json.loads(hatchet.write(sample, tmp_path / "s.hatchet").read_text())
    packed = tmp_path / "s.hatchet_msgpack"
    packed.write_bytes(hatchet.to_msgpack(sample))
    assert msgpack.unpackb(packed.read_bytes(), raw=False, strict_map_key=False) == as_json
    back = hatchet.read(packed)
    assert find(back, "train", "add_kernel").metrics["count"] == 3
    assert back.kind("slots") == "exc" and back.metadata["name"] == "sample"
    assert back.devices["CUDA"]["0"]["arch"] == "90"
    deep = Profile()
    node = deep.root
    for i in range(3000):  # msgpack's own packer stops at 512 levels
        node = node.child(f"s{i}")
    node.metrics["count"] = 1
    (tmp_path / "deep.hatchet_msgpack").write_bytes(hatchet.to_msgpack(deep))
    assert sum(1 for _ in hatchet.read(tmp_path / "deep.hatchet_msgpack").root.walk()) == 3001


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x92", "not a valid hatchet msgpack file"),  # truncated
        (b"\x92\x01\x80", "not a valid hatchet msgpack file"),  # a number where the tree belongs
        (b"\x92\x81\xa8children\xdd\xff\xff\xff\xff", "not a valid hatchet msgpack file"),  # a bomb
        (b"\x91\x81\xa5frame\x81\xa4name\x01", "no frame name"),  # a frame name that is no string
        (b"\x90", "not a hatchet profile"),
    ],
)
def test_bad_msgpack_files_raise_one_clear_error(tmp_path: Path, content: bytes, message: str):
    path = tmp_path / "bad.hatchet_msgpack"
    path.write_bytes(content)
    with pytest.raises(FormatError, match=message):
        hatchet.read(path)


def test_protons_exclusive_metrics_are_not_summed_up_the_tree(tmp_path: Path):
    """In Proton's files ROOT carries (zero-padded) every inclusive column; a metric absent there,
    like a cpu_timed_scope's cpu_time, is exclusive: proton-viewer does not add it up the tree."""
    from deuteron.view.build import ViewOptions, build

    doc = [
        {
            "frame": {"name": "ROOT", "type": "function"},
            "metrics": {"time (ns)": 0, "count": 0},
            "children": [
                {
                    "frame": {"name": "outer", "type": "function"},
                    "metrics": {"cpu_time (ns)": 100},
                    "children": [
                        {"frame": {"name": "inner", "type": "function"}, "metrics": {"cpu_time (ns)": 40},
                         "children": [{"frame": {"name": "k", "type": "function"},
                                       "metrics": {"time (ns)": 5, "count": 1}, "children": []}]},
                    ],
                }
            ],
        },
        {},
    ]  # fmt: skip
    path = tmp_path / "proton.hatchet"
    path.write_text(json.dumps(doc))
    prof = hatchet.read(path)
    assert prof.kind("cpu_time (ns)") == "exc" and prof.kind("time (ns)") == "inc"
    view = build(prof, ViewOptions(metrics=["cpu_time/ns", "time/ns"]))
    outer = find(view.tree, "outer").metrics
    assert outer["cpu_time/ns"] == 100 and outer["time/ns"] == 5  # not 140; time still adds up


def test_written_files_are_as_readable_as_any_file_the_user_makes(tmp_path: Path) -> None:
    """Files go through a temporary file (mkstemp makes it 0600): renamed, they keep the umask's mode."""
    from deuteron.formats.files import atomic_write

    mask = os.umask(0o022)
    try:
        written = atomic_write(tmp_path / "p.hatchet", "[]")
    finally:
        os.umask(mask)
    assert stat.S_IMODE(written.stat().st_mode) == 0o644
