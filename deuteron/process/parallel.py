"""Files read in parallel, by a pool of processes: one job, parsing many files, spread over cores.

Kept apart from the formats (which read one file each) and from their callers (which decide what
to read): the pool's start method, its progress and its errors are the same for every format.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
Progress = Callable[[int, int, int, int], None]  # (files done, files, bytes done, bytes)


def fork_context() -> Any:
    """Processes started by ``fork`` where that is safe: on Linux, from a process of one thread
    (``deuteron serve`` reads before it serves). The workers start at once and run nothing of the
    parent's ``__main__`` (``spawn`` and ``forkserver`` import it again: a caller's script without
    a ``__main__`` guard would run once per worker). None elsewhere: read one by one."""
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return None


def map_files(read: Callable[[str], T], paths: Sequence[str], progress: Progress | None = None) -> list[T]:
    """``read`` of each path, in the paths' order, by a pool of ``os.cpu_count()`` processes (one
    by one where :func:`fork_context` says no pool): parsing JSON costs about 30 MB/s a core, so 64
    ranks' 2 GB of traces take a minute on one core and seconds on many. Results cross back
    pickled (between our own processes; no file is read with pickle). ``progress`` is called as
    each file is done; the first error ``read`` raises is raised here, the pool shut down."""
    sizes = [os.path.getsize(p) if os.path.isfile(p) else 0 for p in paths]
    workers = min(os.cpu_count() or 1, len(paths))
    context = fork_context() if workers > 1 else None
    if context is None:
        out = []
        for i, path in enumerate(paths):
            out.append(read(path))
            if progress is not None:
                progress(i + 1, len(paths), sum(sizes[: i + 1]), sum(sizes))
        return out
    results: list[Any] = [None] * len(paths)
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context)
    try:
        jobs = {pool.submit(read, path): i for i, path in enumerate(paths)}
        done_bytes = 0
        for done, job in enumerate(concurrent.futures.as_completed(jobs), 1):
            i = jobs[job]
            results[i] = job.result()
            done_bytes += sizes[i]
            if progress is not None:
                progress(done, len(paths), done_bytes, sum(sizes))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results
