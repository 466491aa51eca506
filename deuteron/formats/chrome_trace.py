"""Chrome / Perfetto trace: one complete event ("ph": "X") per scope and per kernel launch.

Format ``deuteron-chrome-trace`` version 1 rides in the trace's ``otherData`` (which Chrome and
Perfetto keep and ignore); the reader takes ours and Proton's."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from deuteron.formats import FormatError, load_json
from deuteron.formats.files import atomic_write
from deuteron.model.trace import TraceEvent

FORMAT = "deuteron-chrome-trace"
VERSION = 1
_PROTON_CTA = re.compile(r"Core\d+ CTA\d+$")  # Proton's process name for one CTA of a kernel
_LARGEST_US = 1e15  # about 30 years in microseconds: beyond it a time is damage, not data


def to_json(
    events: Iterable[TraceEvent],
    pid: int = 0,
    lane_names: dict[int, str] | None = None,
    other: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The trace document: the whole written format in one place, so it reads as one spec.

    One ``X`` event per scope or kernel, in µs from the earliest start or launch (no ``ts`` is
    negative); lanes named by ``thread_name`` events. A kernel with ``launched_from`` also gets a
    tick on the launching lane and a flow arrow (``s`` to ``f``, ``bp: e``) from the tick to it;
    with ``proton_flow``, Proton's arrow instead: a ``launch->kernel`` flow (``cat: flow``, both
    ends ``bp: e``) from the launch to the kernel, written just before the kernel's event.

    ``otherData`` names the format and version, and, with ``other`` (a run's job and clock: see
    :func:`deuteron.collect.output.trace_other`), also ``zero_ns``: the events' clock at ``ts`` 0,
    so that traces of several ranks can be put on one clock (:mod:`deuteron.view.rank_traces`).
    """
    items = sorted(events, key=lambda e: e.start_ns)
    t0 = min([items[0].start_ns] + [e.launched_from[1] for e in items if e.launched_from]) if items else 0
    out: list[dict[str, Any]] = []
    for lane, label in (lane_names or {}).items():
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": lane, "args": {"name": label}})
    for e in items:
        args = dict(e.args)
        args["call_stack"] = list(e.call_stack)
        process, thread, category = e.proton_labels or (pid, e.lane, e.category)
        if e.launched_from is not None and e.proton_flow:
            lane, at = e.launched_from
            arrow = {"name": "launch->kernel", "cat": "flow", "id": len(out), "bp": "e", "pid": pid}
            out.append({**arrow, "ph": "s", "ts": (at - t0) / 1e3, "tid": lane})
            out.append({**arrow, "ph": "f", "ts": (e.start_ns - t0) / 1e3, "pid": process, "tid": thread})
        out.append(
            {
                "name": e.name,
                "cat": category,
                "ph": "X",
                "ts": (e.start_ns - t0) / 1e3,
                "dur": max(e.end_ns - e.start_ns, 0) / 1e3,
                "pid": process,
                "tid": thread,
                "args": args,
            }
        )
        if e.launched_from is not None and not e.proton_flow:  # a flow arrow from the launch to the kernel
            lane, at = e.launched_from
            flow = len(out)
            ts = (at - t0) / 1e3
            out.append(
                {
                    "name": "launch",
                    "cat": "launch",
                    "ph": "X",
                    "ts": ts,
                    "dur": 0.001,
                    "pid": pid,
                    "tid": lane,
                    "args": {"kernel": e.name},
                }
            )
            out.append(
                {"name": "launch", "cat": "launch", "ph": "s", "id": flow, "ts": ts, "pid": pid, "tid": lane}
            )
            out.append(
                {
                    "name": "launch",
                    "cat": "launch",
                    "ph": "f",
                    "bp": "e",
                    "id": flow,
                    "ts": (e.start_ns - t0) / 1e3,
                    "pid": pid,
                    "tid": e.lane,
                }
            )
    info: dict[str, Any] = {"format": FORMAT, "version": VERSION}
    if other is not None:
        info.update(other)
        info["zero_ns"] = int(t0)
    return {"displayTimeUnit": "us", "otherData": info, "traceEvents": out}


