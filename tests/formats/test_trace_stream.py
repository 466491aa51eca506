"""The trace reader streams: the same columns whatever the chunk (so a cut between two events, or
inside one, never changes what is read), every document shape Chrome accepts, damage said in one
line, args past the budget counted and said, and memory that does not follow the file's size."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.trace_scale import synthetic_trace
from deuteron.formats import FormatError, chrome_trace, jsonio
from deuteron.formats.trace_columns import ARGS_BYTES_ENV, TraceColumns
from deuteron.formats.trace_stream import TraceStream
from tests.helpers.paths import FIXTURES_DIR
from tests.helpers.rank_traces import unpacked

ROOT = Path(__file__).resolve().parents[2]
TRACES = [
    FIXTURES_DIR / "web" / "h100_launch_bound.chrome_trace",
    FIXTURES_DIR / "proton" / "proton_trace.chrome_trace",
    FIXTURES_DIR / "instrumentation" / "default.proton.chrome_trace",
]


def _same(a: TraceColumns, b: TraceColumns) -> None:
    for key in ("start", "dur", "name", "cat", "lane", "stack", "args", "flows"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key), err_msg=key)
    assert (a.names, a.cats, a.lanes, a.stacks, a.arg_sets, a.info) == (
        b.names, b.cats, b.lanes, b.stacks, b.arg_sets, b.info,
    )  # fmt: skip


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_any_chunk_reads_the_same_columns(path: Path) -> None:
    whole = json.loads(path.read_text())
    events = whole["traceEvents"] if isinstance(whole, dict) else whole
    big = chrome_trace.read_columns(path)
    assert len(big.start) == sum(1 for e in events if e.get("ph") == "X")
    for chunk in (64, 1000, 4099):  # cuts inside events, strings and args, many per event
        _same(chrome_trace.read_columns(path, chunk=chunk), big)


def test_a_recorded_rank_trace_reads_as_a_whole_parse_does(tmp_path: Path) -> None:
    path = unpacked("ddp", tmp_path, ".chrome_trace") / "deuteron.rank0.chrome_trace"
    doc = json.loads(path.read_text())
    c = chrome_trace.read_columns(path, chunk=10_000)
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(c.start) == len(xs) and len(c.flows) == sum(e["ph"] == "s" for e in doc["traceEvents"])
    assert sorted(c.start.tolist()) == sorted(e["ts"] * 1e3 for e in xs)
    assert c.info["rank"] == "0" and c.info["zero_ns"] == doc["otherData"]["zero_ns"]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


EVENT = (
    '{"ph": "X", "name": "k", "ts": 1.5, "dur": 2, "pid": 1, "tid": 3, "args": {"call_stack": ["ROOT", "k"]}}'
)
TWO = EVENT + ", " + EVENT


@pytest.mark.parametrize(
    "text",
    [
        '{"traceEvents": [' + TWO + '], "otherData": {"rank": "3"}}',  # keys after the events
        '{"otherData": {"rank": "3"}, "traceEvents": [' + TWO + "]}",
        "[" + TWO + "]",  # a bare list, as Chrome reads too
        json.dumps({"otherData": {"rank": "3"}, "traceEvents": [json.loads(EVENT)] * 2}, indent=2),
    ],
    ids=["info-after", "info-before", "bare-list", "pretty"],
)
def test_document_shapes(tmp_path: Path, text: str) -> None:
    c = chrome_trace.read_columns(_write(tmp_path / "t.json", text), chunk=16)
    assert len(c.start) == 2 and c.names == ["k"] and c.stacks == [(), ("ROOT", "k")]
    assert c.info.get("rank", "3") == "3"


def test_what_orjson_refuses_and_brackets_inside_strings(tmp_path: Path) -> None:
    """``},{`` in a string and in nested args, an integer past 64 bits: cut points that look right
    and are not, and a batch orjson refuses, still read exactly."""
    events = [
        {"ph": "X", "name": 'a"},{"b', "ts": 1, "dur": 1, "args": {"list": [{"x": 1}, {"y": 2}]}},
        {"ph": "X", "name": "big", "ts": 2, "dur": 1, "args": {"id": 1 << 70}},
        {"ph": "X", "name": "c},", "ts": 3, "dur": 1},
    ]
    path = _write(tmp_path / "t.json", json.dumps({"traceEvents": events}))
    for chunk in (8, 30, 1 << 20):
        c = chrome_trace.read_columns(path, chunk=chunk)
        assert c.names == ['a"},{"b', "big", "c},"]
        said = jsonio.loads(path.read_bytes())["traceEvents"][1]["args"]["id"]  # as a whole parse reads it
        assert dict(c.arg_sets[int(c.args[1])])["id"] == json.dumps(said)


def test_gzipped_traces_stream_too(tmp_path: Path) -> None:
    plain = TRACES[0]
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    _same(chrome_trace.read_columns(packed), chrome_trace.read_columns(plain))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"traceEvents": [' + EVENT + ", " + EVENT[:30], "ends early"),
        ('{"traceEvents": [' + EVENT + "]} trailing", "after the trace's end"),
        ('{"traceEvents": [' + EVENT + ", 7]}", "event 1 is not an object"),
        ('{"traceEvents": [' + EVENT + " " + EVENT + "]}", "not valid JSON"),
        ('{"events": []}', "not a Chrome trace"),
        ("\x00\x01", "not a Chrome trace"),
    ],
    ids=["cut", "trailing", "not-object", "no-comma", "no-events", "binary"],
)
def test_damage_is_one_line(tmp_path: Path, text: str, said: str) -> None:
    path = _write(tmp_path / "t.json", text)
    for chunk in (16, 1 << 20):
        with pytest.raises(FormatError, match=said) as info:
            chrome_trace.read_columns(path, chunk=chunk)
        assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_damaged_trace_through_the_command_is_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.chrome_trace", '{"traceEvents": [' + EVENT + ", " + EVENT[:30])
    done = subprocess.run(
        [sys.executable, "-m", "deuteron", "serve", "--html", str(tmp_path / "o.html"), str(path)],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("deuteron: error: ") and "ends early" in done.stderr
    assert "Traceback" not in done.stderr


def test_args_past_the_budget_are_counted_and_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = [{"ph": "X", "name": "k", "ts": i, "dur": 1, "args": {"correlation": i}} for i in range(2000)]
    path = _write(tmp_path / "every.json", json.dumps({"traceEvents": events}))
    assert chrome_trace.read_columns(path).notes == []  # well within the default budget
    monkeypatch.setenv(ARGS_BYTES_ENV, "20000")
    c = chrome_trace.read_columns(path)
    kept = int(np.count_nonzero(c.args))
    assert 0 < kept < 2000 and len(c.arg_sets) == kept + 1
    (note,) = c.notes
    assert f"{2000 - kept:,} events are left out" in note and f"{ARGS_BYTES_ENV}=BYTES" in note
    monkeypatch.setenv(ARGS_BYTES_ENV, str(10 << 20))
    assert np.count_nonzero(chrome_trace.read_columns(path).args) == 2000  # raised: all kept


def test_the_stream_says_what_the_trace_says_of_itself(tmp_path: Path) -> None:
    doc = {"baseTimeNanoseconds": 1_700_000_000_000_000_000, "traceEvents": [json.loads(EVENT)],
           "distributedInfo": {"rank": 5, "nested": {"x": 1}}}  # fmt: skip
    with TraceStream(_write(tmp_path / "k.json", json.dumps(doc))) as stream:
        assert sum(len(b) for b in stream.batches()) == 1
    assert stream.info == {"baseTimeNanoseconds": 1_700_000_000_000_000_000, "rank": 5}


_PEAK = """
import sys
from deuteron.formats.chrome_trace import read_columns
def hwm():
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024
before = hwm()
c = read_columns(sys.argv[1])
print(len(c.start), hwm() - before)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="VmHWM is Linux's")
def test_memory_does_not_follow_the_file(tmp_path: Path) -> None:
    """Traces of 5 and 30 MB of a real rank's events, each read in a fresh process. The
    whole-document reader peaked at about 8.7 times the file (a 30 MB trace: 265 MB). Streamed,
    the peak above the interpreter's is one chunk's events (the same for both) and the columns
    (31 bytes an event, about a tenth of the file): 25 MB more file must cost well under 25 MB."""
    grew = {}
    for size in (5_000_000, 30_000_000):
        path = tmp_path / f"t{size}.rank0.chrome_trace"
        written = synthetic_trace(path, size)
        done = subprocess.run(
            [sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, cwd=ROOT
        )
        events, grew[size] = (int(x) for x in done.stdout.split())
        assert 0 < events < written
        path.unlink()
    more = grew[30_000_000] - grew[5_000_000]
    assert more < 25_000_000 / 4, f"25 MB more file cost {more / 1e6:.0f} MB more ({grew})"
    assert grew[30_000_000] < 30_000_000, f"peak grew {grew[30_000_000] / 1e6:.0f} MB reading 30 MB"

