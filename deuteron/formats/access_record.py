"""``--record FILE``: the accesses of every checked launch, for the web UI to draw.

The file is a NumPy ``.npz`` (a zip of ``.npy`` arrays; read it with ``np.load(f)``, which
refuses pickled objects by default). Format ``deuteron-access-record`` version 1:

- ``header``: uint8, UTF-8 JSON: ``{"format", "version", "lanes", "dropped_lanes", "limit",
  "sites": [{"file", "line", "function"}], "launches": [{"index", "kernel", "file", "grid",
  "tensors": [{"name", "shape", "strides", "dtype", "element_size", "storage", "offset"}],
  "storages": [{"nbytes", "granule"}], "programs": [[x, y, z], ...]}]}``. A tensor's ``offset``
  is its first element's byte offset into its storage.
- ``accesses``: one row per access of one program to one storage: ``launch`` (index into
  launches), ``program`` (index into that launch's programs, in run order), ``kind`` (0 load,
  1 store, 2 atomic), ``storage``, ``site`` (index into sites), ``start`` and ``count`` (the
  slice of ``offsets`` holding its lanes; count 0 once the lane limit is reached).
- ``offsets``: int64 byte offsets from the storage's start, one per active in-bounds lane.

Size is bounded by ``limit`` lanes (8 bytes each); past it, rows still come but without lanes,
and ``dropped_lanes`` says how many were left out. Out-of-bounds lanes are in the findings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from . import FormatError

FORMAT = "deuteron-access-record"
VERSION = 1
ROW = np.dtype(
    [
        ("launch", "<u4"),
        ("program", "<u4"),
        ("kind", "u1"),
        ("storage", "<u2"),
        ("site", "<i4"),
        ("start", "<u8"),
        ("count", "<u4"),
    ]
)


def write(header: dict[str, Any], accesses: np.ndarray, offsets: np.ndarray, path: str | Path) -> Path:
    """Write a record; ``header`` gets the format's name and version."""
    path = Path(path)
    full = {"format": FORMAT, "version": VERSION, **header}
    with path.open("wb") as f:
        np.savez_compressed(
            f,
            header=np.frombuffer(json.dumps(full).encode(), dtype=np.uint8),
            accesses=accesses.astype(ROW, copy=False),
            offsets=offsets.astype(np.int64, copy=False),
        )
    return path


def read(path: str | Path) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """Read a record back (header, accesses, offsets); raises FormatError if it is not one."""
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(bytes(data["header"]).decode())
            accesses, offsets = data["accesses"], data["offsets"]
    except (OSError, KeyError, ValueError, json.JSONDecodeError) as exc:
        raise FormatError(f"{path} is not a deuteron access record ({exc})") from None
    if header.get("format") != FORMAT:
        raise FormatError(f"{path} is not a deuteron access record (format {header.get('format')!r})")
    return header, accesses, offsets
