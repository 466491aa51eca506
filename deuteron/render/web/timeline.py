"""A trace for the web UI: ``TraceRef`` (``frontend/src/types.ts``) and its events packed as typed
arrays (:mod:`.packed`). Each event gets its nesting depth within its lane here, once, so the
browser only draws. Each event's call stack and other args go as ids into two interned tables
(``stacks``, ``arg_sets``), shown when the event is clicked. Event names go as recorded
(``names``), and as ``deuteron view`` shows them (``display_names``: a C++ kernel's short name)
and demangled in full (``full_names``), index for index; call stacks' frames that demangle
(a kernel's mangled name as the stack's last frame) get theirs in ``frame_names``.

Lanes are threads, GPU streams, or lanes inside kernels (``intra``: one per kernel, CTA and warp,
or per interpreted program, holding ``pl.scope`` spans); the last are ordered after the streams,
kernel by kernel, and carry what their names say (kernel, CTA, SM, unit) so the page can group
them without parsing names itself."""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from deuteron.formats.chrome_trace import TraceColumns
from deuteron.model.names import display_name
from deuteron.render.web.packed import pack
from deuteron.view.trace_marks import trace_marks


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
    """A lane is a GPU stream when it holds only kernels (category "kernel"); inside a kernel
    (``intra``) when it holds only scope spans recorded in kernels (category "intra"); a thread
    otherwise, also where kernels ran on it (the interpreter runs them on the launching thread)."""
    lanes = max(len(c.lanes), 1)

    def per_lane(cats: tuple[str, ...]) -> np.ndarray:
        chosen = np.isin(c.cat, [i for i, name in enumerate(c.cats) if name in cats])
        return np.bincount(c.lane[chosen].astype(np.int64), minlength=lanes)

    kernels, intra = per_lane(("kernel", "gpu", "cuda")), per_lane(("intra",))
    every = np.bincount(c.lane.astype(np.int64), minlength=lanes)
    kinds = []
    for i in range(len(c.lanes)):
        only = every[i] and (kernels[i] == every[i] or intra[i] == every[i])
        kinds.append(("stream" if kernels[i] else "intra") if only else "thread")
    return kinds


# Lane names of deuteron.collect.lanes.intra_events: "<kernel> Core<sm> CTA<n> · <unit> <u>" for a
# GPU CTA's warp (or warp group), "<kernel> · <unit> <n>" for an interpreted program.
_GPU_LANE = re.compile(r"^(?P<kernel>.+) Core(?P<sm>\d+) CTA(?P<cta>\d+) · (?P<unit>[^·]+?) (?P<index>\d+)$")
_PROGRAM_LANE = re.compile(r"^(?P<kernel>.+?) · (?P<unit>[^·]+?) (?P<index>\d+)$")


def intra_lane(label: str, fallback: str) -> dict[str, Any]:
    """What an intra-kernel lane's name says: its kernel, CTA and SM (None for an interpreted
    program, which has neither), its unit ("warp", "program") and the unit's number. A name of
    another shape is a kernel of its own (the whole name) with nothing else known, so a foreign
    trace still shows, one group per lane."""
    gpu = _GPU_LANE.match(label)
    if gpu:
        return {
            "kernel": gpu["kernel"],
            "cta": int(gpu["cta"]),
            "sm": int(gpu["sm"]),
            "unit": gpu["unit"],
            "index": int(gpu["index"]),
        }
    program = _PROGRAM_LANE.match(label)
    if program:
        unit, index = program["unit"], int(program["index"])
        return {"kernel": program["kernel"], "cta": None, "sm": None, "unit": unit, "index": index}
    return {"kernel": label or fallback, "cta": None, "sm": None, "unit": "", "index": None}


def lane_order(lanes: list[dict[str, Any]]) -> list[int]:
    """Display order: threads, then streams, each by their first event; then the lanes inside
    kernels, kernel by kernel (in order of each kernel's first lane), by CTA then unit number,
    numerically ("CTA10" after "CTA9"). Several ranks' lanes (a job's traces joined) stay rank
    after rank, each rank's in that order."""
    first_of: dict[str, int] = {}
    for i, lane in enumerate(lanes):
        if lane["kind"] == "intra":
            first_of.setdefault(lane["intra"]["kernel"], i)
    rank = {"thread": 0, "stream": 1, "intra": 2}

    rank_at: dict[str, int] = {}
    for lane in lanes:
        rank_at.setdefault(lane.get("rank", ""), len(rank_at))

    def key(i: int) -> tuple[int, int, int, int, int, int]:
        lane = lanes[i]
        job = rank_at[lane.get("rank", "")]
        if lane["kind"] != "intra":
            return (job, rank[lane["kind"]], 0, 0, 0, i)
        where = lane["intra"]
        cta, index = where["cta"], where["index"]
        first = first_of[where["kernel"]]
        return (job, 2, first, -1 if cta is None else cta, -1 if index is None else index, i)

    return sorted(range(len(lanes)), key=key)


