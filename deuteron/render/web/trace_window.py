"""Level of detail for traces too large to send whole: the events live in a store
(:mod:`deuteron.formats.trace_store`, DuckDB) and the page asks for a window of time at its width
in pixels; the answer holds the events as they are where they are wider than a pixel, and one
merged event per lane, depth and pixel where they are not. So what reaches the browser follows the
screen's pixels, not the trace's size: five million events are an overview of a few hundred
thousand, and a zoomed window holds the real events.

A window is packed as :func:`deuteron.render.web.timeline.trace_events` packs a whole trace (the
same keys, ``start`` in the trace's own ns as there, the page subtracting ``start_ns``), plus
``count`` (u32): 1 for a real event, else how many events one merged event stands for. A merged
event spans its events (the earliest start to the latest end), is named and coloured after the
longest of them, and carries no call stack or args. Each lane's deepest nesting is known up front
(``TraceRef.lane_depths``), so rows keep their place at every window."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs

import numpy as np

from deuteron.formats import trace_store
from deuteron.formats.chrome_trace import TraceColumns
from deuteron.formats.trace_store import TraceStore
from deuteron.render.web.packed import pack
from deuteron.render.web.timeline import context_column, depths, lane_positions, trace_ref

LOD_EVENTS = 500_000  # more events than this in all (a job's ranks together): level of detail
OVERVIEW_PX = 4096  # the overview (the trace's ``events`` answer) is the whole span at this width
MAX_PX = 20_000  # a window's width in pixels is clamped to 1..MAX_PX
FLOW_EVENTS = 50_000  # arrows are sent only for windows of fewer events than this
WINDOW_KEYS = ("t0", "t1", "px")

# The events overlapping [t0, t1]: ``start`` and ``reach`` (the latest end so far) both grow with
# the row, so DuckDB skips the row groups outside the window by their min/max alone. Events at
# least a bucket wide go as they are; narrower ones are grouped per lane, depth and bucket.
_WINDOW = """
WITH w AS (
    SELECT rowid AS k, start, dur, lane, depth, name, cat, stack, args FROM events
    WHERE start <= $t1 AND reach >= $t0 AND start + dur >= $t0
)
SELECT start, dur, lane, depth, name, cat, stack, args, 1 AS count, k FROM w WHERE dur >= $b
UNION ALL
SELECT min(start) AS start,
    -- a group of one is its event, exactly (its end less its start could differ in the last bit)
    CASE WHEN count(*) = 1 THEN any_value(dur) ELSE max(start + dur) - min(start) END AS dur,
    lane, depth, arg_max(name, dur) AS name, arg_max(cat, dur) AS cat,
    CASE WHEN count(*) = 1 THEN any_value(stack) ELSE 0 END AS stack,
    CASE WHEN count(*) = 1 THEN any_value(args) ELSE 0 END AS args,
    count(*) AS count, min(k) AS k
FROM w WHERE dur < $b
GROUP BY lane, depth, floor((start - $t0) / $b)
ORDER BY start, k
"""
_FLOWS = """
SELECT from_lane, from_ns, to_lane, to_ns FROM flows
WHERE from_ns BETWEEN $t0 AND $t1 AND to_ns BETWEEN $t0 AND $t1
ORDER BY rowid
"""


class BadWindow(ValueError):
    """A window request that cannot be answered (a missing, repeated, unknown or non-numeric
    parameter): one line for a 400 answer, never a traceback."""


def store_columns(
    c: TraceColumns, order: list[int]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[int]]:
    """The store's events and flows as :func:`~deuteron.render.web.timeline.trace_events` would
    pack them (lanes in display order, each event's depth), times from the trace's earliest start;
    and each lane's deepest depth in display order."""
    n = len(c.start)
    start_ns = float(c.start.min()) if n else 0.0
    position = lane_positions(c, order)
    lanes = position[c.lane].astype(np.uint16)
    depth = depths(c)
    deepest = np.zeros(max(len(order), 1), dtype=np.int64)
    np.maximum.at(deepest, lanes.astype(np.int64), depth.astype(np.int64))
    events: dict[str, np.ndarray] = {
        "start": c.start - start_ns,
        "dur": c.dur.astype(np.float64),
        "lane": lanes,
        "depth": depth,
        "name": c.name.astype(np.uint32),
        "cat": c.cat.astype(np.uint8),
        "stack": context_column(c.stack, n),
        "args": context_column(c.args, n),
    }
    f = c.flows.reshape(-1, 4)
    flows: dict[str, np.ndarray] = {
        "from_lane": position[f[:, 0].astype(np.int64)].astype(np.uint16),
        "from_ns": f[:, 1] - start_ns,
        "to_lane": position[f[:, 2].astype(np.int64)].astype(np.uint16),
        "to_ns": f[:, 3] - start_ns,
    }
    return events, flows, [int(d) for d in deepest[: len(order)]]


def build(
    c: TraceColumns,
    name: str,
    sources: Sequence[str],
    lane_ranks: list[str] | None = None,
    extra: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> TraceStore:
    """The store of these columns (read from ``sources``, shown as ``name``), written into the
    cache and opened; one built before from the same files is opened instead. ``extra`` joins the
    TraceRef (a job's ``job``), ``meta`` the store's meta table (``sources``, ``notes``)."""
    path = trace_store.store_path(sources)
    store = trace_store.open_store(path)
    if store is not None:
        return store
    ref, order = trace_ref(c, name, "", lane_ranks)
    del ref["events"]  # its address is the page's, given when the store is opened
    ref.update(extra or {})
    events, flows, lane_depths = store_columns(c, order)
    trace_store.write(path, events, flows, {"ref": ref, "lane_depths": lane_depths, **(meta or {})})
    store = trace_store.open_store(path)
    if store is None:  # pragma: no cover - written just above, by this version
        raise AssertionError(f"{path}: the trace store just written does not open")
    return store


def _number(fields: dict[str, list[str]], key: str) -> float:
    values = fields.get(key)
    if not values:
        raise BadWindow(f"bad window: {key} is missing (give t0 and t1, ns from the trace's start, and px)")
    if len(values) > 1:
        raise BadWindow(f"bad window: {key} is given {len(values)} times")
    try:
        value = float(values[0])
    except ValueError:
        raise BadWindow(f"bad window: {key} is not a number: {values[0][:40]!r}") from None
    if not math.isfinite(value):
        raise BadWindow(f"bad window: {key} is not a finite number: {values[0][:40]!r}")
    return value


def parse_window(query: str) -> tuple[float, float, int]:
    """``t0=…&t1=…&px=…`` as numbers (BadWindow, one line, for anything else); t1 must pass t0."""
    try:
        fields = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query), max_num_fields=8)
    except ValueError as exc:
        raise BadWindow(f"bad window: {str(exc)[:80]}") from None
    unknown = sorted(set(fields) - set(WINDOW_KEYS))
    if unknown:
        raise BadWindow(f"bad window: unknown parameter {unknown[0][:40]!r} (give t0, t1 and px)")
    t0, t1, px = (_number(fields, key) for key in WINDOW_KEYS)
    if not t1 > t0:
        raise BadWindow(f"bad window: t1 ({t1:g}) must be greater than t0 ({t0:g})")
    return t0, t1, int(min(max(px, 1), MAX_PX))


