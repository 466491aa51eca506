"""Files read by a pool of processes (``deuteron serve`` of a job's rank traces): the same columns
as one by one, in order, with progress; a damaged file is one line; fork only where it is safe."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from deuteron.formats import FormatError, chrome_trace
from deuteron.process import parallel
from tests.helpers.rank_traces import unpacked


def test_traces_read_in_parallel_are_the_traces_read_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = unpacked("ddp", tmp_path, only=".chrome_trace")
    paths = [str(folder / f"deuteron.rank{r}.chrome_trace") for r in (0, 1)]
    monkeypatch.setattr(parallel, "fork_context", lambda: multiprocessing.get_context("fork"))
    seen: list[tuple[int, int, int, int]] = []
    pooled = parallel.map_files(chrome_trace.read_columns, paths, lambda *done: seen.append(done))
    sizes = [os.path.getsize(p) for p in paths]
    assert [s[:2] for s in seen] == [(1, 2), (2, 2)] and seen[-1][2:] == (sum(sizes), sum(sizes))
    assert seen[0][2] in sizes
    monkeypatch.setattr(parallel, "fork_context", lambda: None)
    for got, path in zip(pooled, paths, strict=True):
        want = chrome_trace.read_columns(path)
        for key in ("start", "dur", "name", "cat", "lane", "stack", "args", "flows"):
            np.testing.assert_array_equal(getattr(got, key), getattr(want, key), err_msg=key)
        assert (got.names, got.lanes, got.arg_sets, got.info) == (
            want.names,
            want.lanes,
            want.arg_sets,
            want.info,
        )
    serial = parallel.map_files(chrome_trace.read_columns, paths)
    assert [len(c.start) for c in serial] == [len(c.start) for c in pooled]


def test_a_damaged_trace_among_many_is_one_line(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}]}))
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}, {"ph": "X", "ts": ')
    with pytest.raises(FormatError, match="bad.json: the trace ends early"):
        parallel.map_files(chrome_trace.read_columns, [str(good), str(bad), str(good)])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is used on Linux only")
def test_the_pool_forks_only_a_process_of_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """fork runs nothing of ``__main__`` again, but copies only the thread that forks: a lock
    another thread holds would stay held in the workers, so then the traces are read here."""
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    context = parallel.fork_context()
    assert context is not None and context.get_start_method() == "fork"
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert parallel.fork_context() is None
