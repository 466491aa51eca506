"""The spans of ``-c torch`` frames for a trace: what the op probe's buffer holds, read once.

With a trace asked for, the op probe (``_torch_ops.cpp``) writes each timed frame it closes
(module, backward node, user scope, observed op) into one fixed buffer: its place id, the
thread (``pthread_self()``, which is Python's ``threading.get_ident()``), and its start and end on
``CLOCK_MONOTONIC`` (``time.perf_counter_ns()``'s clock, the session's), so the spans join the
trace's thread lanes as they are. Frames past ``LIMIT`` are counted, not kept.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

from deuteron.model.tree import Node

LIMIT = 1_000_000  # spans kept (32 bytes each)
DTYPE = np.dtype([("place_id", "<u4"), ("pad", "<u4"), ("thread", "<u8"), ("t0", "<u8"), ("t1", "<u8")])


def read(
    lib: Any, place: Callable[[int], Node], start: int = 0
) -> tuple[list[tuple[Node, int, int, int]], int]:
    """The kept spans from the ``start``-th on (those before were written with an earlier part of
    a flushed run) as (node, start ns, end ns, thread ident), ``place`` turning a place id (a trie
    node) into the profile's node, and how many spans were not kept."""
    count = int(lib.deut_span_count())
    address = lib.deut_span_data()
    kept = min(count, LIMIT)
    if not address or kept <= start:
        return [], count - kept
    size = DTYPE.itemsize
    raw = (ctypes.c_char * ((kept - start) * size)).from_address(address + start * size)
    table = np.frombuffer(bytes(raw), dtype=DTYPE)
    nodes: dict[int, Node] = {}
    out = []
    columns = [table[field].tolist() for field in ("place_id", "thread", "t0", "t1")]
    for place_id, thread, t0, t1 in zip(*columns, strict=True):
        node = nodes.get(place_id)
        if node is None:
            node = nodes[place_id] = place(place_id)
        out.append((node, t0, t1, thread))
    return out, count - kept
