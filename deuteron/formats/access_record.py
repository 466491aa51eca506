"""``--record FILE``: the accesses of every checked launch, for the web UI to draw.

The file is a NumPy ``.npz`` (a zip of ``.npy`` arrays; read it with ``np.load(f)``, which
refuses pickled objects by default). Format ``deuteron-access-record`` version 2 (version 1, read
too, had no masked-off lanes and no ``sources``):

- ``header``: uint8, UTF-8 JSON: ``{"format", "version", "lanes", "dropped_lanes", "limit",
  "sites": [{"file", "line", "function"}], "launches": [{"index", "kernel", "file", "grid",
  "tensors": [{"name", "shape", "strides", "dtype", "element_size", "storage", "offset"}],
  "storages": [{"nbytes", "granule"}], "programs": [[x, y, z], ...]}], "sources": {file: text}}``
  (``sources``, the kernels' source files as they were when checked, is optional). A tensor's ``offset``
  is its first element's byte offset into its storage.
- ``accesses``: one row per access of one program to one storage: ``launch`` (index into
  launches), ``program`` (index into that launch's programs, in run order), ``kind`` (0 load,
  1 store, 2 atomic; 3, 4, 5 the masked-off lanes of a load, store or atomic that still point
  inside their tensor's storage), ``storage``, ``site`` (index into sites), ``start`` and
  ``count`` (the slice of ``offsets`` holding its lanes; count 0 once the lane limit is reached).
- ``offsets``: int64 byte offsets from the storage's start, one per in-bounds lane.

Size is bounded by ``limit`` lanes (8 bytes each) of accesses, and as many masked-off lanes; past
it, rows still come but without lanes, and ``dropped_lanes`` (``dropped_masked_lanes``) says how
many were left out. Out-of-bounds lanes are in the findings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from deuteron.formats import FormatError, npz_record
from deuteron.formats.files import atomic_open, regular_file

FORMAT = "deuteron-access-record"
VERSION = 2
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


MEMBERS = {"header.npy", "accesses.npy", "offsets.npy"}


def write(header: dict[str, Any], accesses: np.ndarray, offsets: np.ndarray, path: str | Path) -> Path:
    """Write a record atomically; ``header`` gets the format's name and version."""
    full = {"format": FORMAT, "version": VERSION, **header}
    with atomic_open(path, "wb") as f:
        np.savez_compressed(
            f,
            header=np.frombuffer(json.dumps(full).encode(), dtype=np.uint8),
            accesses=accesses.astype(ROW, copy=False),
            offsets=offsets.astype(np.int64, copy=False),
        )
    return Path(path)


def read(path: str | Path) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """Read a record back (header, accesses, offsets); FormatError (a ValueError) if it is not one.

    Hostile files are expected: the zip's members, their uncompressed sizes (checked against the
    size limit before anything is inflated), every array's dtype and shape, the header's fields and
    every row's indices are checked."""
    regular_file(path, "deuteron access record")
    bad = f"{path} is not a deuteron access record"
    npz_record.checked_members(path, bad, lambda names: names == MEMBERS)
    raw_header, accesses, offsets = npz_record.load_arrays(path, bad, ["header", "accesses", "offsets"])
    if accesses.dtype != ROW or accesses.ndim != 1:
        raise FormatError(f"{bad}: its accesses have dtype {accesses.dtype}, shape {accesses.shape}")
    if offsets.dtype != np.int64 or offsets.ndim != 1:
        raise FormatError(f"{bad}: its offsets have dtype {offsets.dtype}, shape {offsets.shape}")
    header = npz_record.json_header(raw_header, bad, FORMAT)
    _check_header(header, bad)
    _check_rows(header, accesses, offsets, bad)
    return header, accesses, offsets


def _is_int(value: Any, low: int = 0, high: int = 1 << 62) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _check_header(header: dict[str, Any], bad: str) -> None:
    if not _is_int(header.get("version"), 1, 1 << 20) or header["version"] > VERSION:
        raise FormatError(f"{bad}: version {header.get('version')!r} (this Deuteron reads up to {VERSION})")
    sites, launches = header.get("sites"), header.get("launches")
    if not isinstance(sites, list) or not all(
        isinstance(s, dict) and isinstance(s.get("file"), str) and _is_int(s.get("line")) for s in sites
    ):
        raise FormatError(f"{bad}: its sites are damaged")
    if not isinstance(launches, list):
        raise FormatError(f"{bad}: its launches are damaged")
    sources = header.get("sources", {})
    if not isinstance(sources, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in sources.items()
    ):
        raise FormatError(f"{bad}: its sources are damaged")
    for i, launch in enumerate(launches):
        if not isinstance(launch, dict):
            raise FormatError(f"{bad}: launch {i} is damaged")
        storages, tensors, programs = launch.get("storages"), launch.get("tensors"), launch.get("programs")
        if not isinstance(storages, list) or not all(
            isinstance(s, dict) and _is_int(s.get("nbytes")) and _is_int(s.get("granule"), 1)
            for s in storages
        ):
            raise FormatError(f"{bad}: the storages of launch {i} are damaged")
        if not isinstance(tensors, list) or not all(
            isinstance(t, dict)
            and isinstance(t.get("name"), str)
            and isinstance(t.get("shape"), list)
            and all(_is_int(n) for n in t["shape"])
            and _is_int(t.get("storage"), 0, len(storages) - 1)
            for t in tensors
        ):
            raise FormatError(f"{bad}: the tensors of launch {i} are damaged")
        if not isinstance(programs, list) or not all(
            isinstance(p, list) and len(p) == 3 and all(_is_int(x) for x in p) for p in programs
        ):
            raise FormatError(f"{bad}: the programs of launch {i} are damaged")


def _check_rows(header: dict[str, Any], accesses: np.ndarray, offsets: np.ndarray, bad: str) -> None:
    """Every row's indices point inside the header's lists and the offsets array."""
    if not len(accesses):
        return
    launches = header["launches"]
    launch = accesses["launch"].astype(np.int64)
    if int(launch.max()) >= len(launches):
        raise FormatError(f"{bad}: a row names launch {int(launch.max())} of {len(launches)}")
    programs = np.array([len(x["programs"]) for x in launches], dtype=np.int64)
    storages = np.array([len(x["storages"]) for x in launches], dtype=np.int64)
    if np.any(accesses["program"] >= programs[launch]) or np.any(accesses["storage"] >= storages[launch]):
        raise FormatError(f"{bad}: a row names a program or storage its launch does not have")
    if np.any(accesses["kind"] > 5):
        raise FormatError(f"{bad}: a row has an unknown access kind")
    site = accesses["site"]
    if np.any((site < -1) | (site >= len(header["sites"]))):
        raise FormatError(f"{bad}: a row names a site the header does not have")
    end = accesses["start"].astype(np.uint64) + accesses["count"].astype(np.uint64)
    if np.any(end > np.uint64(len(offsets))):
        raise FormatError(f"{bad}: a row's lanes run past the end of the offsets")
