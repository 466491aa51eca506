"""What Deuteron writes for Perfetto, counted as Perfetto reads it.

Perfetto's own checker is its trace processor: ``perfetto.trace_processor.TraceProcessor`` (pip
package ``perfetto``, 0.59.1) runs a ``trace_processor_shell`` binary that it downloads on first
use from commondatastorage.googleapis.com. On the machine these tests were written on that
download fails (no route to the internet: curl exit 6), and CI may have none either. So the
export is checked against the format definitions the same package ships instead:

- the Perfetto protobuf export (:mod:`deuteron.formats.perfetto_trace`) is decoded with the
  package's compiled ``perfetto_trace.proto`` (``perfetto.protos.perfetto.trace.perfetto_trace_pb2``):
  every packet must parse, every slice begin have its end on the same track in nesting order,
  every interned name resolve, and the slices, names and arrows counted must be what Deuteron
  wrote;
- the Chrome JSON of ``deuteron run --trace`` is checked against the JSON trace format's rules as
  Perfetto documents them (complete events need ``ts``, ``dur``, ``pid``, ``tid``; flows pair
  ``s`` and ``f`` by ``id``; ``baseTimeNanoseconds`` as Kineto and Proton write it), and its
  events counted against what was written.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import pytest

from deuteron.formats import OutputError, chrome_trace, perfetto_trace
from deuteron.model.trace import TraceEvent
from deuteron.view import rank_traces
from tests.helpers.cli import run_cli
from tests.helpers.paths import FIXTURES_DIR
from tests.helpers.rank_traces import unpacked

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")


def _decode(path: Path) -> dict[str, object]:
    """What Perfetto's protos read: tracks, and per track its slices as (begin, end, name, category)
    rebuilt from begin/end packets (an end must close the innermost open slice of its track)."""
    trace = pb.Trace.FromString(path.read_bytes())
    tracks: dict[int, str] = {}
    names: dict[int, str] = {}
    cats: dict[int, str] = {}
    notes: dict[int, str] = {}
    values: dict[int, str] = {}
    flows_out: list[int] = []
    flows_in: list[int] = []
    open_: dict[int, list[tuple[int, str, str]]] = collections.defaultdict(list)
    slices: list[tuple[int, int, int, str, str]] = []
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            tracks[packet.track_descriptor.uuid] = packet.track_descriptor.name
        if packet.HasField("interned_data"):
            d = packet.interned_data
            names.update({e.iid: e.name for e in d.event_names})
            cats.update({e.iid: e.name for e in d.event_categories})
            notes.update({e.iid: e.name for e in d.debug_annotation_names})
            values.update({e.iid: e.str.decode() for e in d.debug_annotation_string_values})
        if not packet.HasField("track_event"):
            continue
        assert packet.trusted_packet_sequence_id == perfetto_trace.SEQUENCE
        ev = packet.track_event
        assert ev.track_uuid in tracks, "a slice on a track never described"
        if ev.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            for a in ev.debug_annotations:
                assert a.name_iid in notes and a.string_value_iid in values
            flows_out.extend(ev.flow_ids)
            flows_in.extend(ev.terminating_flow_ids)
            open_[ev.track_uuid].append((packet.timestamp, names[ev.name_iid], cats[ev.category_iids[0]]))
        else:
            assert ev.type == pb.TrackEvent.TYPE_SLICE_END
            begin, name, cat = open_[ev.track_uuid].pop()  # IndexError: an end with no begin
            assert packet.timestamp >= begin
            slices.append((ev.track_uuid, begin, packet.timestamp, name, cat))
    assert not any(open_.values()), "slices begun and never ended"
    return {"tracks": tracks, "slices": slices, "flows_out": flows_out, "flows_in": flows_in}


def test_a_joined_job_exports_every_event_and_arrow(tmp_path: Path) -> None:
    folder = unpacked("ddp", tmp_path, ".chrome_trace")
    paths = sorted(str(p) for p in folder.glob("*.chrome_trace"))
    job = rank_traces.join([chrome_trace.read_columns(p) for p in paths], paths)
    out = tmp_path / "job.pftrace"
    stats = perfetto_trace.write(job.columns, out, job.lane_ranks)
    read = _decode(out)
    c = job.columns
    slices = read["slices"]
    assert isinstance(slices, list) and len(slices) == len(c.start) == stats.slices
    # The same events: names and categories counted alike, times to the nanosecond.
    assert collections.Counter(s[3] for s in slices) == collections.Counter(
        c.names[i] for i in c.name.tolist()
    )
    assert collections.Counter(s[4] for s in slices) == collections.Counter(c.cats[i] for i in c.cat.tolist())
    assert sorted(s[1] for s in slices) == sorted(np.round(c.start).astype(int).tolist())
    # Every arrow (launches and the links between ranks) leaves one slice and reaches another.
    assert stats.flows == len(c.flows) and stats.flows_left_out == 0
    assert sorted(read["flows_out"]) == sorted(read["flows_in"]) and len(read["flows_out"]) == len(c.flows)
    tracks = read["tracks"]
    assert isinstance(tracks, dict) and {"rank 0", "rank 1"} <= set(tracks.values())
    assert any(name.startswith("GPU 0 stream") for name in tracks.values())


@pytest.mark.broken_profile  # overlapping kernels on one stream, on purpose
def test_overlapping_events_of_a_lane_get_a_track_of_their_own(tmp_path: Path) -> None:
    """Two kernels of one stream that overlap without nesting (clocks of two engines): Perfetto's
    slices on one track must nest, so the second goes on an overlap track, whole."""
    events = [
        TraceEvent("kernel", "a", 0, 10_000, 7),
        TraceEvent("kernel", "b", 5_000, 15_000, 7),
        TraceEvent("kernel", "c", 6_000, 7_000, 7),
    ]
    src = chrome_trace.write(events, tmp_path / "t.chrome_trace", lane_names={7: "stream 7"})
    stats = perfetto_trace.write(chrome_trace.read_columns(src), tmp_path / "t.pftrace")
    read = _decode(tmp_path / "t.pftrace")
    assert stats.overlap_tracks == 1
    by_name = {s[3]: s for s in read["slices"]}  # type: ignore[union-attr]
    assert (by_name["b"][1], by_name["b"][2]) == (5_000, 15_000)  # not cut
    tracks = read["tracks"]
    assert isinstance(tracks, dict) and tracks[by_name["b"][0]] == "stream 7 (overlap 1)"


def test_an_unwritable_export_is_one_line(tmp_path: Path) -> None:
    c = chrome_trace.read_columns(FIXTURES_DIR / "web" / "h100_launch_bound.chrome_trace")
    with pytest.raises(OutputError, match="cannot write it"):
        perfetto_trace.write(c, tmp_path / "no" / "such" / "folder.pftrace")


def test_the_chrome_json_we_write_keeps_perfettos_rules(tmp_path: Path) -> None:
    """The trace ``deuteron run --trace`` writes: every event as Perfetto's JSON importer needs it,
    ``baseTimeNanoseconds`` where the run's wall clock is known, and the events counted back."""
    launch = TraceEvent("kernel", "gemm", 5_000, 9_000, 10_007, ("ROOT", "gemm"), launched_from=(1, 2_000))
    events = [TraceEvent("scope", "step", 1_000, 20_000, 1, ("ROOT", "step")), launch]
    other = {"rank": "0", "wall_minus_clock_ns": 1_790_000_000_000_000_000}
    path = tmp_path / "run.chrome_trace"
    path.write_text(chrome_trace.text(events, pid=42, lane_names={1: "main thread"}, other=other))
    doc = json.loads(path.read_text())
    zero = doc["otherData"]["zero_ns"]
    assert doc["baseTimeNanoseconds"] == zero + other["wall_minus_clock_ns"] and zero == 1_000
    phases = collections.Counter(e["ph"] for e in doc["traceEvents"])
    assert phases == {"M": 1, "X": 3, "s": 1, "f": 1}  # 2 events written, the launch's tick, its arrow
    for e in doc["traceEvents"]:
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and isinstance(e["name"], str)
        if e["ph"] == "X":
            assert e["ts"] >= 0 and e["dur"] >= 0
    start, end = (e for e in doc["traceEvents"] if e["ph"] in "sf")
    assert start["id"] == end["id"] and end["bp"] == "e"
    # ... and read back as Deuteron wrote it, the base time with it.
    c = chrome_trace.read_columns(path)
    assert len(c.start) == 3 and len(c.flows) == 1
    assert c.info["baseTimeNanoseconds"] == doc["baseTimeNanoseconds"]
    assert "baseTimeNanoseconds" not in chrome_trace.to_json(events)  # no wall clock: no base time


