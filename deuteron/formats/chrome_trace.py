"""Chrome / Perfetto trace: one complete event ("ph": "X") per scope and per kernel launch.

Format ``deuteron-chrome-trace`` version 1 rides in the trace's ``otherData`` (which Chrome and
Perfetto keep and ignore); the reader takes ours, Proton's and other tools' (Kineto's). Reading
streams, whatever the file's size: :mod:`deuteron.formats.trace_stream` parses a chunk at a time
and :mod:`deuteron.formats.trace_columns` folds each into columns (:func:`read_columns`, the one
reader every command goes through). :mod:`deuteron.formats.perfetto_trace` writes the columns in
Perfetto's own protobuf format, for traces too large for a JSON viewer."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from deuteron.formats import FormatError
from deuteron.formats.files import atomic_write
from deuteron.formats.trace_columns import LARGEST_US, TraceColumns, read_columns
from deuteron.formats.trace_stream import iter_events
from deuteron.model.trace import TraceEvent

__all__ = ["FORMAT", "VERSION", "TraceColumns", "read", "read_columns", "text", "to_json", "write"]

FORMAT = "deuteron-chrome-trace"
VERSION = 1


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
    With the run's wall clock (``other["wall_minus_clock_ns"]``), the document also says
    ``baseTimeNanoseconds``: ``ts`` 0 in ns since the Unix epoch, the key Kineto (torch.profiler)
    and Proton write, which Perfetto, HTA and other tools read to place a trace in time.
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
    doc: dict[str, Any] = {"displayTimeUnit": "us"}
    if other is not None:
        info.update(other)
        info["zero_ns"] = int(t0)
        wall = other.get("wall_minus_clock_ns")
        if isinstance(wall, int) and not isinstance(wall, bool):
            doc["baseTimeNanoseconds"] = int(t0) + wall
    doc["otherData"] = info
    doc["traceEvents"] = out
    return doc


def text(events: Iterable[TraceEvent], **kwargs: Any) -> str:
    return json.dumps(to_json(events, **kwargs), separators=(",", ":"), default=str)


def write(events: Iterable[TraceEvent], path: str | os.PathLike[str], **kwargs: Any) -> Path:
    """Write atomically (see :func:`deuteron.formats.files.atomic_write`)."""
    return atomic_write(path, text(events, **kwargs))


def read(path: str | os.PathLike[str]) -> list[TraceEvent]:
    """Complete events of a trace (ours or Proton's), start times in ns from the trace's start,
    read as a stream (:mod:`deuteron.formats.trace_stream`): one object per event, so for
    small traces and tests; large ones are read as columns (:func:`read_columns`)."""
    out: list[TraceEvent] = []
    for i, ev in iter_events(path):
        if ev.get("ph") != "X":
            continue
        try:
            ts, dur = float(ev["ts"]), float(ev.get("dur", 0.0))
            name = str(ev["name"])
        except (KeyError, TypeError, ValueError, OverflowError):
            raise FormatError(f"{path}: trace event {i} lacks a name, ts or dur") from None
        if not (abs(ts) <= LARGEST_US and 0 <= dur <= LARGEST_US):
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
