"""The web UI's answers, checked against the readers and against brute force on real files."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

from deuteron.formats import access_record, chrome_trace, hatchet
from deuteron.model.names import display_name
from deuteron.render.web.accesses import element_index, layout
from deuteron.render.web.data import WebData, sniff
from deuteron.render.web.packed import pack, unpack
from deuteron.render.web.profile import profile_data
from deuteron.render.web.timeline import frame_names
from deuteron.view.build import ViewOptions, build
from tests.helpers.web_inputs import WebInputs


def test_packed_round_trip_keeps_every_array_aligned() -> None:
    arrays = {
        "a": np.arange(5, dtype="<f8"),
        "b": np.array([1, 2, 3], dtype="<u4"),
        "c": np.array([-1, 7], dtype="<i4"),
        "d": np.array([9], dtype="<u2"),
        "e": np.array([1, 2, 3], dtype="u1"),
    }
    data = pack(arrays)
    back = unpack(data)
    assert data[:4] == b"DTP1"
    for name, array in arrays.items():
        assert back[name].dtype == array.dtype and back[name].tolist() == array.tolist()
    with pytest.raises(TypeError, match="cannot be packed"):
        pack({"x": np.zeros(2, dtype=np.int64)})


def test_profile_columns_are_deuteron_views_numbers(web_inputs: WebInputs) -> None:
    profile = hatchet.read(web_inputs.profile)
    data = profile_data(profile, str(web_inputs.profile))
    assert data["columns"][:2] == ["time/ms", "time/%"]
    assert "tflop/s" in data["columns"] and "gbyte/s" in data["columns"]
    view = build(profile, ViewOptions(metrics=data["columns"])).tree
    names = [data["names"][i] for i in data["name_id"]]
    # Every node, every column: the value deuteron view computes (to six significant digits).
    # Pair nodes by their path of names: the flattened order is the tree's preorder.
    by_path: dict[tuple[str, ...], dict] = {}
    stack = [((view.root.name,), view.root)]
    while stack:
        path, node = stack.pop()
        by_path[path] = node.metrics
        stack.extend((path + (c.name,), c) for c in node.children.values())
    paths: list[tuple[str, ...]] = []
    for i, name in enumerate(names):
        paths.append((paths[data["parent"][i]] if i else ()) + (name,))
    assert len(set(paths)) == len(paths) == len(by_path)
    for node_id, name in enumerate(names):
        for c, column in enumerate(data["columns"]):
            want, got = by_path[paths[node_id]].get(column), data["values"][c][node_id]
            if want is None or (isinstance(want, float) and math.isnan(want)):
                assert got is None
            else:
                assert got == pytest.approx(want, rel=1e-5), (name, column)
    assert names[0] == "ROOT" and data["parent"][0] == -1
    assert all(data["parent"][i] < i for i in range(1, len(names))), "parents come first"
    assert {"add_kernel", "matmul_kernel"} <= set(names)


def test_diff_holds_both_profiles_on_the_union_of_their_nodes(web_inputs: WebInputs) -> None:
    new, old = hatchet.read(web_inputs.profile), hatchet.read(web_inputs.base)
    old.root.child("only_in_base").add("time (ns)", 5.0)
    data = profile_data(new, "new", old, "old")
    names = [data["names"][i] for i in data["name_id"]]
    gone = names.index("only_in_base")
    assert all(values[gone] is None for values in data["values"])
    assert data["base"]["values"][0][gone] == pytest.approx(5e-6)
    kernel = names.index("add_kernel")
    counts = data["columns"].index("count")
    assert data["values"][counts][kernel] == data["base"]["values"][counts][kernel] >= 1


def test_threshold_prunes_and_says_how_many(web_inputs: WebInputs) -> None:
    data = profile_data(hatchet.read(web_inputs.profile), "p", threshold=0.5)
    kept = [data["names"][i] for i in data["name_id"]]
    assert data["pruned_nodes"] > 0 and len(kept) + data["pruned_nodes"] == data["total_nodes"]
    assert all(v is None or v >= 50 for v in data["values"][1]), "time/% of every node kept ≥ 50"


def test_trace_columns_match_the_event_reader(web_inputs: WebInputs) -> None:
    events = chrome_trace.read(web_inputs.trace)
    cols = chrome_trace.read_columns(web_inputs.trace)
    assert len(cols.start) == len(events) > 0
    assert sorted(cols.names[i] for i in cols.name.tolist()) == sorted(e.name for e in events)
    assert np.all(np.diff(cols.start) >= 0)
    data = WebData()
    data.add_file(str(web_inputs.trace))
    ref = data.index()["traces"][0]
    packed = unpack(data.answer(ref["events"])[1])
    assert ref["count"] == len(packed["start"]) == len(events)
    # The interpreter runs kernels on the launching thread: that lane is a thread, not a stream.
    assert [lane["kind"] for lane in ref["lanes"]] == ["thread"]


def test_depth_counts_open_events_on_the_same_lane(tmp_path) -> None:  # type: ignore[no-untyped-def]
    trace = tmp_path / "t.json"
    trace.write_text(
        '{"traceEvents": ['
        '{"ph": "X", "name": "outer", "ts": 0, "dur": 10, "tid": 1},'
        '{"ph": "X", "name": "inner", "ts": 1, "dur": 2, "tid": 1},'
        '{"ph": "X", "name": "innermost", "ts": 1.5, "dur": 1, "tid": 1},'
        '{"ph": "X", "name": "after", "ts": 4, "dur": 1, "tid": 1},'
        '{"ph": "X", "name": "k", "cat": "kernel", "ts": 2, "dur": 1, "tid": 7},'
        '{"ph": "s", "id": 1, "cat": "launch", "ts": 1.5, "tid": 1},'
        '{"ph": "f", "id": 1, "cat": "launch", "ts": 2, "tid": 7}]}'
    )
    data = WebData()
    assert data.add_file(str(trace)) == "trace"
    ref = data.index()["traces"][0]
    packed = unpack(data.answer(ref["events"])[1])
    depth = {
        ref["names"][n]: d for n, d in zip(packed["name"].tolist(), packed["depth"].tolist(), strict=True)
    }
    assert depth == {"outer": 0, "inner": 1, "innermost": 2, "after": 1, "k": 0}
    assert [lane["kind"] for lane in ref["lanes"]] == ["thread", "stream"]
    assert packed["flow_from_lane"].tolist() == [0] and packed["flow_to_lane"].tolist() == [1]
    assert packed["flow_to_ns"].tolist() == [2000.0]


def test_mangled_stack_frames_get_the_names_the_timeline_shows() -> None:
    """frame_names: a call stack's mangled frames, short and in full, as display_names names
    events; plain frames are left out."""
    kernel = "_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_tn_align1EEvNT_6ParamsE"
    names = frame_names([("ROOT", "step", kernel), ("ROOT", "step")])
    assert names == {kernel: [display_name(kernel), display_name(kernel, full=True)]}
    assert names[kernel][0] == "Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>"
    assert names[kernel][1].startswith("void cutlass::Kernel2<")


def test_strided_views_map_back_to_their_own_index() -> None:
    # A (4, 6) float32 tensor seen transposed: shape (6, 4), strides (1, 6), 4 bytes an element.
    tensor = {"shape": [6, 4], "strides": [1, 6], "element_size": 4, "offset": 8}
    rows, cols = np.meshgrid(np.arange(6), np.arange(4), indexing="ij")
    byte = 8 + 4 * (rows.ravel() * 1 + cols.ravel() * 6)
    index, inside = element_index(byte.astype(np.int64), tensor)
    assert inside.all()
    assert index[0].tolist() == rows.ravel().tolist() and index[1].tolist() == cols.ravel().tolist()  # floats
    outside, inside2 = element_index(np.array([0, 8 + 4 * 24, 8 + 2], dtype=np.int64), tensor)
    assert inside2.tolist() == [False, False, False], "before, past and between elements"


def test_layout_bins_large_tensors_to_the_screen() -> None:
    lay = layout([3, 4096, 4096])
    assert (lay.slices, lay.bin_rows, lay.bin_cols, lay.row_step) == (3, 512, 512, 8)
    assert (layout([10]).rows, layout([10]).cols, layout([]).slices) == (1, 10, 1)


def test_access_cells_equal_brute_force_over_every_lane(web_inputs: WebInputs) -> None:
    header, accesses, offsets = access_record.read(web_inputs.record)
    data = WebData()
    data.add_file(str(web_inputs.record))
    data.add_file(str(web_inputs.report))
    index = data.index()
    assert [launch["grid"] for launch in index["records"][0]["launches"]] == [[3, 2, 2], [2, 1, 1]]
    for li, launch in enumerate(header["launches"]):
        got_launch = data.answer(f"/api/access/0/{li}.json")[1]
        for ti, tensor in enumerate(launch["tensors"]):
            view = got_launch["tensors"][ti]
            expected: Counter[tuple[int, int, int, int, int]] = Counter()
            shape, strides, size = tensor["shape"], tensor["strides"], tensor["element_size"]
            elements = {}
            for flat in np.ndindex(*shape):
                elements[tensor["offset"] + size * sum(i * s for i, s in zip(flat, strides, strict=True))] = (
                    flat
                )
            for row in accesses[accesses["launch"] == li]:
                if row["storage"] != tensor["storage"]:
                    continue
                for off in offsets[row["start"] : row["start"] + row["count"]].tolist():
                    if off not in elements:
                        continue
                    idx = elements[off]
                    s = idx[0] if len(idx) == 3 else 0
                    cell = (idx[-2] // view["row_step"]) * view["bin_cols"] + idx[-1] // view["col_step"]
                    expected[(s, int(row["program"]), cell, int(row["kind"]), int(row["site"]))] += 1
            got: Counter[tuple[int, int, int, int, int]] = Counter()
            for s, url in enumerate(view["slice_urls"]):
                cells = unpack(data.answer(url)[1])
                for p, b, k, site, n in zip(
                    *(cells[c].tolist() for c in ("program", "bin", "kind", "site", "lanes")), strict=True
                ):
                    got[(s, p, b, k, site)] += n
            assert got == expected, (li, tensor["name"])
            assert sum(got.values()) > 0


def test_findings_land_on_their_tensor_and_shape_only(web_inputs: WebInputs) -> None:
    data = WebData()
    data.add_file(str(web_inputs.record))
    data.add_file(str(web_inputs.report))
    first = data.answer("/api/access/0/0.json")[1]
    second = data.answer("/api/access/0/1.json")[1]
    src = [t for t in first["tensors"] if t["name"] == "src"][0]
    assert [f["kind"] for f in src["findings"]] == ["out-of-bounds"]
    assert all(not t["findings"] for t in second["tensors"]), "launch 1's src has another shape"
    assert "tile_copy" in next(iter(first["sources"].values()))


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty"),
        (b"hello", "not valid JSON"),
        (b'{"a": 1}', "not a file deuteron serve shows"),
        (b"PK\x03\x04garbage", "not a deuteron access record"),
        (b'{"format": "deuteron-check", "findings": 3}', "no findings list"),
        (b'{"traceEvents": [{"ph": "X", "ts": "x", "name": "a"}]}', "lacks a ts"),
    ],
)
def test_damaged_files_are_one_format_error(tmp_path, content: bytes, message: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bad"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        WebData().add_file(str(path))


def test_sniff_reads_kinds_from_content(web_inputs: WebInputs) -> None:
    kinds = [sniff(str(p)) for p in (web_inputs.profile, web_inputs.trace, web_inputs.record)]
    kinds += [sniff(str(p)) for p in (web_inputs.report, web_inputs.explain)]
    assert kinds == ["profile", "trace", "record", "check", "explain"]


def test_a_record_cut_at_its_limit_says_so(web_inputs: WebInputs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.helpers.cli import run_cli

    script = str(web_inputs.folder / "tiles.py")
    proc = run_cli("check", "--record", "small.npz", "--record-limit", "1000", script, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    data = WebData()
    data.add_file(str(tmp_path / "small.npz"))
    notes = data.index()["notes"]
    assert len(notes) == 2 and "limit of 1,000" in notes[1] and "--record-limit" in notes[1]
    assert "masked-off lanes past the record's limit" in notes[0]
    # Masked-off lanes have a budget of their own: they never take the place of accesses.
    header, accesses, _ = access_record.read(tmp_path / "small.npz")
    kept = accesses["count"].astype(np.int64)
    real, masked = int(kept[accesses["kind"] < 3].sum()), int(kept[accesses["kind"] >= 3].sum())
    assert 0 < real <= 1000 and 0 < masked <= 1000 and header["lanes"] == real + masked
    assert header["masked_lanes"] == masked
    assert (
        data.index()["records"][0]["launches"][0]["lanes"]
        + data.index()["records"][0]["launches"][1]["lanes"]
        == real
    ), "a launch's lanes are its element accesses, masked-off lanes aside"


def _frame_data(frame: str) -> dict:
    """The answers inside a notebook's iframe (srcdoc is the escaped standalone page)."""
    import html as html_module

    assert frame.startswith("<iframe srcdoc=") and 'sandbox="allow-scripts"' in frame
    page = html_module.unescape(frame.split('srcdoc="', 1)[1].split('" sandbox=', 1)[0])
    return json.loads(page.split('id="deuteron-data">', 1)[1].split("</script>", 1)[0])