def frame_names(stacks: list[tuple[str, ...]] | list[list[str]]) -> dict[str, list[str]]:
    """The call stacks' frames that ``deuteron view`` shows otherwise (mangled C++ names): each
    as [short name, full demangled name], for the details panel's call stack. Frames shown as they
    are left out (most of them)."""
    out: dict[str, list[str]] = {}
    seen: set[str] = set()
    for stack in stacks:
        for frame in stack:
            if frame in seen:
                continue
            seen.add(frame)
            short = display_name(frame)
            if short != frame:
                out[frame] = [short, display_name(frame, full=True)]
    return out


def trace_ref(
    c: TraceColumns, source: str, url: str, lane_ranks: list[str] | None = None
) -> tuple[dict[str, Any], list[int]]:
    """The trace's ``TraceRef`` and its lanes' display order (:func:`lane_order`). With
    ``lane_ranks`` (a job's traces joined: :mod:`deuteron.view.rank_traces`), each lane says its
    rank, and its name starts with it ("rank 1 · stream 7"). A thread whose role can be told
    (:mod:`deuteron.view.trace_marks`) says it (``role``: "autograd thread"), its name kept for the hover;
    the steps, the window the page opens on and the backward passes are in the ref too."""
    kinds = lane_kinds(c)
    zero = float(c.start.min()) if len(c.start) else 0.0
    marks, roles = trace_marks(c, kinds, lane_ranks, zero)
    lanes = []
    several_processes = len({pid for pid, _tid, _label in c.lanes}) > 1 and lane_ranks is None
    for i, (pid, tid, label) in enumerate(c.lanes):
        kind = kinds[i]
        default = f"stream {tid}" if kind == "stream" else f"thread {tid}"
        if several_processes:
            default += f" (pid {pid})"
        lane: dict[str, Any] = {"id": i, "name": label or default, "kind": kind}
        if kind == "intra":
            lane["intra"] = intra_lane(label, default)
        if i in roles and roles[i] != (label or default):
            lane["role"] = roles[i]
        if lane_ranks is not None:
            lane["rank"] = lane_ranks[i]
            lane["name"] = f"rank {lane_ranks[i]} · {lane['name']}"
        lanes.append(lane)
    order = lane_order(lanes)
    ends = c.start + c.dur
    ref = {
        "name": os.path.basename(source),
        "source": source,
        "lanes": [lanes[i] for i in order],
        "names": c.names,  # as recorded (mangled C++ names too): the page's labels and hover
        "display_names": [display_name(n) for n in c.names],  # as deuteron view shows them
        "full_names": [display_name(n, full=True) for n in c.names],
        "cats": c.cats,
        # Each event's context (the packed ``stack`` and ``args`` columns index these): its call
        # stack from ROOT, and its other args as (key, value text) rows, for the details panel.
        "stacks": [list(s) for s in c.stacks],
        "arg_sets": [[list(row) for row in rows] for rows in c.arg_sets],
        "frame_names": frame_names(c.stacks),
        "count": int(len(c.start)),
        "flows": int(len(c.flows)),
        "start_ns": float(c.start.min()) if len(c.start) else 0.0,
        "end_ns": float(ends.max()) if len(c.start) else 0.0,
        "events": url,
        **marks,
    }
    return ref, order


def lane_positions(c: TraceColumns, order: list[int]) -> np.ndarray:
    """Each lane's place in :func:`trace_ref`'s display order (index: the lane's id)."""
    position = np.zeros(max(len(c.lanes), 1), dtype=np.uint16)
    position[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.uint16)
    return position


def context_column(ids: np.ndarray, n: int) -> np.ndarray:
    """A context column as packed, zeros (no context) where the columns were made without it."""
    return ids.astype("<u4") if len(ids) == n else np.zeros(n, dtype="<u4")


def trace_events(c: TraceColumns, order: list[int]) -> bytes:
    """The packed events (lanes renumbered in :func:`trace_ref`'s display order)."""
    position = lane_positions(c, order)
    flows = c.flows
    return pack(
        {
            "start": c.start.astype("<f8"),
            "dur": c.dur.astype("<f8"),
            "flow_from_ns": flows[:, 1].astype("<f8"),
            "flow_to_ns": flows[:, 3].astype("<f8"),
            "name": c.name.astype("<u4"),
            "stack": context_column(c.stack, len(c.start)),
            "args": context_column(c.args, len(c.start)),
            "lane": position[c.lane].astype("<u2"),
            "flow_from_lane": position[flows[:, 0].astype(np.int64)].astype("<u2"),
            "flow_to_lane": position[flows[:, 2].astype(np.int64)].astype("<u2"),
            "cat": c.cat.astype("u1"),
            "depth": depths(c),
        }
    )
