"""Level of detail (``deuteron serve`` of traces too large to send whole), on the two recorded ranks
of a DDP job (tests/fixtures/ranks) kept in a real DuckDB store: the store holds the events the
page would be sent whole; a window sends them as they are where they are a bucket wide or more,
merged per lane, depth and bucket where they are not (counted, spanning no more than their
bucket allows); the cache is opened again without reading a trace, and a changed trace is read
again; bad windows are a 400 of one line through the real server."""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deuteron.cli import main as cli_main
from deuteron.cli.serve import Progress
from deuteron.formats import chrome_trace, trace_store
from deuteron.formats.trace_store import TraceStore
from deuteron.process import parallel
from deuteron.render.web import trace_window
from deuteron.render.web.data import WebData
from deuteron.render.web.packed import unpack
from deuteron.render.web.timeline import trace_events, trace_ref
from deuteron.render.web.trace_window import BadWindow, parse_window, window
from deuteron.view import rank_traces
from deuteron.web.server import Server
from tests.helpers.rank_traces import unpacked

EVENT_KEYS = ("start", "dur", "name", "stack", "args", "lane", "cat", "depth")
FLOW_KEYS = ("flow_from_ns", "flow_to_ns", "flow_from_lane", "flow_to_lane")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    folder = unpacked("ddp", tmp_path_factory.mktemp("ddp"), only=".chrome_trace")
    return [str(folder / f"deuteron.rank{r}.chrome_trace") for r in (0, 1)]


@pytest.fixture(scope="module")
def job(
    ranks: list[str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, Any], TraceStore]]:
    """The joined job's events as the page gets them whole, and its store."""
    traces = [chrome_trace.read_columns(p) for p in ranks]
    joined = rank_traces.join(traces, ranks)
    ref, order = trace_ref(joined.columns, "job", "", joined.lane_ranks)
    whole = unpack(trace_events(joined.columns, order))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(trace_store.CACHE_ENV, str(tmp_path_factory.mktemp("cache")))
        store = trace_window.build(joined.columns, "job", ranks, joined.lane_ranks)
    assert ref["start_ns"] == 0.0  # a joined job starts at 0: stored times are the page's
    yield whole, store
    store.close()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(trace_store.CACHE_ENV, str(folder))
    return folder


def _span(store: TraceStore) -> float:
    return float(store.meta["ref"]["end_ns"]) - float(store.meta["ref"]["start_ns"])


def test_the_store_holds_the_events_the_page_gets_whole(job: tuple[dict[str, Any], TraceStore]) -> None:
    whole, store = job
    kept = store.query("SELECT * FROM events ORDER BY rowid")
    for key in EVENT_KEYS:
        np.testing.assert_array_equal(kept[key], whole[key], err_msg=key)
    flows = store.query("SELECT * FROM flows ORDER BY rowid")
    for key in ("from_lane", "from_ns", "to_lane", "to_ns"):
        np.testing.assert_array_equal(flows[key], whole[f"flow_{key}"], err_msg=key)
    lanes = range(len(store.meta["ref"]["lanes"]))
    deepest = [int(whole["depth"][whole["lane"] == lane].max(initial=0)) for lane in lanes]
    assert store.meta["lane_depths"] == deepest and max(deepest) > 0
    assert store.meta["ref"]["count"] == len(whole["start"]) == 15_771


