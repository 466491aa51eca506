"""The CUPTI backend's GPU-free half: record decoding, the launch/kernel join, replay and library lookup.

Everything between the shim's raw bytes and the profile tree is plain numpy and Python, so it is
tested here on synthetic buffers, without a GPU: CI has none, and a wrong offset or a wrong join
would silently file kernels under the wrong context. Where a C compiler and the CUPTI headers are
present, the record layouts are also checked against the C structures they mirror.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import deuteron.collect.backends.cupti.backend as cupti
from deuteron.collect.backends import BackendError, resolve
from deuteron.collect.backends.cupti import library, records, replay
from deuteron.collect.backends.cupti.join import KEY_COLUMNS, MAX_AGE, UNMATCHED, Batch, Join, unique_rows
from deuteron.collect.backends.cupti.records import (
    CTX_OTHER_THREAD,
    CTX_PAUSED,
    ENTRY_DTYPE,
    GRAPH_CLONE,
    GRAPH_LAUNCH,
    GRAPH_NODE,
    KERNEL_DTYPE,
    LAUNCH,
    RecordError,
)
from deuteron.collect.session import Session
from deuteron.formats import chrome_trace
from deuteron.model.tree import KERNEL, STATE
from tests.helpers.cupti_records import entries_of, kernels_of
from tests.helpers.cupti_records import kernel_row as k
from tests.helpers.profiles import find

SHIM_C = Path(cupti.__file__).with_name("_shim.c")
KEY = tuple[int, ...]
KERNEL_FIELDS: tuple[str, ...] = KERNEL_DTYPE.names or ()
ENTRY_FIELDS: tuple[str, ...] = ENTRY_DTYPE.names or ()
CONSTANTS = ("ENTRY_LAUNCH", "ENTRY_GRAPH_LAUNCH", "ENTRY_GRAPH_NODE", "ENTRY_GRAPH_CLONE",
             "CTX_OTHER_THREAD", "CTX_PAUSED", "KERNEL_RECORD_BYTES")



def groups(batch: Batch) -> dict[KEY, tuple[int, int]]:
    rows = zip(batch.keys.tolist(), batch.count.tolist(), batch.time_ns.tolist(), strict=True)
    # the first six key columns (the torch place, the seventh, is tested on its own)
    return {tuple(key[:6]): (count, time) for key, count, time in rows}


def column(batch: Batch, name: str) -> list[int]:
    """One key column per kernel, in kernel order."""
    return batch.keys[batch.group_of][:, KEY_COLUMNS.index(name)].tolist()


def compile_and_run(tmp_path: Path, source: str, include: Path | None = None) -> dict[str, int]:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed")
    (tmp_path / "t.c").write_text(source)
    flags = [f"-I{include}"] if include else []
    subprocess.run([gcc, *flags, str(tmp_path / "t.c"), "-o", str(tmp_path / "t")], check=True)
    out = subprocess.run([str(tmp_path / "t")], check=True, capture_output=True, text=True).stdout
    return {name: int(value) for name, value in (line.split() for line in out.splitlines())}


# --- records ---------------------------------------------------------------------------------------


def test_kernel_record_fields_sit_at_cuptis_offsets_and_round_trip() -> None:
    raw = bytearray(2 * records.KERNEL_RECORD_BYTES)  # packed by hand, independently of KERNEL_DTYPE
    for i, (kind, start, corr, ptr, node) in enumerate([(10, 5, 7, 0xDEAD, 0), (3, 9, 8, 0xBEEF, 1 << 40)]):
        base = i * records.KERNEL_RECORD_BYTES
        struct.pack_into("<IxxH", raw, base, kind, 64)
        struct.pack_into("<QQ", raw, base + 16, start, start + 100)
        struct.pack_into("<IIIiii", raw, base + 40, 1, 2, 3, 128, 2, 1)
        struct.pack_into("<I", raw, base + 92, corr)
        struct.pack_into("<Q", raw, base + 104, ptr)
        struct.pack_into("<QxxxxI", raw, base + 144, node, 42)
    out = records.kernels(memoryview(raw))
    assert out["kind"].tolist() == [10, 3] and out["registers"].tolist() == [64, 64]
    assert out["start"].tolist() == [5, 9] and out["end"].tolist() == [105, 109]
    assert out["device"].tolist() == [1, 1] and out["context"].tolist() == [2, 2]
    assert out["stream"].tolist() == [3, 3] and out["grid_x"].tolist() == [128, 128]
    assert out["correlation"].tolist() == [7, 8] and out["name_ptr"].tolist() == [0xDEAD, 0xBEEF]
    assert out["graph_node"].tolist() == [0, 1 << 40] and out["graph_id"].tolist() == [42, 42]
    filled = np.zeros(3, KERNEL_DTYPE)
    for i, name in enumerate(KERNEL_FIELDS):
        filled[name] = np.arange(3) + 100 * (i + 1)
    filled["kind"] = [3, 10, 10]
    back = records.kernels(filled.tobytes())
    assert all(back[name].tolist() == filled[name].tolist() for name in KERNEL_FIELDS)


def test_launch_entries_round_trip() -> None:
    raw = struct.pack("<QQQIIHHI", 9, CTX_OTHER_THREAD | 17, 123, 4, 5, GRAPH_LAUNCH, 3, 0)
    out = records.entries(bytearray(raw * 2))
    assert len(out) == 2 and out["key"].tolist() == [9, 9] and out["ctx"][0] == CTX_OTHER_THREAD | 17
    assert out[1][["ts", "state", "meta", "kind", "thread"]].tolist() == (123, 4, 5, 2, 3)


@pytest.mark.parametrize("decode, size", [(records.kernels, 160), (records.entries, 40)])
def test_partial_records_are_refused(decode: Callable[[bytes], np.ndarray], size: int) -> None:
    for n in (1, size - 1, size + 1, 3 * size - 8):
        with pytest.raises(RecordError, match="not a multiple"):
            decode(bytes(n))
    assert len(decode(b"")) == 0


def test_records_of_other_kinds_are_refused() -> None:
    arr = np.zeros(4, KERNEL_DTYPE)
    arr["kind"] = [10, 3, 5, 10]
    with pytest.raises(RecordError, match=r"1 records are not kernel records \(kind 5\)"):
        records.kernels(arr.tobytes())


def _cuda_include() -> Path | None:
    homes = [os.environ.get("CUDA_HOME"), "/usr/local/cuda-13.0", "/usr/local/cuda"]
    for home in filter(None, homes):
        if (Path(home) / "include" / "cupti_activity.h").is_file():
            return Path(home) / "include"
    return None


@pytest.mark.parametrize("version", [5, 6, 7, 8, 9, 10])
def test_kernel_dtype_matches_the_cupti_header(tmp_path: Path, version: int) -> None:
    include = _cuda_include()
    if include is None:
        pytest.skip("no cupti_activity.h in $CUDA_HOME/include or /usr/local/cuda*/include")
    struct_name = f"CUpti_ActivityKernel{version}"
    headers = [h for h in ("cupti_activity.h", "cupti_activity_deprecated.h") if (include / h).is_file()]
    if not any(f"}} {struct_name};" in (include / h).read_text(errors="replace") for h in headers):
        pytest.skip(f"{struct_name} is not declared in {include}")
    c_fields = dict(zip(KERNEL_FIELDS, [
        "kind", "registersPerThread", "start", "end", "deviceId", "contextId", "streamId", "gridX", "gridY",
        "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory",
        "localMemoryPerThread", "correlationId", "name", "graphNodeId", "graphId"], strict=True))
    prints = "".join(
        f'printf("{py} %zu\\n{py}.size %zu\\n", offsetof(T, {c}), sizeof(((T *)0)->{c}));'
        for py, c in c_fields.items())
    got = compile_and_run(tmp_path, "#include <stdio.h>\n#include <stddef.h>\n"
                          + "".join(f"#include <{h}>\n" for h in headers)
                          + f"typedef {struct_name} T;\nint main(void) {{ {prints} return 0; }}\n", include)
    fields = KERNEL_DTYPE.fields
    assert fields is not None
    for name in KERNEL_FIELDS:
        dtype, offset = fields[name][:2]
        assert (got[name], got[f"{name}.size"]) == (offset, dtype.itemsize), name


def test_entry_dtype_and_constants_match_the_shim(tmp_path: Path) -> None:
    source = SHIM_C.read_text()
    entry = re.search(r"typedef struct \{[^}]*\} Entry;", source)
    enum = re.search(r"^enum \{ ENTRY_LAUNCH.*$", source, re.M)
    assert entry and enum, "the Entry struct or the entry kinds moved in _shim.c"
    defines = "\n".join(re.findall(r"^#define (?:CTX_\w+|KERNEL_RECORD_BYTES) .*$", source, re.M))
    names = ENTRY_FIELDS
    prints = "".join(f'printf("{n} %zu\\n", offsetof(Entry, {n}));' for n in names)
    prints += 'printf("size %zu\\n", sizeof(Entry));'
    prints += "".join(f'printf("{c} %llu\\n", (unsigned long long){c});' for c in CONSTANTS)
    got = compile_and_run(tmp_path, "#include <stdio.h>\n#include <stddef.h>\n#include <stdint.h>\n"
                          f"{defines}\n{enum.group(0)}\n{entry.group(0)}\n"
                          f"int main(void) {{ {prints} return 0; }}\n")
    fields = ENTRY_DTYPE.fields
    assert fields is not None
    assert {n: got[n] for n in names} == {n: fields[n][1] for n in names}
    assert got["size"] == records.ENTRY_BYTES
    assert [got[c] for c in CONSTANTS] == [LAUNCH, GRAPH_LAUNCH, GRAPH_NODE, GRAPH_CLONE, CTX_OTHER_THREAD,
                                           CTX_PAUSED, records.KERNEL_RECORD_BYTES]


# --- join ------------------------------------------------------------------------------------------


def test_groups_are_exact_and_unmatched_kernels_are_counted() -> None:
    join = Join()
    join.add_entries(entries_of(  # out of key order, as threads hand them over
        (LAUNCH, 6, 16, 506), (LAUNCH, 3, 17, 503, 1), (LAUNCH, 1, 16, 501), (LAUNCH, 5, 16, 505),
        (LAUNCH, 2, 16, 502, 0, 0, 1), (LAUNCH, 4, 16, 504, 0, 2, 2)))
    batch = join.match(kernels_of(
        k(1, dur=10), k(2, dur=20), k(3, dur=40), k(4, dur=80), k(5, dur=160, device=1),
        k(99, name=222, dur=320), k(98, name=222, start=900, end=800)))  # end before start: no time
    assert groups(batch) == {
        (16, 0, 0, 0, 111, 0): (2, 30),
        (17, 0, 1, 0, 111, 0): (1, 40),
        (16, 0, 0, 2, 111, 0): (1, 80),
        (16, 0, 0, 0, 111, 1): (1, 160),
        (UNMATCHED, 0, 0, 0, 222, 0): (2, 320),
    }
    assert column(batch, "ctx") == [16, 16, 17, 16, 16, UNMATCHED, UNMATCHED]
    assert batch.launch_ts.tolist() == [501, 502, 503, 504, 505, 0, 0]
    assert batch.launch_thread.tolist() == [0, 1, 0, 2, 0, -1, -1]
    assert join.pending["key"].tolist() == [6] and len(join.age) == 1
    assert (join.counters.kernels, join.counters.unmatched, join.counters.paused) == (7, 2, 0)


def test_graph_kernels_get_their_capture_context_through_clones() -> None:
    join = Join()
    join.add_entries(entries_of(
        (GRAPH_NODE, 100, 20), (GRAPH_NODE, 101, 21, 0, 3), (GRAPH_CLONE, 200, 100), (GRAPH_CLONE, 300, 200),
        (GRAPH_CLONE, 400, 401), (GRAPH_CLONE, 401, 400),  # a cycle must end, as an unknown capture
        (GRAPH_NODE, 500, 30), (GRAPH_CLONE, 500, 100),  # reported at instantiation: the original wins
        (GRAPH_LAUNCH, 50, 16, 77), (LAUNCH, 51, 16)))
    batch = join.match(kernels_of(
        k(50, graph_node=100), k(50, graph_node=200), k(50, graph_node=300), k(50, graph_node=500),
        k(50, graph_node=101), k(50, graph_node=999), k(50, graph_node=400), k(50), k(51, graph_node=100)))
    assert column(batch, "capture") == [20, 20, 20, 20, 21, 0, 0, 0, 0]
    assert column(batch, "ctx") == [16] * 9 and batch.launch_ts.tolist() == [77] * 8 + [0]
    # node 101 was captured in state 3 (a launch-metadata state, say): its replays keep that state
    assert groups(batch) == {(16, 20, 0, 0, 111, 0): (4, 40), (16, 21, 3, 0, 111, 0): (1, 10),
                             (16, 0, 0, 0, 111, 0): (4, 40)}
    assert join.counters.graph_without_capture == 2  # node 999 and the cycle; graph_node 0 is no graph kernel
    assert join.pending["key"].tolist() == [50]  # the graph launch waits for more replays
    later = join.match(kernels_of(k(50, graph_node=300, dur=5)))
    assert groups(later) == {(16, 20, 0, 0, 111, 0): (1, 5)}


def test_graph_kernels_captured_while_deactivated_are_left_out() -> None:
    """A kernel captured while the session was deactivated is left out of every replay (Proton's
    rule), not filed as if its capture were unknown, and no "cannot find graph" is said of it."""
    join = Join()
    join.add_entries(
        entries_of((GRAPH_NODE, 100, 20), (GRAPH_NODE, 101, 21 | CTX_PAUSED), (GRAPH_LAUNCH, 50, 16, 77))
    )
    batch = join.match(kernels_of(k(50, graph_node=100), k(50, graph_node=101), k(50, graph_node=100)))
    assert column(batch, "ctx") == [16, 16 | CTX_PAUSED, 16]
    assert column(batch, "capture") == [20, 0, 20]
    assert (join.counters.paused, join.counters.graph_without_capture) == (1, 0)
    assert not join.uncaptured_graphs


def test_replayed_kernels_keep_the_metadata_their_launch_had_when_captured() -> None:
    join = Join()
    join.add_entries(
        entries_of((GRAPH_NODE, 100, 20, 0, 0, 7), (GRAPH_NODE, 101, 20), (GRAPH_LAUNCH, 50, 16, 77, 0, 3))
    )
    batch = join.match(kernels_of(k(50, graph_node=100), k(50, graph_node=101)))
    assert column(batch, "meta") == [7, 3]  # the captured launch's; else the replay launch's


def test_paused_contexts_are_counted_and_keep_their_flag() -> None:
    join = Join()
    join.add_entries(entries_of((LAUNCH, 1, 16 | CTX_PAUSED), (LAUNCH, 2, 16), (LAUNCH, 3, CTX_PAUSED)))
    batch = join.match(kernels_of(k(1), k(2), k(3)))
    assert column(batch, "ctx") == [16 | CTX_PAUSED, 16, CTX_PAUSED]
    assert (join.counters.paused, join.counters.unmatched) == (2, 0)


def test_expire_drops_launches_that_wait_too_long_and_graph_launches_that_stop_matching() -> None:
    join = Join()
    join.add_entries(entries_of((LAUNCH, 10, 16), (GRAPH_LAUNCH, 20, 16), (GRAPH_LAUNCH, 30, 16)))
    for _ in range(10):
        join.expire()
    join.add_entries(entries_of((LAUNCH, 5, 17)))  # sorts before the older launch: its age must follow it
    join.match(kernels_of(k(30, graph_node=7)))  # graph launch 30 matched: its age starts again
    for _ in range(MAX_AGE - 10):
        join.expire()
    assert join.pending["key"].tolist() == [5, 10, 20, 30]  # launch 10 has waited MAX_AGE drains: kept
    join.expire()
    assert join.pending["key"].tolist() == [5, 30] and join.counters.expired_launches == 2
    batch = join.match(kernels_of(k(10), k(5)))
    assert column(batch, "ctx") == [UNMATCHED, 17]
    for _ in range(5):
        join.expire()
    assert join.pending["key"].tolist() == [30]  # MAX_AGE - 4 drains since its last match
    for _ in range(MAX_AGE):
        join.expire()
    assert join.pending["key"].tolist() == [] and join.counters.expired_launches == 3


def test_empty_batches_and_nothing_pending() -> None:
    join = Join()
    join.add_entries(entries_of())
    join.add_entries(entries_of((LAUNCH, 1, 16)))
    batch = join.match(kernels_of())
    assert len(batch) == 0 and batch.keys.shape == (0, len(KEY_COLUMNS)) and batch.count.shape == (0,)
    assert batch.group_of.shape == (0,) and join.pending["key"].tolist() == [1]
    batch = Join().match(kernels_of(k(1), k(2)))
    assert groups(batch) == {(UNMATCHED, 0, 0, 0, 111, 0): (2, 20)}
    assert batch.launch_ts.tolist() == [0, 0] and batch.launch_thread.tolist() == [-1, -1]


def test_launches_from_two_drains_match() -> None:
    join = Join()
    join.add_entries(entries_of((LAUNCH, 3, 16, 30), (LAUNCH, 1, 16, 10)))
    join.match(kernels_of())
    join.expire()
    join.add_entries(entries_of((LAUNCH, 2, 17, 20, 0, 0, 4)))
    batch = join.match(kernels_of(k(1), k(2), k(3)))
    assert column(batch, "ctx") == [16, 17, 16]
    assert batch.launch_ts.tolist() == [10, 20, 30] and batch.launch_thread.tolist() == [0, 4, 0]
    assert len(join.pending) == len(join.age) == 0 and join.counters.unmatched == 0


# --- replay ----------------------------------------------------------------------------------------

OFFSET = 100
CONTEXTS = {"1": [], "2": ["<no launch record>"], "16": ["outer"], "17": ["outer", "inner"], "18": ["cap"]}


def write_drain(folder: Path, index: int, entries: np.ndarray, kernels: np.ndarray) -> None:
    stem = folder / f"drain{index:03d}"
    stem.with_suffix(".entries").write_bytes(entries.tobytes())
    stem.with_suffix(".kernels").write_bytes(kernels.tobytes())
    stem.with_suffix(".json").write_text(json.dumps({
        "names": {"111": "kern_a", "222": "kern_b"}, "contexts": CONTEXTS, "states": {"1": "fwd"},
        "threads": {"0": 12345, "1": 777}, "metas": {"1": ["hooked", {"bytes": 10}]}, "offset": OFFSET}))


@pytest.fixture
def replayed(tmp_path: Path) -> tuple[Session, cupti.CuptiBackend]:
    write_drain(tmp_path, 0, entries_of(
        (LAUNCH, 1, 16, 1000), (LAUNCH, 2, 17, 1100, 1), (LAUNCH, 3, 16 | CTX_OTHER_THREAD, 1200, 0, 0, 1),
        (GRAPH_NODE, 100, 18), (GRAPH_LAUNCH, 4, 16, 1300), (LAUNCH, 5, 16 | CTX_PAUSED, 1400),
        (LAUNCH, 6, 1, 1500, 0, 1), (LAUNCH, 7, 17, 1600)), kernels_of(
        k(1, start=2000, dur=10), k(2, dur=20), k(3, name=222, dur=30, device=1, stream=9),
        k(4, dur=40, graph_node=100), k(5), k(6), k(99, name=222, dur=50)))
    write_drain(tmp_path, 1, entries_of(), kernels_of(k(4, dur=60, graph_node=100), k(7, name=222, dur=70)))
    session = Session(0, "t", backend="interpreter")
    return session, replay(tmp_path, session)


def test_replay_files_kernels_under_their_contexts(replayed: tuple[Session, cupti.CuptiBackend]) -> None:
    session, backend = replayed
    p = session.profile

    def at(*names: str) -> tuple[str, int, int]:
        node = find(p, *names)
        return node.type, node.metrics["count"], node.metrics["time (ns)"]  # type: ignore[return-value]

    assert at("outer", "kern_a") == (KERNEL, 1, 10)
    assert find(p, "outer", "inner", "fwd").type == STATE
    assert at("outer", "inner", "fwd", "kern_a") == (KERNEL, 1, 20)
    assert at("outer", "inner", "kern_b") == (KERNEL, 1, 70)  # launched in drain 0, ran in drain 1
    assert at("outer", "<other threads>", "kern_b") == (KERNEL, 1, 30)
    assert at("outer", "<captured_at>", "cap", "kern_a") == (KERNEL, 2, 100)
    assert at("<no launch record>", "kern_b") == (KERNEL, 1, 50)
    assert find(p, "hooked").metrics == {"count": 1, "time (ns)": 10, "bytes": 10, "device_id": "0",
                                         "device_type": "CUDA"}
    assert find(p, "outer", "<other threads>", "kern_b").metrics["device_id"] == "1"
    assert sum(int(n.metrics.get("count", 0)) for n in p.root.walk()) == 8  # the paused kernel is left out
    c = backend.join.counters
    assert (c.kernels, c.paused, c.unmatched, c.graph_without_capture) == (9, 1, 1, 0)


def test_replay_trace_has_gpu_lanes_and_launch_arrows(replayed: tuple[Session, cupti.CuptiBackend]) -> None:
    session, _ = replayed
    events, names = session.trace_events()
    kernels = [e for e in events if e.category == "kernel"]
    assert len(kernels) == 8
    assert sorted(names[e.lane] for e in kernels) == ["GPU 0 stream 7"] * 7 + ["GPU 1 stream 9"]
    first = next(e for e in kernels if e.call_stack == ("ROOT", "outer", "kern_a"))
    assert (first.start_ns, first.end_ns) == (2000 - OFFSET, 2010 - OFFSET)
    assert first.launched_from is not None and first.launched_from[1] == 1000 - OFFSET
    assert names[first.launched_from[0]] == "thread 12345"
    other = next(e for e in kernels if "<other threads>" in e.call_stack)
    assert other.launched_from is not None and names[other.launched_from[0]] == "thread 777"
    state = next(e for e in kernels if e.call_stack[-2:] == ("fwd", "kern_a"))
    assert state.name == "kern_a"
    unmatched = [e for e in kernels if e.launched_from is None]
    assert [e.call_stack for e in unmatched] == [("ROOT", "<no launch record>", "kern_b")]

    out = chrome_trace.to_json(events, lane_names=names)["traceEvents"]
    starts = {e["id"]: e for e in out if e["ph"] == "s"}
    finishes = {e["id"]: e for e in out if e["ph"] == "f"}
    assert len(starts) == 7 and starts.keys() == finishes.keys()
    spans = {(e["tid"], e["ts"]) for e in out if e["ph"] == "X" and e["cat"] == "kernel"}
    for flow, s in starts.items():
        f = finishes[flow]
        assert names[s["tid"]].startswith("thread ") and names[f["tid"]].startswith("GPU ")
        assert (f["tid"], f["ts"]) in spans and f["bp"] == "e" and s["ts"] <= f["ts"]
    assert {e["args"]["name"] for e in out if e["ph"] == "M"} == set(names.values())


def test_replay_of_an_empty_folder_fails(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no recorded drains"):
        replay(tmp_path, Session(0, "t", backend="interpreter"))


def test_graph_captured_while_paused_has_no_unknown_context(tmp_path: Path) -> None:
    # The shim records GRAPH_NODE entries with launch_context(), which is CTX_PAUSED while paused.
    write_drain(tmp_path, 0, entries_of((GRAPH_NODE, 100, CTX_PAUSED), (GRAPH_LAUNCH, 4, 16, 1300)),
                kernels_of(k(4, graph_node=100)))
    session = Session(0, "t", backend="interpreter")
    replay(tmp_path, session)
    assert not [n.name for n in session.profile.root.walk() if n.name.startswith("<unknown context")]


# --- library lookup and availability ------------------------------------------------------------


def test_candidates_order_and_dedupe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / "triton" / "backends" / "nvidia" / "lib" / "cupti"
    wheel = tmp_path / "nvidia" / "cu13" / "lib"
    toolkit = tmp_path / "cuda" / "extras" / "CUPTI" / "lib64"
    for folder in (lib, wheel, toolkit):
        folder.mkdir(parents=True)
    (lib / "libcupti.so.12").write_bytes(b"")
    (lib / "libcupti.so").symlink_to("libcupti.so.12")  # the same file twice: listed once
    (lib / "libcupti.so.2025.1.1").write_bytes(b"")
    (wheel / "libcupti.so.13").write_bytes(b"")
    (toolkit / "libcupti.so").write_bytes(b"")
    dirs = {"triton": [tmp_path / "triton"], "nvidia": [tmp_path / "nvidia"]}
    monkeypatch.setattr(library, "_package_dirs", lambda name: dirs.get(name, []))
    monkeypatch.setattr(library, "_loaded", lambda: [])
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv(library.ENV, str(lib / "libcupti.so.2025.1.1"))
    got = library.candidates()
    assert got[:4] == [("$DEUTERON_CUPTI_LIB", lib / "libcupti.so.2025.1.1"),
                       ("triton wheel", lib / "libcupti.so"),
                       ("nvidia-cuda-cupti wheel", wheel / "libcupti.so.13"),
                       ("CUDA toolkit", toolkit / "libcupti.so")]
    assert all(source == "CUDA toolkit" for source, _ in got[4:])
    assert len({path.resolve() for _, path in got}) == len(got)

    missing = tmp_path / "nowhere" / "libcupti.so"  # kept although absent, so the load error names it
    monkeypatch.setenv(library.ENV, str(missing))
    monkeypatch.setattr(library, "_loaded", lambda: [wheel / "libcupti.so.13"])
    got = library.candidates()
    assert got[:3] == [("$DEUTERON_CUPTI_LIB", missing), ("already loaded", wheel / "libcupti.so.13"),
                       ("triton wheel", lib / "libcupti.so")]
    monkeypatch.delenv(library.ENV)
    assert all(source != "$DEUTERON_CUPTI_LIB" for source, _ in library.candidates())


@pytest.fixture
def unchecked(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Forget the once-per-process availability check (restored after the test)."""
    monkeypatch.setattr(library, "_checked", False)
    monkeypatch.setattr(library, "_reason_cache", None)
    monkeypatch.setattr(library, "_loaded_from", None)
    return monkeypatch


