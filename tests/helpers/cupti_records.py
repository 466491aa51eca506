"""CUPTI's raw records made by hand, through the backend's own decoder: the join and sharing
tests feed them to the backend without a GPU."""

from __future__ import annotations

import numpy as np

from deuteron.collect.backends.cupti import records
from deuteron.collect.backends.cupti.records import ENTRY_DTYPE, KERNEL_DTYPE

ENTRY_COLUMNS = ("kind", "key", "ctx", "ts", "state", "meta", "thread")


def entries_of(*rows: tuple[int, ...]) -> np.ndarray:
    """Launch entries from (kind, key, ctx, ts, state, meta, thread) prefixes, through the decoder."""
    arr = np.zeros(len(rows), ENTRY_DTYPE)
    for i, row in enumerate(rows):
        for name, value in zip(ENTRY_COLUMNS, row, strict=False):
            arr[name][i] = value
    return records.entries(arr.tobytes())


def kernel_row(
    corr: int, name: int = 111, start: int = 10_000, dur: int = 10, **extra: int
) -> dict[str, int]:
    """One kernel activity record's fields: correlation id, name pointer, start and end (ns)."""
    return {"correlation": corr, "name_ptr": name, "start": start, "end": start + dur, **extra}


def kernels_of(*rows: dict[str, int]) -> np.ndarray:
    """Kernel activity records (concurrent kernels on stream 7) from ``kernel_row`` dicts."""
    arr = np.zeros(len(rows), KERNEL_DTYPE)
    arr["kind"] = records.ACTIVITY_CONCURRENT_KERNEL
    arr["stream"] = 7
    for i, row in enumerate(rows):
        for name, value in row.items():
            arr[name][i] = value
    return records.kernels(arr.tobytes())