def test_serve_perfetto_writes_a_jobs_ranks_as_one_trace_and_refuses_what_is_not_one(tmp_path: Path) -> None:
    """``deuteron serve --perfetto OUT`` as a user runs it: the ranks' traces joined, every event a slice."""
    folder = unpacked("ddp", tmp_path, ".chrome_trace")
    names = sorted(p.name for p in folder.glob("*.chrome_trace"))
    proc = run_cli("serve", "--perfetto", "job.pftrace", *names, cwd=folder)
    assert proc.returncode == 0, proc.stderr
    joined = rank_traces.join([chrome_trace.read_columns(folder / n) for n in names], names)
    slices = _decode(folder / "job.pftrace")["slices"]
    assert isinstance(slices, list) and len(slices) == len(joined.columns.start)
    assert f"wrote job.pftrace ({len(slices):,} slices, " in proc.stderr
    (folder / "profile.hatchet").write_text(
        '[{"frame": {"name": "ROOT"}, "metrics": {}, "children": []}, {}]'
    )
    for words, said in (
        ([names[0], names[0]], "--perfetto joins the traces of one job's ranks; these are "),
        (["profile.hatchet"], "profile.hatchet: a profile, not a Chrome trace; --perfetto writes traces"),
        (["--html", "x.html", names[0]], "--perfetto and --html each write a file instead of serving"),
    ):
        bad = run_cli("serve", "--perfetto", "bad.pftrace", *words, cwd=folder)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
        (line,) = bad.stderr.strip().splitlines()
        assert line.startswith("deuteron: error: ") and said in line, line
    assert not (folder / "bad.pftrace").exists()
