"""A Chrome trace as columns, built from the stream (:mod:`deuteron.formats.trace_stream`) batch by
batch: one row per complete event, about 31 bytes each, and nothing per event beside them.

The columns are what every reader of a trace takes (``deuteron serve``'s timeline, the ranks'
clock and links, the steps of ``view --advise``): see :func:`read_columns`. Each batch of parsed
events is folded into typed arrays before the next batch is parsed, so the peak is the columns
plus one batch, not the document: a 30 MB rank trace read in 271 MB before, in a fraction of that
now (``benchmarks/trace_scale.py`` measures it against the file's size).

**What is bounded, and said.** Names, categories and lanes are interned (a trace has few). Call
stacks and other args are interned too, but a trace can give every event args of its own (an id,
a correlation number), and then they are as large as the trace: they are kept up to
:func:`args_budget` bytes of text (``DEUTERON_TRACE_ARGS_BYTES``, default 64 MiB), and past it,
events show their name and times but not their args, and :attr:`TraceColumns.notes` says in one
line how many and how to keep them all. Nothing is dropped silently.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deuteron.formats.files import FormatError
from deuteron.formats.trace_stream import CHUNK, TraceStream

ARGS_BYTES_ENV = "DEUTERON_TRACE_ARGS_BYTES"
DEFAULT_ARGS_BYTES = 64 << 20
_PROTON_CTA = re.compile(r"Core\d+ CTA\d+$")  # Proton's process name for one CTA of a kernel
LARGEST_US = 1e15  # about 30 years in microseconds: beyond it a time is damage, not data
_MAX_STACK = 256  # frames kept of a call stack, and args kept of an event: more is damage, not data
_MAX_TEXT = 500  # characters kept of a frame's name, an arg's key or value


def args_budget() -> int:
    """Bytes of distinct call stacks and args text a reader keeps (``DEUTERON_TRACE_ARGS_BYTES``;
    a bad value keeps the default)."""
    text = os.environ.get(ARGS_BYTES_ENV, "").strip()
    try:
        value = int(text) if text else DEFAULT_ARGS_BYTES
    except ValueError:
        return DEFAULT_ARGS_BYTES
    return value if value >= 0 else DEFAULT_ARGS_BYTES


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
    # too): a rank's job and clock, see :func:`deuteron.formats.chrome_trace.to_json`.
    info: dict[str, Any] = field(default_factory=dict)
    # One line per thing left out while reading (see the module), for the viewer to show.
    notes: list[str] = field(default_factory=list)


def _arg_text(value: Any) -> str:
    """An arg's value as the details panel shows it: strings as they are, the rest as compact JSON
    (a nested or hostile value cut short, never an error: args are shown, not trusted)."""
    if isinstance(value, str):
        return value[:_MAX_TEXT]
    try:
        return json.dumps(value, separators=(",", ":"), default=str)[:_MAX_TEXT]
    except (ValueError, TypeError, RecursionError):
        return str(type(value).__name__)


class _Contexts:
    """Interns events' call stacks and other args. Lookups go first by the raw values (a tuple of
    the stack's frames, of the args' keys, values and types), which repeat across a trace's
    events, so each distinct context is cleaned and texted only once. Past ``budget`` bytes of
    text, new contexts are counted (:attr:`left_out`) instead of kept."""

    def __init__(self, budget: int) -> None:
        self.stacks: dict[tuple[str, ...], int] = {(): 0}
        self.arg_sets: dict[tuple[tuple[str, str], ...], int] = {(): 0}
        self._raw_stacks: dict[Any, int] = {}
        self._raw_args: dict[Any, int] = {}
        self.budget = budget
        self.used = 0
        self.left_out = 0  # events whose stack or args were past the budget

    def stack_id(self, value: Any) -> int:
        if not isinstance(value, list):
            return 0
        key = tuple(value)
        known = _known(self._raw_stacks, key)  # None: new, or a frame that is no string (unhashable)
        if known is not None:
            return known
        frames = tuple(str(f)[:_MAX_TEXT] for f in value[:_MAX_STACK])
        found = self._intern(self.stacks, frames, lambda: 64 + sum(len(f) + 8 for f in frames))
        return _remember(self._raw_stacks, key, found)

    def args_id(self, raw: dict[Any, Any]) -> int:
        key = tuple((k, v, v.__class__) for k, v in raw.items() if k != "call_stack")
        if not key:
            return 0
        known = _known(self._raw_args, key)  # None: new, or a value that is a list or object (unhashable)
        if known is not None:
            return known
        rows = tuple((str(k)[:_MAX_TEXT], _arg_text(v)) for k, v, _ in key[:_MAX_STACK])
        found = self._intern(self.arg_sets, rows, lambda: 64 + sum(len(k) + len(v) + 16 for k, v in rows))
        return _remember(self._raw_args, key, found)

    def _intern(self, table: dict[Any, int], item: Any, cost: Callable[[], int]) -> int:
        """``item``'s id in ``table``, a new one while the text budget lasts (0 past it, counted)."""
        found = table.get(item)
        if found is None:
            spent = cost()
            if self.used + spent > self.budget:
                self.left_out += 1
                return 0
            self.used += spent
            found = table[item] = len(table)
        return found


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