def _expected(whole: dict[str, Any], t0: float, t1: float, px: int) -> list[tuple[Any, ...]]:
    """A window as the module says it is, computed here with NumPy: every event overlapping
    [t0, t1] at least a bucket wide, and the narrower ones grouped per lane, depth and bucket
    (a group of one is its event), each row (start, dur, lane, depth, stack, args, count)."""
    s, d = whole["start"], whole["dur"]
    b = (t1 - t0) / px
    over = (s <= t1) & (s + d >= t0)
    rows = [
        (s[i], d[i], whole["lane"][i], whole["depth"][i], whole["stack"][i], whole["args"][i], 1)
        for i in np.flatnonzero(over & (d >= b))
    ]
    groups: dict[tuple[int, int, float], list[int]] = {}
    for i in np.flatnonzero(over & (d < b)):
        groups.setdefault((whole["lane"][i], whole["depth"][i], np.floor((s[i] - t0) / b)), []).append(i)
    for (lane, depth, _), members in groups.items():
        if len(members) == 1:
            i = members[0]
            rows.append((s[i], d[i], lane, depth, whole["stack"][i], whole["args"][i], 1))
            continue
        first = min(s[i] for i in members)
        rows.append((first, max(s[i] + d[i] for i in members) - first, lane, depth, 0, 0, len(members)))
    return sorted(tuple(float(x) for x in row) for row in rows)


@pytest.mark.parametrize(
    ("share", "px", "merges"),
    [
        ((0.0, 1.0), 4096, True),  # the overview
        ((0.0, 1.0), 37, True),
        ((0.4, 0.45), 800, True),
        ((0.9, 1.0), 20_000, False),  # buckets of 0.7 µs: every event as it is
    ],
)
def test_a_window_is_its_events_and_their_groups(
    job: tuple[dict[str, Any], TraceStore], share: tuple[float, float], px: int, merges: bool
) -> None:
    whole, store = job
    t0, t1 = share[0] * _span(store), share[1] * _span(store)
    got = unpack(window(store, t0, t1, px))
    assert np.all(np.diff(got["start"]) >= 0), "sorted by start"
    rows = zip(*(got[k] for k in ("start", "dur", "lane", "depth", "stack", "args", "count")), strict=True)
    assert sorted(tuple(float(x) for x in row) for row in rows) == _expected(whole, t0, t1, px)
    b = (t1 - t0) / px
    overlapping = int(np.count_nonzero((whole["start"] <= t1) & (whole["start"] + whole["dur"] >= t0)))
    assert int(got["count"].sum()) == overlapping
    merged = got["count"] > 1
    assert merged.any() == merges and (~merged).any()
    starts, ends = got["start"][merged], got["start"][merged] + got["dur"][merged]
    bucket = np.floor((starts - t0) / b)
    assert np.all(starts >= t0 + bucket * b) and np.all(ends < t0 + (bucket + 2) * b)  # its bucket, one more
    assert np.all(got["dur"][merged] < 2 * b)
    # Named after its longest event (one of them, where several are as long).
    s, d = whole["start"], whole["dur"]
    narrow = (s <= t1) & (s + d >= t0) & (d < b)
    for k in np.flatnonzero(merged)[:100]:
        members = narrow & (whole["lane"] == got["lane"][k]) & (whole["depth"] == got["depth"][k])
        members &= np.floor((s - t0) / b) == np.floor((got["start"][k] - t0) / b)
        assert members.sum() == got["count"][k]
        longest = members & (d == d[members].max())
        assert got["name"][k] in whole["name"][longest] and got["cat"][k] in whole["cat"][longest]


