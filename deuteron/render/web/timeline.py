"""A trace for the web UI: ``TraceRef`` (``frontend/src/types.ts``) and its events packed as typed
arrays (:mod:`.packed`). Each event gets its nesting depth within its lane here, once, so the
browser only draws. Event names go as recorded (``names``), and as ``deuteron view`` shows them
(``display_names``: a C++ kernel's short name) and demangled in full (``full_names``), index for index."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from deuteron.formats.chrome_trace import TraceColumns
from deuteron.model.names import display_name
from deuteron.render.web.packed import pack


def depths(c: TraceColumns) -> np.ndarray:
    """Each event's nesting level in its lane (events sorted by start): how many earlier events
    of the lane are still open when it starts."""
    out = np.zeros(len(c.start), dtype=np.uint8)
    ends = (c.start + c.dur).tolist()
    starts = c.start.tolist()
    open_by_lane: dict[int, list[float]] = {}
    for i, lane in enumerate(c.lane.tolist()):
        stack = open_by_lane.setdefault(lane, [])
        begin = starts[i]
        while stack and stack[-1] <= begin:
            stack.pop()
        out[i] = min(len(stack), 255)
        stack.append(ends[i])
    return out


def lane_kinds(c: TraceColumns) -> list[str]:
    """A lane is a GPU stream when it holds only kernels (category "kernel"); a thread otherwise,
    also where kernels ran on it (the interpreter runs them on the launching thread)."""
    kernel = [i for i, name in enumerate(c.cats) if name in ("kernel", "gpu", "cuda")]
    is_kernel = np.isin(c.cat, kernel)
    lanes = max(len(c.lanes), 1)
    kernels = np.bincount(c.lane[is_kernel].astype(np.int64), minlength=lanes)
    others = np.bincount(c.lane[~is_kernel].astype(np.int64), minlength=lanes)
    return ["stream" if kernels[i] and not others[i] else "thread" for i in range(len(c.lanes))]


def trace_ref(c: TraceColumns, source: str, url: str) -> tuple[dict[str, Any], list[int]]:
    """The trace's ``TraceRef`` and its lanes' display order (threads first, then streams)."""
    kinds = lane_kinds(c)
    lanes = []
    several_processes = len({pid for pid, _tid, _label in c.lanes}) > 1
    for i, (pid, tid, label) in enumerate(c.lanes):
        kind = kinds[i]
        default = f"stream {tid}" if kind == "stream" else f"thread {tid}"
        if several_processes:
            default += f" (pid {pid})"
        lanes.append({"id": i, "name": label or default, "kind": kind})
    # Threads first, then streams, each by their first event.
    order = sorted(range(len(lanes)), key=lambda i: (lanes[i]["kind"] == "stream", i))
    ends = c.start + c.dur
    ref = {
        "name": os.path.basename(source),
        "source": source,
        "lanes": [lanes[i] for i in order],
        "names": c.names,  # as recorded (mangled C++ names too): the page's labels and hover
        "display_names": [display_name(n) for n in c.names],  # as deuteron view shows them
        "full_names": [display_name(n, full=True) for n in c.names],
        "cats": c.cats,
        "count": int(len(c.start)),
        "flows": int(len(c.flows)),
        "start_ns": float(c.start.min()) if len(c.start) else 0.0,
        "end_ns": float(ends.max()) if len(c.start) else 0.0,
        "events": url,
    }
    return ref, order


def trace_events(c: TraceColumns, order: list[int]) -> bytes:
    """The packed events (lanes renumbered in :func:`trace_ref`'s display order)."""
    position = np.zeros(max(len(c.lanes), 1), dtype=np.uint16)
    position[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.uint16)
    flows = c.flows
    return pack(
        {
            "start": c.start.astype("<f8"),
            "dur": c.dur.astype("<f8"),
            "flow_from_ns": flows[:, 1].astype("<f8"),
            "flow_to_ns": flows[:, 3].astype("<f8"),
            "name": c.name.astype("<u4"),
            "lane": position[c.lane].astype("<u2"),
            "flow_from_lane": position[flows[:, 0].astype(np.int64)].astype("<u2"),
            "flow_to_lane": position[flows[:, 2].astype(np.int64)].astype("<u2"),
            "cat": c.cat.astype("u1"),
            "depth": depths(c),
        }
    )