_COLUMNS = (
    ("start", np.float64),
    ("dur", np.float64),
    ("name", np.uint32),
    ("cat", np.uint8),
    ("lane", np.uint16),
    ("stack", np.uint32),
    ("args", np.uint32),
)


class _Builder:
    """The columns as they grow, batch by batch (see :func:`read_columns`): compact arrays, the
    interned tables, and the flow ends still waiting for their other end."""

    def __init__(self, path: str | os.PathLike[str], max_lanes: int, keep_args: bool, budget: int) -> None:
        self.path = path
        self.max_lanes = max_lanes
        self.keep_args = keep_args
        self.names: dict[str, int] = {}
        self.cats: dict[str, int] = {}
        self.lanes: dict[tuple[int, int], int] = {}
        self.labels: dict[tuple[int, int], str] = {}
        self.named: dict[tuple[str, str], tuple[int, int]] = {}  # Proton's string process/thread names
        self.intra: set[tuple[int, int]] = set()  # lanes of a kernel's CTA (Proton's "Core<n> CTA<m>")
        self.start, self.dur = array("d"), array("d")
        self.name, self.stack, self.args = array("I"), array("I"), array("I")
        self.cat, self.lane = array("B"), array("H")
        self.flows = array("d")  # (from_lane, from_ns, to_lane, to_ns) rows, flat
        self.open_flows: tuple[dict[Any, tuple[int, float]], dict[Any, tuple[int, float]]] = ({}, {})
        self.contexts = _Contexts(budget)
        self.index = 0  # of the next event in the file

    def _lane_key(self, pid: Any, tid: Any) -> tuple[int, int]:
        if isinstance(pid, str) or isinstance(tid, str):  # Proton names lanes by strings
            text = (str(pid)[:200], str(tid)[:200])
            key = self.named.get(text)
            if key is None:
                key = self.named[text] = (-1 - len(self.named), 0)
                self.labels[key] = f"{text[0]} · {text[1]}"
                if _PROTON_CTA.search(text[0]) is not None:  # a kernel's CTA: its scopes, per warp
                    self.intra.add(key)
            return key
        return (pid if isinstance(pid, int) else 0, tid if isinstance(tid, int) else 0)

    def _lane(self, key: tuple[int, int]) -> int:
        lane = self.lanes.get(key)
        if lane is None:
            if len(self.lanes) >= self.max_lanes:
                raise FormatError(f"{self.path}: more than {self.max_lanes:,} threads and streams")
            lane = self.lanes[key] = len(self.lanes)
        return lane

    def _cat(self, cat: str) -> int:
        known = self.cats.get(cat)
        if known is None:  # past 255 categories, the rest share one: "other"
            known = self.cats[cat] = (
                len(self.cats) if len(self.cats) < 255 else self.cats.setdefault("other", 255)
            )
        return known

    def add(self, batch: list[Any]) -> None:
        """Fold one batch of parsed events in (FormatError names the first damaged one)."""
        path, names, contexts = self.path, self.names, self.contexts
        start, dur, name_col, cat_col, lane_col = self.start, self.dur, self.name, self.cat, self.lane
        stack_col, args_col = self.stack, self.args
        lanes, lane_key, cat_of = self.lanes, self._lane_key, self._cat
        keep_args, cats, intra = self.keep_args, self.cats, self.intra
        i = self.index - 1
        for ev in batch:
            i += 1
            if ev.__class__ is not dict:
                raise FormatError(f"{path}: trace event {i} is not an object")
            ph = ev.get("ph")
            if ph != "X":
                self._other(i, ph, ev)
                continue
            pid, tid = ev.get("pid", 0), ev.get("tid", 0)
            key = (pid, tid) if pid.__class__ is int and tid.__class__ is int else lane_key(pid, tid)
            try:
                ts = float(ev["ts"])
            except (KeyError, TypeError, ValueError, OverflowError):
                raise FormatError(f"{path}: trace event {i} lacks a ts") from None
            try:
                d = float(ev.get("dur", 0.0))
                name = ev["name"]
            except (KeyError, TypeError, ValueError, OverflowError):
                raise FormatError(f"{path}: trace event {i} lacks a name, ts or dur") from None
            if not abs(ts) <= LARGEST_US:
                raise FormatError(f"{path}: trace event {i} has a ts out of range ({ts:.3g})")
            if not 0 <= d <= LARGEST_US:
                raise FormatError(f"{path}: trace event {i} has a dur out of range ({d:.3g})")
            lane = lanes.get(key)
            if lane is None:
                lane = self._lane(key)
            start.append(ts * 1e3)
            dur.append(d * 1e3)
            if name.__class__ is not str or len(name) > 500:
                name = str(name)[:500]
            name_id = names.get(name)
            if name_id is None:
                name_id = names[name] = len(names)
            name_col.append(name_id)
            cat = ev.get("cat", "")
            cat_id = cats.get(cat) if cat.__class__ is str and not (intra and key in intra) else None
            cat_col.append(
                cat_of("intra" if intra and key in intra else str(cat)[:100]) if cat_id is None else cat_id
            )
            lane_col.append(lane)
            raw = ev.get("args")
            if raw and raw.__class__ is dict:  # many events have none: no call for them
                stack_col.append(contexts.stack_id(raw.get("call_stack")))
                args_col.append(contexts.args_id(raw) if keep_args else 0)
            else:
                stack_col.append(0)
                args_col.append(0)
        self.index = i + 1

    def _other(self, i: int, ph: Any, ev: dict[str, Any]) -> None:
        """A lane's name (``M``) or one end of a flow arrow (``s``, ``f``); other phases are skipped."""
        if ph == "M":
            args = ev.get("args")
            if (
                ev.get("name") == "thread_name"
                and isinstance(args, dict)
                and isinstance(args.get("name"), str)
            ):
                self.labels[self._lane_key(ev.get("pid", 0), ev.get("tid", 0))] = args["name"][:200]
            return
        if ph not in ("s", "f"):
            return
        key = self._lane_key(ev.get("pid", 0), ev.get("tid", 0))
        try:
            ts = float(ev["ts"])
        except (KeyError, TypeError, ValueError, OverflowError):
            raise FormatError(f"{self.path}: trace event {i} lacks a ts") from None
        if not abs(ts) <= LARGEST_US:
            raise FormatError(f"{self.path}: trace event {i} has a ts out of range ({ts:.3g})")
        lane = self._lane(key)
        flow_id = ev.get("id")
        if not isinstance(flow_id, (int, str)) or isinstance(flow_id, bool):
            return  # a flow without a usable id draws no arrow
        ident = (str(ev.get("cat")), flow_id)
        mine, theirs = self.open_flows if ph == "s" else self.open_flows[::-1]
        other = theirs.pop(ident, None)
        if other is None:  # the first end seen: it waits (a later end of the same id replaces it)
            mine[ident] = (lane, ts * 1e3)
            return
        begin, end = ((lane, ts * 1e3), other) if ph == "s" else (other, (lane, ts * 1e3))
        self.flows.extend((begin[0], begin[1], end[0], end[1]))

    def columns(self, info: dict[str, Any]) -> TraceColumns:
        """The columns sorted by start (at equal starts the longer first: a parent before the
        children it encloses), one column at a time so the peak stays near one copy."""
        order = np.lexsort(
            (-np.frombuffer(self.dur, dtype=np.float64), np.frombuffer(self.start, dtype=np.float64))
        )
        out = {}
        for key, kind in _COLUMNS:  # each sorted, then its unsorted array let go
            out[key] = np.frombuffer(getattr(self, key), dtype=kind)[order]
            setattr(self, key, array(getattr(self, key).typecode))
        del order
        notes = []
        if self.contexts.left_out:
            notes.append(
                f"{os.path.basename(os.fspath(self.path))}: the call stacks or args of "
                f"{self.contexts.left_out:,} events are left out (the trace's distinct ones pass "
                f"{self.contexts.budget:,} bytes); keep more with {ARGS_BYTES_ENV}=BYTES"
            )
        return TraceColumns(
            start=out["start"],
            dur=out["dur"],
            name=out["name"],
            cat=out["cat"],
            lane=out["lane"],
            names=list(self.names),
            cats=[name for name, _ in sorted(self.cats.items(), key=lambda kv: kv[1])],
            lanes=[(pid, tid, self.labels.get((pid, tid), "")) for (pid, tid) in self.lanes],
            flows=np.frombuffer(self.flows, dtype=np.float64).reshape(-1, 4).copy(),
            stack=out["stack"],
            stacks=list(self.contexts.stacks),
            args=out["args"],
            arg_sets=list(self.contexts.arg_sets),
            info=info,
            notes=notes,
        )


def read_columns(
    path: str | os.PathLike[str],
    max_lanes: int = 65535,
    args: bool = True,
    chunk: int = CHUNK,
) -> TraceColumns:
    """A Chrome trace (ours, Proton's, any tool's complete "X" events) as columns, read as a
    stream; flow arrows from "s"/"f" pairs. ``args=False`` skips the args other than the call
    stack (readers of times, names and stacks: steps, threads, clocks). FormatError on anything
    damaged."""
    budget = args_budget()
    builder = _Builder(path, max_lanes, args, budget)
    with TraceStream(path, chunk) as stream:
        for batch in stream.batches():
            builder.add(batch)
        info = stream.info
    return builder.columns(info)