def _sparse(path: Path, gap_us: float = 10.0) -> Path:
    """A trace of 41 events on 3 lanes (one spanning the others on lane 0) and an arrow."""
    events: list[dict[str, Any]] = [
        {"ph": "X", "name": f"e{i}", "cat": "python", "pid": 1, "tid": i % 3, "ts": gap_us * i, "dur": 2.5,
         "args": {"call_stack": ["ROOT", f"f{i % 4}"], "i": i}}
        for i in range(40)
    ]  # fmt: skip
    events += [{"ph": "X", "name": "outer", "cat": "python", "pid": 1, "tid": 0, "ts": 0, "dur": 40 * gap_us}]
    events += [
        {"ph": "s", "id": 1, "cat": "launch", "name": "l", "pid": 1, "tid": 0, "ts": 3 * gap_us},
        {
            "ph": "f",
            "id": 1,
            "cat": "launch",
            "name": "l",
            "pid": 1,
            "tid": 2,
            "ts": 5 * gap_us + 1,
            "bp": "e",
        },
    ]
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_a_sparse_trace_at_full_width_is_the_whole_trace(tmp_path: Path, cache: Path) -> None:
    """Where no two events share a lane, depth and bucket, a window holds every event as it is:
    the same packed arrays as the trace sent whole (and each counted once)."""
    path = _sparse(tmp_path / "t.json")
    whole, lod = WebData(), WebData()
    list(whole.add_files([str(path)], lod=False))
    list(lod.add_files([str(path)], lod=True))
    ref = lod.index()["traces"][0]
    span = ref["end_ns"] - ref["start_ns"]
    sent = unpack(whole.answer(whole.index()["traces"][0]["events"])[1])
    for got in (
        unpack(lod.answer(ref["window"], f"t0=0&t1={span}&px=20000")[1]),
        unpack(lod.answer(ref["events"])[1]),
    ):
        assert got["count"].tolist() == [1] * 41
        for key in EVENT_KEYS + FLOW_KEYS:
            np.testing.assert_array_equal(got[key], sent[key], err_msg=key)
            assert got[key].dtype == sent[key].dtype
        assert len(got["flow_to_ns"]) == 1
    assert ref["lane_depths"] == [1, 0, 0]


def test_traces_shown_one_at_a_time_get_a_store_each(tmp_path: Path, cache: Path) -> None:
    paths = [str(_sparse(tmp_path / "a.json")), str(_sparse(tmp_path / "b.json", gap_us=20.0))]
    data = WebData()
    lines = list(data.add_files(paths, lod=True))
    refs = data.index()["traces"]
    assert [ref["window"] for ref in refs] == ["/api/trace/0/window.bin", "/api/trace/1/window.bin"]
    assert [ref["end_ns"] for ref in refs] == [400_000.0, 800_000.0]
    assert [line for _, line in lines].count(
        "level of detail: 41 events kept in " + refs[1]["lod"]["store"]
    ) == 1
    assert len(list(cache.glob("*.duckdb"))) == 2
    again = list(WebData().add_files(paths[1:], lod=True))  # b alone: its store, no reading
    assert again[-1][1] == "level of detail: 41 events opened from the cache in " + refs[1]["lod"]["store"]