def test_unavailable_on_this_machine(unchecked: pytest.MonkeyPatch) -> None:
    reason = library.unavailable_reason()
    if reason is None:
        pytest.skip("the CUPTI backend can run here")
    assert ("NVIDIA" if library.shim is not None else "shim") in reason
    assert library.unavailable_reason() is reason  # checked once
    with pytest.raises(BackendError) as info:
        resolve("cupti")
    assert reason in str(info.value) and "--backend interpreter" in str(info.value)
    assert resolve("auto").name == "interpreter"


def _fail(path: str) -> None:
    raise OSError(f"cannot open {path}")


@pytest.mark.parametrize("devices, load, found, expected", [
    ("libcuda.so.1 missing", _fail, True, "no NVIDIA GPU: libcuda.so.1 missing"),
    (0, _fail, True, "no NVIDIA GPU: the driver reports no CUDA devices"),
    (1, _fail, True, "libcupti could not be loaded: /x/libcupti.so ($DEUTERON_CUPTI_LIB): cannot open /x/"),
    (1, _fail, False, "libcupti was not found"),
    (1, lambda path: None, True, None),
    (None, _fail, True, "the native CUPTI shim is not built"),
])
def test_unavailable_reason_per_cause(
    unchecked: pytest.MonkeyPatch, devices: object, load: Callable[[str], None], found: bool,
    expected: str | None,
) -> None:
    shim = None if devices is None else SimpleNamespace(cuda_devices=lambda: devices, load=load)
    unchecked.setattr(library, "shim", shim)
    unchecked.setattr(library, "candidates", lambda: [(f"${library.ENV}", Path("/x/libcupti.so"))] * found)
    reason = library.unavailable_reason()
    if expected is None:
        assert reason is None and library.loaded_library() == ("$DEUTERON_CUPTI_LIB", Path("/x/libcupti.so"))
    else:
        assert reason is not None and reason.startswith(expected) and library.loaded_library() is None


def test_unique_rows_matches_numpys_rows_and_order() -> None:
    rng = np.random.default_rng(7)
    cases = [np.zeros((0, 7), np.uint64), np.ones((1, 7), np.uint64), np.full((50, 7), 3, np.uint64)]
    for distinct in (1, 2, 40, 5000):
        n = int(rng.integers(1, 20000))
        pools = [rng.integers(0, 2**63, size=distinct, dtype=np.uint64) for _ in range(7)]
        cases.append(np.stack([rng.choice(pool, size=n) for pool in pools], axis=1))
    for keys in cases:
        groups, group_of = unique_rows(keys)
        if len(keys):
            expected, inverse = np.unique(keys, axis=0, return_inverse=True)
            assert (groups == expected).all() and (group_of == inverse.reshape(-1)).all()
        else:
            assert len(groups) == len(group_of) == 0
