"""A trace as Perfetto's own format (protobuf ``Trace`` of ``TrackEvent`` packets, ``.pftrace``),
for traces Perfetto cannot open as JSON.

Perfetto and Chrome open Chrome JSON, but a JSON trace is parsed whole in the browser: users'
viewers stop between 1 and 10 GB (Kineto issues 595, 760, 805; speedscope 347). Perfetto's own
format is read as a stream of packets, and with names interned a slice costs about 30 bytes
instead of the 300 to 400 of a JSON event (Proton writes it too, beside its Chrome JSON). It is
also how several ranks' traces, put on one clock by :mod:`deuteron.view.rank_traces`, reach
Perfetto as one trace: Perfetto has no way to join them itself.

What is written, from :class:`~deuteron.formats.trace_columns.TraceColumns`:

- a track per lane (thread, GPU stream, lane inside a kernel), named as the timeline names it,
  under a track per process or rank;
- each complete event as a ``TYPE_SLICE_BEGIN`` and a ``TYPE_SLICE_END`` packet on its lane's track,
  at ``base_ns`` plus its start (``baseTimeNanoseconds`` where the trace says one: the Unix epoch);
  an event that overlaps another of its lane without nesting in it (which Perfetto's slices
  cannot show on one track) goes on a second track of the lane, ``(overlap 1)``, and so on, so
  that no event is lost or cut;
- its category, its call stack (one string) and its other args as debug annotations, every string
  interned once in the packet sequence's ``InternedData``;
- each flow arrow whose two ends are events' starts (a launch and its kernel, a collective and the
  rank it waited for) as ``flow_ids`` on the first slice and ``terminating_flow_ids`` on the second.

The field numbers are Perfetto's (``protos/perfetto/trace/perfetto_trace.proto``); the encoding
is written here, a few lines of varints, so that writing needs no protobuf package. The tests
decode what is written with the protobuf classes Perfetto's Python package ships
(``tests/formats/test_perfetto_export.py``).
"""

from __future__ import annotations

import heapq
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from deuteron.formats.files import OutputError
from deuteron.formats.trace_columns import TraceColumns

SEQUENCE = 1  # the one packet sequence this writer emits (trusted_packet_sequence_id)
_CLEARED, _NEEDS = 1, 2  # TracePacket.SequenceFlags
_BEGIN, _END = 1, 2  # TrackEvent.Type
_GROUP_UUID, _LANE_UUID, _OVERLAP_UUID = 1, 1 << 20, 1 << 32


_SMALL = [bytes([n]) for n in range(128)] + [bytes([n & 0x7F | 0x80, n >> 7]) for n in range(128, 1 << 14)]


def _varint(n: int) -> bytes:
    if 0 <= n < 1 << 14:  # most: field keys, flags, lengths, interned ids
        return _SMALL[n]
    out = bytearray()
    n &= (1 << 64) - 1  # negative ints as protobuf writes int64: two's complement, ten bytes
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _uint(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n)


