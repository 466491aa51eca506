"""Typed arrays for the web UI in one buffer: ``b"DTP1"``, a little-endian u32 header length, the
header JSON ``{"arrays": [{"name", "dtype", "offset", "length"}]}``, then each array 8-byte aligned
(offsets from the buffer's start). The browser maps them as typed arrays without copying or
parsing numbers (``frontend/src/data.ts`` reads it): a million trace events are 22 MB of arrays,
where JSON would be several times that and slow to parse."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

MAGIC = b"DTP1"
DTYPES = {
    np.dtype("<f8"): "f64",
    np.dtype("<u4"): "u32",
    np.dtype("<i4"): "i32",
    np.dtype("<u2"): "u16",
    np.dtype("u1"): "u8",
}


def _aligned(n: int) -> int:
    return (n + 7) & ~7


def pack(arrays: dict[str, np.ndarray]) -> bytes:
    """One buffer of the arrays (each must have one of the dtypes above, little-endian)."""
    entries: list[dict[str, object]] = []
    for name, array in arrays.items():
        dtype = DTYPES.get(array.dtype)
        if dtype is None:
            raise TypeError(f"{name}: dtype {array.dtype} cannot be packed for the web UI")
        entries.append({"name": name, "dtype": dtype, "offset": 0, "length": int(array.size)})
    offsets: list[int] = []
    # The header holds the offsets, which depend on the header's length: lay out with a header
    # padded to a fixed width so one pass settles both.
    sketch = json.dumps({"arrays": entries}).encode()
    head = _aligned(8 + len(sketch) + 16 * len(entries) + 16)
    offset = head
    for entry, array in zip(entries, arrays.values(), strict=True):
        entry["offset"] = offset
        offsets.append(offset)
        offset = _aligned(offset + array.nbytes)
    header = json.dumps({"arrays": entries}).encode()
    if 8 + len(header) > head:
        raise AssertionError("packed header outgrew its room")  # pragma: no cover - sized above
    out = bytearray(offset)
    out[:4] = MAGIC
    out[4:8] = struct.pack("<I", len(header))
    out[8 : 8 + len(header)] = header
    for start, array in zip(offsets, arrays.values(), strict=True):
        out[start : start + array.nbytes] = np.ascontiguousarray(array).tobytes()
    return bytes(out)


def unpack(data: bytes) -> dict[str, np.ndarray]:
    """The arrays back (tests and tools; the browser has its own reader)."""
    if data[:4] != MAGIC:
        raise ValueError("not a packed buffer")
    (length,) = struct.unpack("<I", data[4:8])
    header = json.loads(data[8 : 8 + length])
    kinds: dict[str, Any] = {v: k for k, v in DTYPES.items()}
    out: dict[str, np.ndarray] = {}
    for a in header["arrays"]:
        out[a["name"]] = np.frombuffer(
            data, dtype=kinds[a["dtype"]], count=int(a["length"]), offset=int(a["offset"])
        )
    return out