def test_notebook_results_show_inline(web_inputs: WebInputs) -> None:
    import torch

    import deuteron
    from deuteron.check.api import CheckRun
    from deuteron.formats import check_json, explain_json
    from deuteron.render.notebook import explain_html
    from tests.helpers.kernels import add

    with deuteron.profile(backend="interpreter") as p, deuteron.scope("step"):
        add(torch.rand(64), torch.rand(64))
    shown = _frame_data(p._repr_html_())["/api/index.json"]["profiles"][0]
    assert {"step", "add_kernel"} <= set(shown["names"])
    report = check_json.read(web_inputs.report)
    checks = _frame_data(CheckRun(report, 1, "")._repr_html_())["/api/index.json"]["checks"]
    assert checks[0]["findings"][0]["kind"] == "out-of-bounds"
    doc = explain_json.read(web_inputs.explain)
    explains = _frame_data(explain_html(doc))
    assert explains["/api/index.json"]["explains"][0]["kernels"][0]["stage_text"]


def test_huge_trees_are_cut_to_a_limit_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from deuteron.model.tree import Node, Profile
    from deuteron.render.web import profile as web_profile
    profile = Profile()
    for i in range(50):
        child: Node = profile.root.child(f"f{i}")
        child.add("time (ns)", float(i + 1))
    monkeypatch.setattr(web_profile, "MAX_NODES", 11)
    data = web_profile.profile_data(profile, "p")
    names = [data["names"][i] for i in data["name_id"]]
    assert len(names) == 11 and data["pruned_nodes"] == 40, "ROOT and the ten largest"
    assert set(names) == {"ROOT"} | {f"f{i}" for i in range(40, 50)}
    assert data["threshold"] == pytest.approx(41 / sum(range(1, 51)))
    assert len(web_profile.profile_data(profile, "p", threshold=0.0)["parent"]) == 51