def test_flows_go_only_with_both_ends_in_a_window_of_few_events(
    job: tuple[dict[str, Any], TraceStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, store = job
    t0, t1 = 0.3 * _span(store), 0.5 * _span(store)
    got = unpack(window(store, t0, t1, 1000))
    inside = (whole["flow_from_ns"] >= t0) & (whole["flow_from_ns"] <= t1)
    inside &= (whole["flow_to_ns"] >= t0) & (whole["flow_to_ns"] <= t1)
    assert 0 < inside.sum() < len(inside)
    for key in FLOW_KEYS:
        np.testing.assert_array_equal(got[key], whole[key][inside], err_msg=key)
    monkeypatch.setattr(trace_window, "FLOW_EVENTS", int(got["count"].sum()))
    assert all(len(a) == 0 for a in (unpack(window(store, t0, t1, 1000))[k] for k in FLOW_KEYS))


def test_windows_are_clamped_to_the_trace_and_the_pixels(job: tuple[dict[str, Any], TraceStore]) -> None:
    _, store = job
    span = _span(store)
    assert window(store, -1e12, span * 3, 500) == window(store, 0, span, 500)
    assert window(store, 0, span, 10**9) == window(store, 0, span, trace_window.MAX_PX)
    assert parse_window("t0=1&t1=2.5&px=0") == (1.0, 2.5, 1)
    assert parse_window("t0=-5&t1=1e3&px=99999.7") == (-5.0, 1000.0, trace_window.MAX_PX)
    empty = unpack(window(store, span * 2, span * 3, 100))  # after the trace: the events at its end
    assert int(empty["count"].sum()) == int(np.count_nonzero(job[0]["start"] + job[0]["dur"] >= span))


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("", "t0 is missing"),
        ("t0=1&t1=2", "px is missing"),
        ("t0=a&t1=2&px=3", "t0 is not a number: 'a'"),
        ("t0=1&t1=2&px=", "px is not a number: ''"),
        ("t0=5&t1=1&px=3", "t1 (1) must be greater than t0 (5)"),
        ("t0=1&t1=2&px=3&x=1", "unknown parameter 'x'"),
        ("t0=1&t0=2&t1=3&px=1", "t0 is given 2 times"),
        ("t0=nan&t1=1&px=1", "t0 is not a finite number"),
        ("t0=0&t1=inf&px=1", "t1 is not a finite number"),
        ("t0", "bad query field"),
    ],
)
def test_bad_windows_are_one_line(query: str, said: str) -> None:
    with pytest.raises(BadWindow, match="^bad window: ") as caught:
        parse_window(query)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_lod_adds_to_the_trace_ref_and_a_second_serve_reads_no_trace(
    ranks: list[str], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = WebData()
    lines = list(first.add_files(ranks, lod=True))
    ref = first.index()["traces"][0]
    stored = list(cache.glob("*.duckdb"))
    assert len(stored) == 1 and ref["lod"] == {"events": 15_771, "store": str(stored[0])}
    assert ref["events"] == "/api/trace/0.bin" and ref["window"] == "/api/trace/0/window.bin"
    assert ref["count"] == 15_771 and ref["flows"] == 2_523 and len(ref["lane_depths"]) == len(ref["lanes"])
    assert lines[-1] == ("2 ranks", f"level of detail: 15,771 events kept in {stored[0]}")

    def no_reading(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a trace was read")

    monkeypatch.setattr(parallel, "map_files", no_reading)
    monkeypatch.setattr(chrome_trace, "read_columns", no_reading)
    second = WebData()
    again = list(second.add_files(ranks, lod=True))
    assert [line for _, line in again[:-1]] == [line for _, line in lines[1:-1]]  # no "read" line
    assert again[-1][1] == f"level of detail: 15,771 events opened from the cache in {stored[0]}"
    assert second.index()["traces"][0] == ref and second.notes == first.notes
    assert second.answer(ref["events"]) == first.answer(ref["events"])


def test_a_changed_trace_is_read_again_into_a_new_store(ranks: list[str], cache: Path) -> None:
    list(WebData().add_files(ranks, lod=True))
    (before,) = cache.glob("*.duckdb")
    stat = Path(ranks[1]).stat()
    os.utime(ranks[1], ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    lines = list(WebData().add_files(ranks, lod=True))
    assert lines[0] == ("2 traces", "read, 6.2 MB")
    assert {p.name for p in cache.glob("*.duckdb")} - {before.name}


def test_lod_follows_the_size_unless_told(
    ranks: list[str], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trace_window, "LOD_EVENTS", 15_771)  # the job's events: not more
    small = WebData()
    list(small.add_files(ranks))
    assert "window" not in small.index()["traces"][0] and not cache.exists()
    assert "count" not in unpack(small.answer("/api/trace/0.bin")[1])  # sent whole, as before
    assert small.answer("/api/trace/0/window.bin", "t0=0&t1=1&px=1") is None
    monkeypatch.setattr(trace_window, "LOD_EVENTS", 15_770)
    for said in ("kept in", "opened from the cache in"):
        big = WebData()
        assert said in list(big.add_files(ranks))[-1][1]
        assert "window" in big.index()["traces"][0]
    monkeypatch.setattr(trace_window, "LOD_EVENTS", 15_771)  # a store is there, but not wanted
    again = WebData()
    assert list(again.add_files(ranks))[0] == ("2 traces", "read, 6.2 MB")
    assert "window" not in again.index()["traces"][0]
    monkeypatch.setattr(trace_window, "LOD_EVENTS", 0)
    refused = WebData()
    list(refused.add_files(ranks, lod=False))
    assert "window" not in refused.index()["traces"][0]


def test_without_duckdb_traces_are_sent_whole_with_a_note(
    ranks: list[str], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)  # `import duckdb` raises ImportError
    assert not trace_store.available()
    data = WebData()
    lines = list(data.add_files(ranks, lod=True))
    note = "15,771 events: install deuteron[traces] (DuckDB) to open traces of this size with level of detail"
    assert ("2 traces", note) in lines and data.notes.count(note) == 1
    ref = data.index()["traces"][0]
    assert "window" not in ref and len(unpack(data.answer(ref["events"])[1])["start"]) == 15_771
    assert not cache.exists()


@pytest.fixture
def served(ranks: list[str], cache: Path) -> Iterator[str]:
    data = WebData()
    list(data.add_files(ranks, lod=True))
    server = Server(data, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.url
    server.shutdown()
    server.server_close()
    thread.join()


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_the_server_answers_windows_and_refuses_bad_ones_in_one_line(served: str) -> None:
    status, body = _get(served + "api/trace/0/window.bin?t0=0&t1=5e7&px=300")
    assert status == 200 and 0 < int(unpack(body)["count"].sum()) < 15_771
    for query in ("", "?t0=1", "?t0=1&t1=2&px=3&evil=1", "?t0=x&t1=2&px=3", "?t0=1&t1=2&px=3;"):
        status, body = _get(served + "api/trace/0/window.bin" + query)
        assert status == 400 and body.startswith(b"bad window: ") and body.count(b"\n") == 1, (query, body)
    assert _get(served + "api/trace/1/window.bin?t0=0&t1=1&px=1")[0] == 404
    assert _get(served + "api/trace/0/x/window.bin?t0=0&t1=1&px=1")[0] == 404


def test_the_serve_flags(
    ranks: list[str], cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "job.html"
    assert cli_main(["serve", "--no-lod", "--html", str(page), *ranks]) == 0
    said = capsys.readouterr().err
    assert "level of detail" not in said and not cache.exists()
    assert "deuteron serve: reading 2/2 traces, 6.2 MB of 6.2 MB" in said  # stderr is no terminal: tenths
    assert cli_main(["serve", "--lod", "--html", str(page), *ranks]) == 0
    said = capsys.readouterr().err
    assert "deuteron serve: 2 ranks: level of detail: 15,771 events kept in " in said
    html = page.read_text()
    assert "this page holds their overview" in html and "/api/trace/0/window.bin" not in html
    with pytest.raises(SystemExit) as stopped:
        cli_main(["serve", "--lod", "--no-lod", *ranks])
    assert stopped.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_reading_progress_is_one_line_in_place_on_a_terminal_and_a_line_a_tenth_in_a_log() -> None:
    terminal = _Terminal()
    shown = Progress(terminal)
    for done in (1, 2, 3):
        shown(done, 4, done * 500_000_000, 2_000_000_000)
    shown.finish()  # stopped at 3 of 4 (a damaged file): the line goes, the error has its own
    assert terminal.getvalue() == (
        "\r" + "\x1b[K\r".join(f"deuteron serve: reading {n}/4 traces, {s} of 2.0 GB" for n, s in (
            (1, "500 MB"), (2, "1.0 GB"), (3, "1.5 GB"))) + "\x1b[K" + "\r\x1b[K"
    )  # fmt: skip
    shown(4, 4, 2_000_000_000, 2_000_000_000)
    assert terminal.getvalue().endswith("\rdeuteron serve: reading 4/4 traces, 2.0 GB of 2.0 GB\x1b[K\n")
    log = io.StringIO()
    shown = Progress(log)
    for done in range(1, 65):
        shown(done, 64, done * 31_250_000, 2_000_000_000)
    lines = log.getvalue().splitlines()
    assert len(lines) == 10 and lines[0] == "deuteron serve: reading 7/64 traces, 219 MB of 2.0 GB"
    assert lines[-1] == "deuteron serve: reading 64/64 traces, 2.0 GB of 2.0 GB"
