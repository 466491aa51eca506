"""Chrome / Perfetto trace: one complete event ("ph": "X") per scope and per kernel launch.

Format ``deuteron-chrome-trace`` version 1 rides in the trace's ``otherData`` (which Chrome and
Perfetto keep and ignore); the reader takes ours and Proton's."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..model.trace import TraceEvent
from . import FormatError, load_json
from .files import atomic_write

FORMAT = "deuteron-chrome-trace"
VERSION = 1
_LARGEST_US = 1e15  # about 30 years in microseconds: beyond it a time is damage, not data


def to_json(
    events: Iterable[TraceEvent], pid: int = 0, lane_names: dict[int, str] | None = None
) -> dict[str, Any]:
    items = sorted(events, key=lambda e: e.start_ns)
    t0 = min([items[0].start_ns] + [e.launched_from[1] for e in items if e.launched_from]) if items else 0
    out: list[dict[str, Any]] = []
    for lane, label in (lane_names or {}).items():
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": lane, "args": {"name": label}})
    for e in items:
        args = dict(e.args)
        args["call_stack"] = list(e.call_stack)
        out.append(
            {
                "name": e.name,
                "cat": e.category,
                "ph": "X",
                "ts": (e.start_ns - t0) / 1e3,
                "dur": max(e.end_ns - e.start_ns, 0) / 1e3,
                "pid": pid,
                "tid": e.lane,
                "args": args,
            }
        )
        if e.launched_from is not None:  # a flow arrow from the launch to the kernel
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
    return {"displayTimeUnit": "us", "otherData": {"format": FORMAT, "version": VERSION}, "traceEvents": out}


def text(events: Iterable[TraceEvent], **kwargs: Any) -> str:
    return json.dumps(to_json(events, **kwargs), separators=(",", ":"), default=str)


def write(events: Iterable[TraceEvent], path: str | os.PathLike[str], **kwargs: Any) -> Path:
    """Write atomically (see :func:`deuteron.formats.files.atomic_write`)."""
    return atomic_write(path, text(events, **kwargs))


def read(path: str | os.PathLike[str]) -> list[TraceEvent]:
    """Complete events of a trace (ours or Proton's), start times in ns from the trace's start."""
    data = load_json(path)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise FormatError(f"{path}: not a Chrome trace (expected an object with a traceEvents list)")
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