def test_the_record_keeps_masked_off_lanes_that_point_inside(web_inputs: WebInputs) -> None:
    """tile_copy masks rows r >= 40 on both launches' loads; only those of slice 0's last programs
    still point inside ``src`` (into slice 1): 2 programs × 8 rows × 16 columns."""
    header, accesses, _ = access_record.read(web_inputs.record)
    assert header["version"] == 2
    first = accesses[accesses["launch"] == 0]
    masked_loads = first[first["kind"] == 3]
    programs = [tuple(header["launches"][0]["programs"][p]) for p in masked_loads["program"].tolist()]
    assert sorted(programs) == [(2, 0, 0), (2, 1, 0)] and int(masked_loads["count"].sum()) == 256
    # The stores are masked on c < C too: the lanes past column 23 wrap into the next row.
    assert int(first[first["kind"] == 4]["count"].sum()) > 0
    second = accesses[accesses["launch"] == 1]
    assert not np.any(second["kind"] >= 3), "the transposed copy masks nothing"


def test_a_cut_drops_the_whole_subtree_even_below_frames_without_the_column() -> None:
    """A frame with no time under a frame the threshold cuts must go with it (it crashed)."""
    from deuteron.model.tree import Profile

    profile = Profile()
    a = profile.root.child("a")
    a.add("time (ns)", 1.0)
    a.child("b").add("count", 3)  # no time: its share cannot be judged
    profile.root.child("c").add("time (ns)", 1000.0)
    data = profile_data(profile, "p", threshold=0.01)
    names = [data["names"][i] for i in data["name_id"]]
    assert names == ["ROOT", "c"] and data["pruned_nodes"] == 2
