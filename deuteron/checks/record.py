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

from ..backends.interpreter import adapter

FORMAT = "deuteron-access-record"
VERSION = 1
DEFAULT_LIMIT = 4_000_000
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


class AccessRecorder:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self.launches: list[dict[str, Any]] = []
        self.rows: list[tuple[int, int, int, int, int, int, int]] = []
        self.chunks: list[np.ndarray] = []
        self.lanes = 0
        self.dropped = 0
        self.seq = -1
        self.launch: adapter.LaunchInfo | None = None
        self.programs: list[list[int]] = []

    def begin(self, launch: adapter.LaunchInfo) -> None:
        self.launch = launch
        self.programs = []
        self.launches.append(
            {
                "index": launch.index,
                "kernel": launch.kernel,
                "file": launch.file,
                "grid": list(launch.grid),
                "tensors": [
                    {
                        "name": t.name,
                        "shape": list(t.shape),
                        "strides": list(t.strides),
                        "dtype": t.dtype,
                        "element_size": t.element_size,
                        "storage": t.storage,
                        "offset": t.data_ptr - launch.storages[t.storage].start,
                    }
                    for t in launch.tensors
                ],
                "storages": [{"nbytes": s.nbytes, "granule": s.granule} for s in launch.storages],
                "programs": self.programs,
            }
        )

    def program(self, seq: int, pid: tuple[int, int, int]) -> None:
        self.seq = seq
        self.programs.append(list(pid))

    def access(self, kind: int, addresses: np.ndarray, storage: int, site: int) -> None:
        launch = self.launch
        if launch is None:
            return
        n = int(addresses.size)
        count = 0
        if self.lanes + n <= self.limit:
            offsets = (addresses - np.uint64(launch.storages[storage].start)).astype(np.int64)
            self.chunks.append(offsets)
            count = n
        else:
            self.dropped += n
        self.rows.append((len(self.launches) - 1, self.seq, kind, storage, site, self.lanes, count))
        self.lanes += count

    def end(self) -> None:
        self.launch = None

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        used = sorted({r[4] for r in self.rows if r[4] >= 0})
        site_index = {s: i for i, s in enumerate(used)}
        rows = np.array(
            [(a, b, c, d, site_index.get(e, -1), f, g) for a, b, c, d, e, f, g in self.rows], dtype=ROW
        )
        header = {
            "format": FORMAT,
            "version": VERSION,
            "lanes": self.lanes,
            "dropped_lanes": self.dropped,
            "limit": self.limit,
            "sites": [
                {
                    "file": adapter.sites[s].file,
                    "line": adapter.sites[s].line,
                    "function": adapter.sites[s].function,
                }
                for s in used
            ],
            "launches": self.launches,
        }
        offsets = np.concatenate(self.chunks) if self.chunks else np.zeros(0, dtype=np.int64)
        with path.open("wb") as f:
            np.savez_compressed(
                f,
                header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
                accesses=rows,
                offsets=offsets,
            )
        return path


def read(path: str | Path) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """Read a record back (header, accesses, offsets); raises ValueError if it is not one."""
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(bytes(data["header"]).decode())
            accesses, offsets = data["accesses"], data["offsets"]
    except (OSError, KeyError, ValueError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a deuteron access record ({exc})") from None
    if header.get("format") != FORMAT:
        raise ValueError(f"{path} is not a deuteron access record (format {header.get('format')!r})")
    return header, accesses, offsets