def window(store: TraceStore, t0: float, t1: float, px: int) -> bytes:
    """The events of [t0, t1] (ns from the trace's start, clamped to its span) at ``px`` pixels
    (clamped to 1..MAX_PX), packed (see the module); arrows whose two ends are in the window, for
    a window of fewer than :data:`FLOW_EVENTS` events."""
    ref = store.meta["ref"]
    start_ns = float(ref["start_ns"])
    span = max(float(ref["end_ns"]) - start_ns, 0.0)
    t0, t1 = min(max(t0, 0.0), span), min(max(t1, 0.0), span)
    px = int(min(max(px, 1), MAX_PX))
    bounds = {"t0": t0, "t1": t1}
    rows = store.query(_WINDOW, {**bounds, "b": (t1 - t0) / px})
    count = np.asarray(rows["count"], dtype="<u4")
    flows: dict[str, np.ndarray] = {"from_lane": np.zeros(0), "from_ns": np.zeros(0)}
    flows.update(to_lane=np.zeros(0), to_ns=np.zeros(0))
    if int(count.sum()) < FLOW_EVENTS:
        flows = store.query(_FLOWS, bounds)
    return pack(
        {
            "start": np.asarray(rows["start"], dtype="<f8") + start_ns,
            "dur": np.asarray(rows["dur"], dtype="<f8"),
            "flow_from_ns": np.asarray(flows["from_ns"], dtype="<f8") + start_ns,
            "flow_to_ns": np.asarray(flows["to_ns"], dtype="<f8") + start_ns,
            "name": np.asarray(rows["name"], dtype="<u4"),
            "stack": np.asarray(rows["stack"], dtype="<u4"),
            "args": np.asarray(rows["args"], dtype="<u4"),
            "lane": np.asarray(rows["lane"], dtype="<u2"),
            "flow_from_lane": np.asarray(flows["from_lane"], dtype="<u2"),
            "flow_to_lane": np.asarray(flows["to_lane"], dtype="<u2"),
            "cat": np.asarray(rows["cat"], dtype="u1"),
            "depth": np.asarray(rows["depth"], dtype="u1"),
            "count": count,
        }
    )


class LodTrace:
    """A stored trace as the page sees it: its TraceRef with the level of detail's additions
    (``window``, ``lane_depths``, ``lod``), its overview (the ``events`` answer, computed once:
    every page load asks for it) and its windows."""

    def __init__(self, store: TraceStore, number: int) -> None:
        self.store = store
        meta = store.meta
        self.ref: dict[str, Any] = dict(
            meta["ref"],
            events=f"/api/trace/{number}.bin",
            window=f"/api/trace/{number}/window.bin",
            lane_depths=meta["lane_depths"],
            lod={"events": int(meta["ref"]["count"]), "store": str(store.path)},
        )
        self._overview: bytes | None = None
        self._lock = threading.Lock()

    def overview(self) -> bytes:
        with self._lock:
            if self._overview is None:
                span = float(self.ref["end_ns"]) - float(self.ref["start_ns"])
                self._overview = window(self.store, 0.0, max(span, 0.0), OVERVIEW_PX)
            return self._overview

    def answer(self, query: str) -> bytes:
        """``/api/trace/N/window.bin?QUERY`` (BadWindow for a bad query)."""
        return window(self.store, *parse_window(query))