def text(events: Iterable[TraceEvent], **kwargs: Any) -> str:
    return json.dumps(to_json(events, **kwargs), separators=(",", ":"), default=str)


def write(events: Iterable[TraceEvent], path: str | os.PathLike[str], **kwargs: Any) -> Path:
    """Write atomically (see :func:`deuteron.formats.files.atomic_write`)."""
    return atomic_write(path, text(events, **kwargs))


def _trace_events(path: str | os.PathLike[str]) -> list[Any]:
    return _trace_document(path)[0]


def _trace_document(path: str | os.PathLike[str]) -> tuple[list[Any], dict[str, Any]]:
    """A trace's event list (``{"traceEvents": [...]}`` or a bare list, as Chrome reads both) and
    what it says of itself: ours in ``otherData``, a torch.profiler trace's rank in
    ``distributedInfo`` (scalars only, so damage cannot travel further)."""
    data = load_json(path, "Chrome trace")
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise FormatError(f"{path}: not a Chrome trace (expected an object with a traceEvents list)")
    info: dict[str, Any] = {}
    if isinstance(data, dict):
        for key in ("otherData", "distributedInfo"):
            part = data.get(key)
            if isinstance(part, dict):
                info.update(
                    {str(k)[:100]: v for k, v in part.items() if isinstance(v, (str, int, float, bool))}
                )
    return events, info


def read(path: str | os.PathLike[str]) -> list[TraceEvent]:
    """Complete events of a trace (ours or Proton's), start times in ns from the trace's start."""
    events = _trace_events(path)
    out: list[TraceEvent] = []
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise FormatError(f"{path}: trace event {i} is not an object")
        if ev.get("ph") != "X":
            continue
        try:
            ts, dur = float(ev["ts"]), float(ev.get("dur", 0.0))
            name = str(ev["name"])
        except (KeyError, TypeError, ValueError, OverflowError):
            raise FormatError(f"{path}: trace event {i} lacks a name, ts or dur") from None
        if not (abs(ts) <= _LARGEST_US and 0 <= dur <= _LARGEST_US):
            raise FormatError(f"{path}: trace event {i} has a ts or dur out of range ({ts:.3g}, {dur:.3g})")
        raw_args = ev.get("args")
        args: dict[str, Any] = dict(raw_args) if isinstance(raw_args, dict) else {}
        stack = args.pop("call_stack", [])
        lane = ev.get("tid", 0)
        out.append(
            TraceEvent(
                category=str(ev.get("cat", "")),
                name=name,
                start_ns=round(ts * 1e3),
                end_ns=round((ts + dur) * 1e3),
                lane=lane if isinstance(lane, int) else 0,
                call_stack=tuple(str(s) for s in stack) if isinstance(stack, list) else (),
                args=args,
            )
        )
    return out


@dataclass
class TraceColumns:
    """A trace as columns (one row per complete event, sorted by start) for viewers of millions
    of events: no object per event. Times in ns from the trace's own zero."""

    start: np.ndarray  # float64
    dur: np.ndarray  # float64
    name: np.ndarray  # uint32, index into names
    cat: np.ndarray  # uint8, index into cats
    lane: np.ndarray  # uint16, index into lanes
    names: list[str]
    cats: list[str]
    lanes: list[tuple[int, int, str]]  # (pid, tid, label)
    flows: np.ndarray  # float64 rows (from_lane, from_ns, to_lane, to_ns)
    # Each event's context, for a viewer's details (interned like names, so a million kernels of a
    # few hundred places cost a column of ids): ``args.call_stack`` (ROOT to the event; id 0 is
    # the empty stack) and its other args as (key, value text) rows (id 0: none).
    stack: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))
    stacks: list[tuple[str, ...]] = field(default_factory=lambda: [()])
    args: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))
    arg_sets: list[tuple[tuple[str, str], ...]] = field(default_factory=lambda: [()])
    # What the trace says of itself beside its events (``otherData``; Kineto's ``distributedInfo``
    # too): a rank's job and clock, see :func:`to_json`. Empty for a trace that says nothing.
    info: dict[str, Any] = field(default_factory=dict)


_MAX_STACK = 256  # frames kept of a call stack, and args kept of an event: more is damage, not data
_MAX_TEXT = 500  # characters kept of a frame's name, an arg's key or value


