"""The two binary layouts the shim hands over, as numpy dtypes, and their bulk decoding.

Kernel records are CUPTI's own ``CUpti_ActivityKernel*`` structures cut to their first 160
bytes, which have kept the same offsets from Kernel5 (CUDA 11) to Kernel10 (CUDA 13).
Launch entries are the shim's own 40-byte ``Entry`` (see ``_shim.c``). Decoding is
``np.frombuffer``: no per-record Python work, whatever the number of kernels.
"""

from __future__ import annotations

import numpy as np

KERNEL_RECORD_BYTES = 160
ENTRY_BYTES = 40

ACTIVITY_KERNEL = 3
ACTIVITY_CONCURRENT_KERNEL = 10

KERNEL_DTYPE = np.dtype(
    {
        "names": [
            "kind",
            "registers",
            "start",
            "end",
            "device",
            "context",
            "stream",
            "grid_x",
            "grid_y",
            "grid_z",
            "block_x",
            "block_y",
            "block_z",
            "static_shared",
            "dynamic_shared",
            "local_per_thread",
            "correlation",
            "name_ptr",
            "graph_node",
            "graph_id",
        ],
        "formats": [
            "<u4",
            "<u2",
            "<u8",
            "<u8",
            "<u4",
            "<u4",
            "<u4",
            "<i4",
            "<i4",
            "<i4",
            "<i4",
            "<i4",
            "<i4",
            "<i4",
            "<i4",
            "<u4",
            "<u4",
            "<u8",
            "<u8",
            "<u4",
        ],
        "offsets": [0, 6, 16, 24, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 92, 104, 144, 156],
        "itemsize": KERNEL_RECORD_BYTES,
    }
)

ENTRY_DTYPE = np.dtype(
    [
        ("key", "<u8"),
        ("ctx", "<u8"),
        ("ts", "<u8"),
        ("state", "<u4"),
        ("meta", "<u4"),
        ("kind", "<u2"),
        ("thread", "<u2"),
        ("op", "<u4"),  # the torch context's place (0: none; recordings before it have 0 here)
    ]
)
assert KERNEL_DTYPE.itemsize == KERNEL_RECORD_BYTES and ENTRY_DTYPE.itemsize == ENTRY_BYTES

# Entry kinds and context flags, as in _shim.c.
LAUNCH, GRAPH_LAUNCH, GRAPH_NODE, GRAPH_CLONE = 1, 2, 3, 4
CTX_OTHER_THREAD = 1 << 63
CTX_PAUSED = 1 << 62
CTX_FLAGS = CTX_OTHER_THREAD | CTX_PAUSED


class RecordError(ValueError):
    """A buffer whose size is not a whole number of records: a shim/reader mismatch."""


def kernels(raw: bytes | bytearray | memoryview) -> np.ndarray:
    if len(raw) % KERNEL_RECORD_BYTES:
        raise RecordError(f"kernel buffer of {len(raw)} bytes is not a multiple of {KERNEL_RECORD_BYTES}")
    out = np.frombuffer(raw, dtype=KERNEL_DTYPE)
    bad = (out["kind"] != ACTIVITY_CONCURRENT_KERNEL) & (out["kind"] != ACTIVITY_KERNEL)
    if bad.any():
        raise RecordError(
            f"{int(bad.sum())} records are not kernel records (kind {int(out['kind'][bad][0])})"
        )
    return out


def entries(raw: bytes | bytearray | memoryview) -> np.ndarray:
    if len(raw) % ENTRY_BYTES:
        raise RecordError(f"launch buffer of {len(raw)} bytes is not a multiple of {ENTRY_BYTES}")
    return np.frombuffer(raw, dtype=ENTRY_DTYPE)
