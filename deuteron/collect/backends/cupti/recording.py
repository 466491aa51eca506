"""Raw CUPTI drains saved as fixtures (``DEUTERON_CUPTI_RECORD=folder``), for CI to replay
without a GPU (:mod:`.replay`): the shim's buffers as they came, and beside them the tables that
give their numbers a meaning (kernel names, the session's context and state ids, threads, launch
metadata, the clock offset, the framework contexts' places)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from deuteron.collect.backends.cupti import records
from deuteron.collect.backends.port import RecordedTable
from deuteron.collect.deferred import resolved


class DrainTables(Protocol):
    """What a recording reads of the CUPTI backend beside the buffers."""

    threads: dict[int, int]
    meta_table: dict[int, tuple[str | None, dict[str, Any]]]
    clock_offset: int


def name_pointers(raw_kernels: bytes) -> list[int]:
    """The kernel name pointers a buffer of kernel records uses, each once."""
    return [int(p) for p in np.unique(records.kernels(raw_kernels)["name_ptr"]).tolist()]


def save_drain(
    stem: Path,
    raw_entries: bytes,
    raw_kernels: bytes,
    names: dict[int, str],
    tables: dict[str, RecordedTable],
    backend: DrainTables,
) -> None:
    """``stem.entries``, ``stem.kernels`` and ``stem.json`` (``tables``: the session's recorded
    tables, its contexts and states and its frameworks' places)."""
    stem.with_suffix(".entries").write_bytes(raw_entries)
    stem.with_suffix(".kernels").write_bytes(raw_kernels)
    tables = dict(tables)
    meta = {
        "names": {str(ptr): name for ptr, name in names.items()},
        "contexts": tables.pop("contexts").table(),
        "states": tables.pop("states").table(),
        "threads": backend.threads,
        "metas": {str(k): (v[0], resolved(v[1])) for k, v in backend.meta_table.items()},
        "offset": backend.clock_offset,
    }
    for name, table in tables.items():  # the frameworks' places
        meta[name] = table.table()
    stem.with_suffix(".json").write_text(json.dumps(meta))