def _arg_text(value: Any) -> str:
    """An arg's value as the details panel shows it: strings as they are, the rest as compact JSON
    (a nested or hostile value cut short, never an error: args are shown, not trusted)."""
    if isinstance(value, str):
        return value[:_MAX_TEXT]
    try:
        return json.dumps(value, separators=(",", ":"), default=str)[:_MAX_TEXT]
    except (ValueError, TypeError, RecursionError):
        return str(type(value).__name__)


_MAX_ARG_SETS = 50_000  # distinct args sets a page gets; events past them show their name and stack only


class _Contexts:
    """Interns events' call stacks and other args for :func:`read_columns`. Lookups go first by
    the raw values (a tuple of the stack's frames, of the args' keys, values and types), which
    repeat across a trace's events, so each distinct context is cleaned and texted only once:
    a million events with args cost about a second more, not several."""

    def __init__(self) -> None:
        self.stacks: dict[tuple[str, ...], int] = {(): 0}
        self.arg_sets: dict[tuple[tuple[str, str], ...], int] = {(): 0}
        self._raw_stacks: dict[Any, int] = {}
        self._raw_args: dict[Any, int] = {}
        self.args_left_out = 0  # events whose args were past _MAX_ARG_SETS distinct sets

    def stack_id(self, value: Any) -> int:
        if not isinstance(value, list):
            return 0
        key = tuple(value)
        known = _known(self._raw_stacks, key)  # None: new, or a frame that is no string (unhashable)
        if known is not None:
            return known
        frames = tuple(str(f)[:_MAX_TEXT] for f in value[:_MAX_STACK])
        return _remember(self._raw_stacks, key, self.stacks.setdefault(frames, len(self.stacks)))

    def args_id(self, raw: dict[Any, Any]) -> int:
        key = tuple((k, v, v.__class__) for k, v in raw.items() if k != "call_stack")
        if not key:
            return 0
        known = _known(self._raw_args, key)  # None: new, or a value that is a list or object (unhashable)
        if known is not None:
            return known
        rows = tuple((str(k)[:_MAX_TEXT], _arg_text(v)) for k, v, _ in key[:_MAX_STACK])
        if rows not in self.arg_sets and len(self.arg_sets) >= _MAX_ARG_SETS:
            self.args_left_out += 1  # a trace whose every event has its own args: the page stays small
            return 0
        return _remember(self._raw_args, key, self.arg_sets.setdefault(rows, len(self.arg_sets)))


def _known(raw_ids: dict[Any, int], key: Any) -> int | None:
    """The id a raw value was given before; None when it is new or cannot be a key (unhashable)."""
    try:
        return raw_ids[key]
    except (KeyError, TypeError):
        return None


def _remember(raw_ids: dict[Any, int], key: Any, found: int) -> int:
    """``found``, kept as the raw value's id where the value can be a key (else it is texted again)."""
    with contextlib.suppress(TypeError):
        raw_ids[key] = found
    return found