def _bytes(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _text(field: int, value: str) -> bytes:
    return _bytes(field, value.encode("utf-8", "replace"))


def _fixed64(field: int, n: int) -> bytes:
    return _varint(field << 3 | 1) + struct.pack("<Q", n & ((1 << 64) - 1))


def _packet(body: bytes, flags: int = _NEEDS) -> bytes:
    """One ``Trace.packet`` (field 1) on our sequence."""
    return _bytes(1, body + _uint(10, SEQUENCE) + _uint(13, flags))


@dataclass
class PerfettoStats:
    """What was written: slices, flow arrows, the arrows left out (an end that is no event's
    start), and the tracks added for events that overlap without nesting."""

    slices: int
    flows: int
    flows_left_out: int
    overlap_tracks: int


class _Interned:
    """Strings by iid for one ``InternedData`` field; new ones wait in :attr:`fresh` until the
    next packet that carries them."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.fresh: list[tuple[int, str]] = []

    def __call__(self, value: str) -> int:
        iid = self.ids.get(value)
        if iid is None:
            iid = self.ids[value] = len(self.ids) + 1
            self.fresh.append((iid, value))
        return iid


def _group_names(c: TraceColumns, lane_ranks: Sequence[str] | None) -> list[str]:
    if lane_ranks is not None:
        return [f"rank {r}" for r in lane_ranks]
    return [f"pid {pid}" if pid >= 0 else "process" for pid, _tid, _label in c.lanes]


def write(
    c: TraceColumns,
    path: str | os.PathLike[str],
    lane_ranks: Sequence[str] | None = None,
    base_ns: int | None = None,
) -> PerfettoStats:
    """Write ``c`` to ``path`` as a Perfetto trace (see the module); OutputError if it cannot be
    written. ``lane_ranks`` (a job joined) groups the lanes by rank; ``base_ns`` is the time of
    the columns' zero (default: the trace's ``baseTimeNanoseconds``, else 0)."""
    if base_ns is None:
        said = c.info.get("baseTimeNanoseconds")
        base_ns = int(said) if isinstance(said, (int, float)) and not isinstance(said, bool) else 0
    if len(c.start):
        base_ns = max(base_ns, -int(np.floor(c.start.min())))  # Perfetto's timestamps are unsigned
    target = Path(os.path.abspath(path))
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(partial, "wb") as out:
            stats = _write(c, out, lane_ranks, base_ns)
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise OutputError(f"{path}: cannot write it ({exc.strerror or exc})") from None
    return stats


def _flow_ends(c: TraceColumns) -> tuple[dict[int, list[int]], dict[int, list[int]], int]:
    """Per event, the flows that leave it and those that arrive at it (an end matches the event
    of its lane that starts exactly there), and how many flows matched no events."""
    first: dict[tuple[int, int], int] = {}
    for i, (lane, start) in enumerate(zip(c.lane.tolist(), np.round(c.start).tolist(), strict=True)):
        first.setdefault((lane, int(start)), i)
    leaving: dict[int, list[int]] = {}
    arriving: dict[int, list[int]] = {}
    missed = 0
    for flow, (a_lane, a_ns, b_lane, b_ns) in enumerate(c.flows.tolist()):
        a = first.get((int(a_lane), round(a_ns)))
        b = first.get((int(b_lane), round(b_ns)))
        if a is None or b is None or a == b:
            missed += 1
            continue
        leaving.setdefault(a, []).append(flow + 1)
        arriving.setdefault(b, []).append(flow + 1)
    return leaving, arriving, missed


def _write(c: TraceColumns, out: object, lane_ranks: Sequence[str] | None, base_ns: int) -> PerfettoStats:
    """The packets, in order: tracks, the interned names, then the slices by start."""
    write_bytes = out.write  # type: ignore[attr-defined]
    groups: dict[str, int] = {}
    for lane, (group, (_pid, tid, label)) in enumerate(
        zip(_group_names(c, lane_ranks), c.lanes, strict=True)
    ):
        if group not in groups:
            groups[group] = _GROUP_UUID + len(groups)
            write_bytes(_packet(_bytes(60, _uint(1, groups[group]) + _text(2, group)), 0))
        name = label or f"thread {tid}"
        track = _uint(1, _LANE_UUID + lane) + _uint(5, groups[group]) + _text(2, name)
        write_bytes(_packet(_bytes(60, track), 0))
    names, cats, keys, values = _Interned(), _Interned(), _Interned(), _Interned()
    leaving, arriving, missed = _flow_ends(c)
    stacks = [" > ".join(s) for s in c.stacks]
    has_context = len(c.stack) == len(c.start) and len(c.args) == len(c.start)
    open_ends: list[tuple[float, int, int]] = []  # (end, -order, track) of slices begun, not ended
    lanes_open: dict[int, list[list[float]]] = {}  # lane -> per overlap level, its open ends
    overlap_tracks, first = 0, True
    starts, durs = c.start.tolist(), c.dur.tolist()
    name_ids, cat_ids, lane_ids = c.name.tolist(), c.cat.tolist(), c.lane.tolist()
    stack_ids = c.stack.tolist() if has_context else []
    arg_ids = c.args.tolist() if has_context else []
    for i, (start, dur, lane) in enumerate(zip(starts, durs, lane_ids, strict=True)):
        end = start + dur
        while open_ends and open_ends[0][0] <= start:  # every slice that ended by now, in order
            done, _, track_uuid = heapq.heappop(open_ends)
            write_bytes(_slice_end(base_ns + round(done), track_uuid))
        levels = lanes_open.setdefault(lane, [])
        level = 0
        while True:  # the first level of the lane where this event nests (or starts after all)
            if level == len(levels):
                levels.append([])
                if level:
                    overlap_tracks += 1
                    write_bytes(_overlap_track(c, lane, level))
            ends = levels[level]
            while ends and ends[-1] <= start:
                ends.pop()
            if not ends or end <= ends[-1]:
                ends.append(end)
                break
            level += 1
        track_uuid = _LANE_UUID + lane if level == 0 else _OVERLAP_UUID * level + lane
        event = _uint(9, _BEGIN) + _uint(11, track_uuid)
        event += _uint(10, names(c.names[name_ids[i]])) + _uint(3, cats(c.cats[cat_ids[i]]))
        if has_context and stack_ids[i]:
            event += _annotation(keys("call_stack"), values(stacks[stack_ids[i]]))
        if has_context and arg_ids[i]:
            for key, value in c.arg_sets[arg_ids[i]]:
                event += _annotation(keys(key), values(value))
        for flow in leaving.get(i, ()):
            event += _fixed64(47, flow)
        for flow in arriving.get(i, ()):
            event += _fixed64(48, flow)
        fresh = _fresh_interned(names, cats, keys, values)
        if fresh or first:
            write_bytes(_packet(_bytes(12, fresh), _CLEARED | _NEEDS if first else _NEEDS))
            first = False
        write_bytes(_packet(_uint(8, base_ns + round(start)) + _bytes(11, event)))
        heapq.heappush(open_ends, (end, -i, track_uuid))
    while open_ends:
        done, _, track_uuid = heapq.heappop(open_ends)
        write_bytes(_slice_end(base_ns + round(done), track_uuid))
    flows = len(c.flows) - missed
    return PerfettoStats(len(starts), flows, missed, overlap_tracks)


def _slice_end(at: int, track_uuid: int) -> bytes:
    return _packet(_uint(8, at) + _bytes(11, _uint(9, _END) + _uint(11, track_uuid)))


def _annotation(name_iid: int, value_iid: int) -> bytes:
    """A ``TrackEvent.debug_annotations`` entry: an interned name and an interned string value."""
    return _bytes(4, _uint(1, name_iid) + _uint(17, value_iid))


def _overlap_track(c: TraceColumns, lane: int, level: int) -> bytes:
    """The track for a lane's events that overlap others of it without nesting (see the module)."""
    _pid, tid, label = c.lanes[lane]
    name = f"{label or f'thread {tid}'} (overlap {level})"
    track = _uint(1, _OVERLAP_UUID * level + lane) + _uint(5, _LANE_UUID + lane) + _text(2, name)
    return _packet(_bytes(60, track), 0)


def _fresh_interned(names: _Interned, cats: _Interned, keys: _Interned, values: _Interned) -> bytes:
    """The ``InternedData`` of the strings first used by the next event (empty if none)."""
    body = b""
    for field, table in ((2, names), (1, cats), (3, keys), (29, values)):
        for iid, value in table.fresh:
            body += _bytes(field, _uint(1, iid) + _text(2, value))
        table.fresh.clear()
    return body
