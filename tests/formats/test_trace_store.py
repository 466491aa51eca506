"""The trace store (DuckDB) as a file: what it holds, read back as written; where it lives and how
it is named (a changed source or another version is another store); written atomically (a build
that fails leaves nothing, a temporary one killed long ago is swept); and the traces read in
parallel exactly as one by one."""

from __future__ import annotations

import os
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from deuteron.formats import trace_store
from deuteron.formats.trace_columns import ARGS_BYTES_ENV


def _events(n: int = 5) -> dict[str, np.ndarray]:
    return {
        "start": np.arange(n, dtype=np.float64) * 10.0,
        "dur": np.full(n, 4.0) + np.arange(n),
        "lane": np.arange(n, dtype=np.uint16) % 2,
        "depth": np.zeros(n, dtype=np.uint8),
        "name": np.arange(n, dtype=np.uint32),
        "cat": np.ones(n, dtype=np.uint8),
        "stack": np.arange(n, dtype=np.uint32) + 7,
        "args": np.arange(n, dtype=np.uint32) + 70_000,
    }


def _flows() -> dict[str, np.ndarray]:
    return {
        "from_lane": np.array([0], dtype=np.uint16),
        "from_ns": np.array([1.5]),
        "to_lane": np.array([1], dtype=np.uint16),
        "to_ns": np.array([12.25]),
    }


def test_a_store_reads_back_what_was_written_in_order(tmp_path: Path) -> None:
    path = trace_store.write(
        tmp_path / "t.duckdb", _events(), _flows(), {"ref": {"count": 5}, "notes": ["x"]}
    )
    store = trace_store.open_store(path)
    assert store is not None
    got = store.query("SELECT * FROM events ORDER BY rowid")
    for key, want in _events().items():
        np.testing.assert_array_equal(got[key], want, err_msg=key)
        assert got[key].dtype == want.dtype, key
    np.testing.assert_array_equal(got["reach"], [4.0, 15.0, 26.0, 37.0, 48.0])
    flows = store.query("SELECT * FROM flows")
    assert {k: v.tolist() for k, v in flows.items()} == {k: v.tolist() for k, v in _flows().items()}
    assert store.meta == {
        "format": "deuteron-trace-store",
        "format_version": trace_store.VERSION,
        "ref": {"count": 5},
        "notes": ["x"],
    }
    columns = store.query("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'events'")
    got_types = list(zip(columns["column_name"].tolist(), columns["data_type"].tolist(), strict=True))
    assert got_types == list(trace_store.EVENT_COLUMNS)
    store.close()


def test_reach_keeps_a_long_event_that_started_early(tmp_path: Path) -> None:
    """``reach``, the latest end so far, never falls: a long first event holds it up."""
    events = _events(4)
    events["dur"] = np.array([100.0, 1.0, 1.0, 1.0])
    store = trace_store.open_store(trace_store.write(tmp_path / "t.duckdb", events, _flows(), {}))
    assert store is not None
    assert store.query("SELECT reach FROM events ORDER BY rowid")["reach"].tolist() == [100.0] * 4


def test_events_out_of_order_are_refused(tmp_path: Path) -> None:
    events = _events()
    events["start"] = events["start"][::-1].copy()
    with pytest.raises(ValueError, match="sorted by start"):
        trace_store.write(tmp_path / "t.duckdb", events, _flows(), {})
    assert not list(tmp_path.iterdir())


def test_a_failed_build_leaves_nothing_and_old_temporaries_are_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / ".abc.killed.tmp"
    old.write_bytes(b"half a store")
    os.utime(old, (time.time() - 2 * trace_store.STALE_TEMP_S,) * 2)
    young = tmp_path / ".abc.building.tmp"  # another serve's build, under way
    young.write_bytes(b"")

    def broken(*_args: object) -> None:
        raise duckdb.IOException("disk full")

    monkeypatch.setattr(trace_store, "_fill", broken)
    with pytest.raises(trace_store.OutputError, match=r"cannot write the trace store .*disk full.*--no-lod"):
        trace_store.write(tmp_path / "t.duckdb", _events(), _flows(), {})
    assert sorted(p.name for p in tmp_path.iterdir()) == [".abc.building.tmp"]


def test_an_unwritable_cache_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(trace_store.OutputError, match="DEUTERON_CACHE_DIR"):
        trace_store.write(blocker / "traces" / "t.duckdb", _events(), _flows(), {})


def test_a_store_of_another_version_or_damaged_is_removed(tmp_path: Path) -> None:
    path = trace_store.write(tmp_path / "t.duckdb", _events(), _flows(), {})
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '0' WHERE key = 'format_version'")
    con.close()
    assert trace_store.open_store(path) is None and not path.exists()
    path.write_bytes(b"not a database at all" * 100)
    assert trace_store.open_store(path) is None and not path.exists()
    assert trace_store.open_store(tmp_path / "none.duckdb") is None


def test_the_cache_folder_and_the_stores_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(trace_store.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert trace_store.cache_dir() == tmp_path / "xdg" / "deuteron" / "traces"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert trace_store.cache_dir() == tmp_path / "home" / ".cache" / "deuteron" / "traces"
    monkeypatch.setenv(trace_store.CACHE_ENV, str(tmp_path / "mine"))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("{}")
    b.write_text("{}")
    first = trace_store.store_path([str(a), str(b)])
    assert first.parent == tmp_path / "mine" and first.suffix == ".duckdb"
    monkeypatch.chdir(tmp_path)
    assert trace_store.store_path(["a.json", "b.json"]) == first  # absolute paths name it
    assert trace_store.store_path([str(b), str(a)]) != first  # the order of the ranks given too
    stat = a.stat()
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert trace_store.store_path([str(a), str(b)]) != first  # touched: another store
    moved = trace_store.store_path([str(a), str(b)])
    a.write_text("{} ")
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert trace_store.store_path([str(a), str(b)]) != moved  # same time, another size
    monkeypatch.setenv(ARGS_BYTES_ENV, "10")
    assert trace_store.store_path([str(a), str(b)]) != moved  # other args kept: another store
    monkeypatch.setattr(trace_store, "VERSION", trace_store.VERSION + 1)
    monkeypatch.delenv(ARGS_BYTES_ENV)
    assert trace_store.store_path([str(a), str(b)]) != moved