def read_columns(path: str | os.PathLike[str], max_lanes: int = 65535) -> TraceColumns:
    """A Chrome trace (ours, Proton's, any tool's complete "X" events) as columns; flow arrows
    from "s"/"f" pairs. FormatError on anything damaged, as :func:`read`."""
    events, info = _trace_document(path)
    # Event by event, checking each and naming the first damaged one (a million events in about
    # a second; reading a field at a time over all events was measured slower).
    names: dict[str, int] = {}
    cats: dict[str, int] = {}
    lanes: dict[tuple[int, int], int] = {}
    labels: dict[tuple[int, int], str] = {}
    start: list[float] = []
    dur: list[float] = []
    name_col: list[int] = []
    cat_col: list[int] = []
    lane_col: list[int] = []
    flow_ends: dict[Any, list[tuple[int, float] | None]] = {}
    contexts = _Contexts()
    stack_col: list[int] = []
    args_col: list[int] = []
    named: dict[tuple[str, str], tuple[int, int]] = {}  # Proton's string process/thread names -> a key
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise FormatError(f"{path}: trace event {i} is not an object")
        ph = ev.get("ph")
        pid, tid = ev.get("pid", 0), ev.get("tid", 0)
        intra = False
        if isinstance(pid, str) or isinstance(tid, str):  # Proton names lanes by strings
            text = (str(pid)[:200], str(tid)[:200])
            key = named.get(text)
            if key is None:
                key = named[text] = (-1 - len(named), 0)
                labels[key] = f"{text[0]} · {text[1]}"
            intra = _PROTON_CTA.search(text[0]) is not None  # a kernel's CTA: its scopes, per warp
        else:
            key = (pid if isinstance(pid, int) else 0, tid if isinstance(tid, int) else 0)
        if ph == "M":
            args = ev.get("args")
            if (
                ev.get("name") == "thread_name"
                and isinstance(args, dict)
                and isinstance(args.get("name"), str)
            ):
                labels[key] = args["name"][:200]
            continue
        if ph not in ("X", "s", "f"):
            continue
        try:
            ts = float(ev["ts"])
        except (KeyError, TypeError, ValueError, OverflowError):
            raise FormatError(f"{path}: trace event {i} lacks a ts") from None
        if not abs(ts) <= _LARGEST_US:
            raise FormatError(f"{path}: trace event {i} has a ts out of range ({ts:.3g})")
        lane = lanes.get(key)
        if lane is None:
            if len(lanes) >= max_lanes:
                raise FormatError(f"{path}: more than {max_lanes:,} threads and streams")
            lane = lanes[key] = len(lanes)
        if ph != "X":
            flow_id = ev.get("id")
            if not isinstance(flow_id, (int, str)) or isinstance(flow_id, bool):
                continue  # a flow without a usable id draws no arrow
            ends = flow_ends.setdefault((str(ev.get("cat")), flow_id), [None, None])
            ends[0 if ph == "s" else 1] = (lane, ts * 1e3)
            continue
        try:
            d = float(ev.get("dur", 0.0))
            name = str(ev["name"])
        except (KeyError, TypeError, ValueError, OverflowError):
            raise FormatError(f"{path}: trace event {i} lacks a name, ts or dur") from None
        if not 0 <= d <= _LARGEST_US:
            raise FormatError(f"{path}: trace event {i} has a dur out of range ({d:.3g})")
        start.append(ts * 1e3)
        dur.append(d * 1e3)
        name_col.append(names.setdefault(name[:500], len(names)))
        cat = "intra" if intra else str(ev.get("cat", ""))[:100]
        known = cats.get(cat)
        if known is None:  # past 255 categories, the rest share one: "other"
            known = cats[cat] = len(cats) if len(cats) < 255 else cats.setdefault("other", 255)
        cat_col.append(known)
        lane_col.append(lane)
        raw = ev.get("args")
        if raw and isinstance(raw, dict):  # many events have none: no call for them
            stack_col.append(contexts.stack_id(raw.get("call_stack")))
            args_col.append(contexts.args_id(raw))
        else:
            stack_col.append(0)
            args_col.append(0)
    starts, durs = np.asarray(start, dtype=np.float64), np.asarray(dur, dtype=np.float64)
    # By start, and at equal starts the longer first: a parent before the children it encloses.
    order = np.lexsort((-durs, starts))
    flows = [(a[0], a[1], b[0], b[1]) for a, b in flow_ends.values() if a is not None and b is not None]
    return TraceColumns(
        start=starts[order],
        dur=durs[order],
        name=np.asarray(name_col, dtype=np.uint32)[order],
        cat=np.asarray(cat_col, dtype=np.uint8)[order],
        lane=np.asarray(lane_col, dtype=np.uint16)[order],
        names=list(names),
        cats=[name for name, _ in sorted(cats.items(), key=lambda kv: kv[1])],
        lanes=[(pid, tid, labels.get((pid, tid), "")) for (pid, tid) in lanes],
        flows=np.asarray(flows, dtype=np.float64).reshape(-1, 4),
        stack=np.asarray(stack_col, dtype=np.uint32)[order],
        stacks=list(contexts.stacks),
        args=np.asarray(args_col, dtype=np.uint32)[order],
        arg_sets=list(contexts.arg_sets),
        info=info,
    )
