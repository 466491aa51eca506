"""A joined trace in a DuckDB database file, for ``deuteron serve``'s level of detail: the page asks
for a window of time at a width in pixels, and the server answers from here by a query instead of
holding and sending every event (:mod:`deuteron.render.web.trace_window` asks).

**Why DuckDB.** A job of 64 ranks' traces is 2 GB of JSON and five million events; reading the JSON
costs minutes, so what was read is kept, and windows over it are range scans and group-bys that a
columnar engine runs in milliseconds, out of core when it must. Perfetto's trace processor would
answer such queries too, but it downloads its binary at run time, and GPU machines often have no
network; Arrow or Parquet files alone store columns but run no query. DuckDB is a pip package
(``deuteron[traces]``), embedded, with no server and no download.

**The file** (``docs/files.md``, "Trace store"): table ``events`` (one row per event, sorted by
start, so a window's rows are a range of row groups), table ``flows`` (the arrows), and table
``meta`` (key, JSON value): the format's name and version, the trace's ``TraceRef`` without its
events, each lane's deepest nesting, the sources it was made from and the notes said on reading.

**The cache.** Stores live in ``$DEUTERON_CACHE_DIR``, else ``$XDG_CACHE_HOME/deuteron/traces``,
else ``~/.cache/deuteron/traces``, named by a hash of the sources (absolute path, size,
modification time in ns), the store's version and Deuteron's version: a second ``deuteron serve``
of the same files opens the store without parsing any JSON, and a changed file makes a new one.
A store is written under a temporary name and renamed when complete, so a build that is killed
leaves nothing that could be opened half-written.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deuteron.formats.files import FormatError, OutputError
from deuteron.formats.trace_columns import ARGS_BYTES_ENV
from deuteron.version import __version__

FORMAT = "deuteron-trace-store"
VERSION = 1
CACHE_ENV = "DEUTERON_CACHE_DIR"
SUFFIX = ".duckdb"
STALE_TEMP_S = 24 * 3600  # a temporary store this old is a build that was killed: removed
# Each table's columns, in order, with DuckDB's types (the numpy arrays given must fit them).
EVENT_COLUMNS = (
    ("start", "DOUBLE"),  # ns from the trace's start_ns (its earliest event)
    ("dur", "DOUBLE"),  # ns
    ("reach", "DOUBLE"),  # the latest end of this and every earlier row: a window's lower bound
    ("lane", "USMALLINT"),  # the lane's place in display order (TraceRef.lanes)
    ("depth", "UTINYINT"),  # nesting level within the lane
    ("name", "UINTEGER"),  # index into TraceRef.names
    ("cat", "UTINYINT"),  # index into TraceRef.cats
    ("stack", "UINTEGER"),  # index into TraceRef.stacks (0: none)
    ("args", "UINTEGER"),  # index into TraceRef.arg_sets (0: none)
)
FLOW_COLUMNS = (
    ("from_lane", "USMALLINT"),
    ("from_ns", "DOUBLE"),
    ("to_lane", "USMALLINT"),
    ("to_ns", "DOUBLE"),
)


def available() -> bool:
    """Whether DuckDB can be imported (``pip install deuteron[traces]``)."""
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


def cache_dir() -> Path:
    """Where stores are kept (see the module)."""
    chosen = os.environ.get(CACHE_ENV, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "deuteron" / "traces"


def stamps(sources: Sequence[str]) -> list[dict[str, Any]]:
    """Each source's absolute path, size and modification time (ns): what names its store."""
    out = []
    for source in sources:
        path = os.path.abspath(source)
        try:
            st = os.stat(path)
        except OSError as exc:
            raise FormatError(f"{source}: cannot read it ({exc.strerror or exc})") from None
        out.append({"path": path, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    return out


def store_path(sources: Sequence[str]) -> Path:
    """The store of these sources (in this order) in the cache, whether it exists or not. The args
    budget is part of the name: a store keeps the args its reader kept."""
    key = {
        "format": FORMAT,
        "version": VERSION,
        "deuteron": __version__,
        "args_budget": os.environ.get(ARGS_BYTES_ENV, ""),
        "sources": stamps(sources),
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return cache_dir() / f"{digest}{SUFFIX}"


def write(
    path: Path, events: Mapping[str, np.ndarray], flows: Mapping[str, np.ndarray], meta: Mapping[str, Any]
) -> Path:
    """Write a store (see the module) atomically: built under a temporary name in the same folder,
    checkpointed and closed, then renamed over ``path``. ``events`` holds every column of
    :data:`EVENT_COLUMNS` but ``reach`` (computed here), sorted by start; OutputError (one line)
    when the folder cannot be written."""
    import duckdb

    start = np.asarray(events["start"], dtype=np.float64)
    if len(start) > 1 and bool(np.any(np.diff(start) < 0)):
        raise ValueError("a trace store's events must be sorted by start")
    ends = start + np.asarray(events["dur"], dtype=np.float64)
    columns = dict(events, reach=np.maximum.accumulate(ends) if len(ends) else ends)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _remove_stale(path.parent)
        fd, temp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        os.unlink(temp)  # DuckDB makes the file itself; the name was only reserved
    except OSError as exc:
        raise OutputError(_unwritable(path, exc)) from None
    try:
        con = duckdb.connect(temp)
        try:
            _fill(con, columns, flows, meta)
        finally:
            con.close()
        os.replace(temp, path)
    except (OSError, duckdb.IOException) as exc:
        raise OutputError(_unwritable(path, exc)) from None
    finally:
        for leftover in (temp, temp + ".wal"):
            if os.path.exists(leftover):
                os.unlink(leftover)
    return path


def _fill(
    con: Any, columns: Mapping[str, np.ndarray], flows: Mapping[str, np.ndarray], meta: Mapping[str, Any]
) -> None:
    """The three tables, each column cast to its type; rows keep their order (DuckDB preserves
    the insertion order of one statement's rows)."""
    for table, spec, arrays in (("events", EVENT_COLUMNS, columns), ("flows", FLOW_COLUMNS, flows)):
        con.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {t}' for n, t in spec)})")
        con.register("incoming", {n: np.ascontiguousarray(arrays[n]) for n, _ in spec})
        con.execute(f"INSERT INTO {table} SELECT {', '.join(n for n, _ in spec)} FROM incoming")
        con.unregister("incoming")
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    rows = {"format": FORMAT, "format_version": VERSION, **meta}
    con.executemany("INSERT INTO meta VALUES (?, ?)", [[k, json.dumps(v)] for k, v in rows.items()])
    con.execute("CHECKPOINT")


def _unwritable(path: Path, exc: BaseException) -> str:
    return (
        f"cannot write the trace store {path} ({getattr(exc, 'strerror', None) or exc}); set "
        f"{CACHE_ENV} to a writable folder, or give --no-lod"
    )


def _remove_stale(folder: Path) -> None:
    """Temporary stores left by builds that were killed a day ago or more."""
    now = time.time()
    for temp in folder.glob(".*.tmp*"):
        try:
            if now - temp.stat().st_mtime > STALE_TEMP_S:
                temp.unlink()
        except OSError:  # another build removed it first
            pass


class TraceStore:
    """One store, open read-only. A DuckDB connection must not be used by two threads at once and
    the server answers on a thread per request: each query runs on a cursor of its own (a cursor
    is a connection to the same database), made under a lock."""

    def __init__(self, path: Path, con: Any, meta: dict[str, Any]) -> None:
        self.path = path
        self.meta = meta
        self._con = con
        self._lock = threading.Lock()

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        """The result's columns as arrays."""
        with self._lock:
            cursor = self._con.cursor()
        try:
            return dict(cursor.execute(sql, dict(params or {})).fetchnumpy())
        finally:
            cursor.close()

    def close(self) -> None:
        self._con.close()


def open_store(path: Path) -> TraceStore | None:
    """The store at ``path``; None when there is none, or it is not a store of this version (it is
    then removed, to be built again)."""
    import duckdb

    if not path.is_file():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        _discard(path)
        return None
    try:
        rows = con.execute("SELECT key, value FROM meta").fetchall()
        meta = {str(k): json.loads(v) for k, v in rows}
    except (duckdb.Error, ValueError):
        meta = {}
    if meta.get("format") != FORMAT or meta.get("format_version") != VERSION:
        con.close()
        _discard(path)
        return None
    return TraceStore(path, con, meta)


def _discard(path: Path) -> None:
    try:
        path.unlink()
    except OSError:  # another process discarded it, or the folder is read-only: built elsewhere then
        pass
