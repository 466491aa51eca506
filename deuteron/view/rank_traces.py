"""Several ranks' traces on one clock: ``deuteron serve NAME.rank*.chrome_trace`` shows one timeline
with every rank's lanes stacked, and each collective's kernels linked across the ranks.

**The clock.** Each trace's times count from its own zero; the trace says where that zero lies on
its host's clock (``otherData.zero_ns``, ``perf_counter_ns``: CLOCK_MONOTONIC, which every process
of a host shares, and onto which CUPTI's kernel times are calibrated; see
:func:`deuteron.collect.output.trace_other`). So:

- ranks of **one host** are placed by their zeros alone: exact to the clock's calibration;
- ranks of **several hosts** have unrelated monotonic clocks: they are placed first by each host's
  wall clock (NTP: milliseconds apart at worst), then aligned on the collectives' ends. A collective
  (NCCL's, RCCL's kernel) ends on every rank at nearly the same moment, when the last rank's data
  has arrived, whenever each rank started it; each rank is moved by the median difference between
  its collectives' ends and the reference rank's, and the residual (the median distance left) is
  said as how exact the alignment is;
- traces that say only a base time (``baseTimeNanoseconds``: Kineto's, Proton's) are placed by it
  (wall clocks), then aligned on the collectives' ends as hosts' traces are;
- traces without a clock (other tools') are aligned on the collectives' ends alone, or, without
  collectives, start together (and the page says so).

**The links.** Collectives are matched across ranks by kernel name and occurrence (the n-th
``ncclDevKernel_AllReduce_...`` of each rank is one call: every rank of a communicator issues its
collectives in the same order); in a job without GPU collectives, gloo's spans (``gloo:all_reduce``)
stand for them. Each rank's kernel gets an arrow to the kernel of the rank that
started last, the one the others waited for.
"""

from __future__ import annotations

import os
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from deuteron.formats.chrome_trace import TraceColumns
from deuteron.model.errors import DeuteronError
from deuteron.model.trace import COMM_KERNEL

GLOO_SPAN = re.compile(r"^gloo:[a-z_]+$")
RANK_IN_NAME = re.compile(r"(?:^|[._-])rank(\d+)(?:[._-]|$)")
MAX_LINKS = 100_000  # arrows between ranks' collectives a page gets; more are left out, and said
_KERNEL_CATS = ("kernel", "gpu", "cuda", "gpu_kernel", "kernel_nccl")


@dataclass
class JobTrace:
    """The ranks' traces as one: columns on the shared clock, each lane's rank, how the ranks were
    put on one clock (one line), and per rank its source and how far it was moved."""

    columns: TraceColumns
    lane_ranks: list[str]
    clock: str
    ranks: list[dict[str, Any]] = field(default_factory=list)
    links: int = 0
    notes: list[str] = field(default_factory=list)


def trace_rank(columns: TraceColumns, source: str) -> str | None:
    """The rank a trace says it is (its ``otherData``), else the one in its file name (``x.rank3.json``)."""
    rank = columns.info.get("rank")
    if isinstance(rank, (str, int)) and not isinstance(rank, bool) and str(rank).isdigit():
        return str(rank)
    found = RANK_IN_NAME.search(os.path.basename(source))
    return found.group(1) if found else None


def is_job(traces: Sequence[TraceColumns], sources: Sequence[str]) -> bool:
    """Two or more traces, each of a rank: shown as one job rather than one trace at a time."""
    ranked = (trace_rank(c, s) is not None for c, s in zip(traces, sources, strict=True))
    return len(traces) >= 2 and all(ranked)


def not_one_job(traces: Sequence[TraceColumns], sources: Sequence[str]) -> str | None:
    """Why ranked traces are not one job's (two jobs, or one rank twice), or None: such traces are
    shown one at a time, never mixed on one clock."""
    ranks = [trace_rank(c, s) or str(i) for i, (c, s) in enumerate(zip(traces, sources, strict=True))]
    try:
        _check_one_job(traces, sources, ranks)
    except DeuteronError as why:
        return str(why)
    return None


def _check_one_job(traces: Sequence[TraceColumns], sources: Sequence[str], ranks: list[str]) -> None:
    seen: dict[str, str] = {}
    for rank, source in zip(ranks, sources, strict=True):
        if rank in seen:
            raise DeuteronError(f"{seen[rank]} and {source} are both rank {rank}: give one trace per rank")
        seen[rank] = source
    jobs: dict[str, list[str]] = {}
    for c, source in zip(traces, sources, strict=True):
        job = c.info.get("job_id")
        if isinstance(job, str) and job:
            jobs.setdefault(job, []).append(source)
    if len(jobs) > 1:
        groups = "; ".join(f"{', '.join(files)} (job {job})" for job, files in jobs.items())
        raise DeuteronError(f"these traces are from {len(jobs)} jobs: {groups}; show one job's traces")


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def clock_places(traces: Sequence[TraceColumns]) -> tuple[list[float], str, bool]:
    """Each trace's zero on a shared clock (ns), how that was decided, and whether the collectives'
    ends should refine it (they should wherever the ranks' clocks are not one)."""
    zero = [_int(c.info.get("zero_ns")) for c in traces]
    hosts = {c.info.get("host") for c in traces}
    if all(z is not None for z in zero) and len(hosts) == 1 and None not in hosts:
        host = next(iter(hosts))
        return [float(z or 0) for z in zero], f"one host ({host}): the ranks share its monotonic clock", False
    wall = [_int(c.info.get("wall_minus_clock_ns")) for c in traces]
    if all(z is not None for z in zero) and all(w is not None for w in wall):
        places = [float((z or 0) + (w or 0)) for z, w in zip(zero, wall, strict=True)]
        return places, f"{len(hosts)} hosts: placed by their wall clocks", True
    base = [_int(c.info.get("baseTimeNanoseconds")) for c in traces]  # Kineto's and Proton's
    if all(b is not None for b in base):
        return [float(b or 0) for b in base], "placed by their base times (baseTimeNanoseconds)", True
    return [0.0] * len(traces), "the traces say no clock: each starts at its own zero", True


def _collectives(c: TraceColumns, kernels: bool) -> dict[tuple[str, int], int]:
    """A rank's collectives by (name, occurrence): event index of each. ``kernels``: NCCL's or
    RCCL's kernels; else gloo's spans on the CPU (``gloo:all_reduce``, torch's name for the work
    its gloo thread does, which like a kernel ends when every rank's data is in)."""
    if kernels:
        chosen = {i for i, name in enumerate(c.cats) if name in _KERNEL_CATS}
        names = {i for i, name in enumerate(c.names) if COMM_KERNEL.search(name)}
    else:
        chosen = set(range(len(c.cats)))
        names = {i for i, name in enumerate(c.names) if GLOO_SPAN.match(name)}
    out: dict[tuple[str, int], int] = {}
    seen: dict[int, int] = {}
    for i in np.flatnonzero(np.isin(c.name, list(names)) & np.isin(c.cat, list(chosen))).tolist():
        n = int(c.name[i])
        k = seen.get(n, 0)
        seen[n] = k + 1
        out[(c.names[n], k)] = i
    return out


MAX_SKEW = 8  # calls one trace may begin before or after another (a trace cut, or started late)
ALIKE_NS = 20_000  # moves whose ends' spread is within this of the tightest are equally good


def _renumber(
    traces: Sequence[TraceColumns],
    calls: list[dict[tuple[str, int], int]],
    shift: list[float],
    shared_clock: bool = False,
) -> dict[int, int]:
    """Number each rank's collectives as the reference rank's are, in place.

    The n-th call of a kind is the same call on every rank only where every trace holds all of
    them; a trace cut at a moment (a ring buffer, a trimmed file, a profiler started late) begins
    a few calls later or earlier. So per kind, each rank's calls are tried against the reference's
    moved by -MAX_SKEW..MAX_SKEW places. The right move makes every call's end differ from the
    reference's by one offset (the clocks' error): the moves whose differences spread least (their
    median distance from their median, within twice the tightest and ``ALIKE_NS``) are kept, and of
    them the one whose offset is smallest on the clock as placed so far (``shift``). Both matter:
    calls come at uneven gaps, so a wrong move spreads the differences; but a training job repeats
    its calls step after step, so a move by one step's calls lines them up as well, a step away.
    On one clock (``shared_clock``: the ranks of one host) the right move is the one whose
    offset is smallest, whatever the spreads: a call ends at one moment on every rank, and the
    spread only measures how late each rank's thread saw it (on a busy host, milliseconds), which
    can exceed that of a wrong move when the calls come at even gaps (a loop of four all-reduces
    30 ms apart was renumbered by one call).
    Returns the ranks matched with a move, and the largest move of each: worth saying, as hosts'
    clocks a step or more apart would give the same."""
    ref = max(range(len(traces)), key=lambda r: len(calls[r]))
    ends = [c.start + c.dur + s for c, s in zip(traces, shift, strict=True)]

    def by_kind(r: int) -> dict[str, list[tuple[int, int]]]:
        kinds: dict[str, list[tuple[int, int]]] = {}
        for (name, k), i in calls[r].items():
            kinds.setdefault(name, []).append((k, i))
        return {name: sorted(rows) for name, rows in kinds.items()}

    mine = by_kind(ref)
    moved: dict[int, int] = {}
    for r in range(len(traces)):
        if r == ref:
            continue
        renumbered: dict[tuple[str, int], int] = {}
        for name, rows in by_kind(r).items():
            theirs = [float(ends[ref][i]) for _, i in mine.get(name, [])]
            own = [float(ends[r][i]) for _, i in rows]
            tried: list[tuple[float, float, int]] = []  # (spread, |offset|, |move|) per move
            for d in range(-MAX_SKEW, MAX_SKEW + 1):
                diffs = [theirs[k + d] - e for k, e in enumerate(own) if 0 <= k + d < len(theirs)]
                if len(diffs) < min(3, len(own), len(theirs)):
                    continue
                middle = statistics.median(diffs)
                tried.append((statistics.median(abs(x - middle) for x in diffs), abs(middle), d))
            best = 0
            if tried:
                tightest = min(spread for spread, _, _ in tried)
                alike = tried if shared_clock else [t for t in tried if t[0] <= 2 * tightest + ALIKE_NS]
                best = min(alike, key=lambda t: (t[1], abs(t[2])))[2]
            for k, i in rows:
                renumbered[(name, k + best)] = i
            if best and abs(best) > abs(moved.get(r, 0)):
                moved[r] = best
        calls[r] = renumbered
    return moved


def _align(
    traces: Sequence[TraceColumns], shift: list[float], calls: list[dict[tuple[str, int], int]], move: bool
) -> tuple[list[float], str]:
    """Each rank's correction from its collectives' ends against the reference rank's (the one
    with most collectives), and one line on how well the ends agree afterwards."""
    ref = max(range(len(traces)), key=lambda r: len(calls[r]))
    ref_end = {
        k: float(traces[ref].start[i] + traces[ref].dur[i]) + shift[ref] for k, i in calls[ref].items()
    }
    corrections = [0.0] * len(traces)
    residuals: list[float] = []
    matched = 0
    for r, c in enumerate(traces):
        if r == ref:
            continue
        diffs = [
            ref_end[k] - (float(c.start[i] + c.dur[i]) + shift[r])
            for k, i in calls[r].items()
            if k in ref_end
        ]
        if not diffs:
            continue
        matched = max(matched, len(diffs))
        middle = statistics.median(diffs)
        if move:
            corrections[r] = middle
        residuals.append(statistics.median(abs(d - (middle if move else 0.0)) for d in diffs))
    if not residuals:
        return corrections, "no collective is matched across the ranks"
    worst = max(residuals)
    verb = "aligned on" if move else "checked against"
    return corrections, (
        f"{verb} {matched:,} collectives' ends: the ranks' ends differ by {worst / 1e3:.1f} µs "
        f"(median; worst rank)"
    )


def join(traces: Sequence[TraceColumns], sources: Sequence[str]) -> JobTrace:
    """The ranks' traces as one (see the module); DeuteronError for traces of two jobs or one rank twice."""
    ranks = [trace_rank(c, s) or str(i) for i, (c, s) in enumerate(zip(traces, sources, strict=True))]
    _check_one_job(traces, sources, ranks)
    order = sorted(range(len(traces)), key=lambda r: (int(ranks[r]) if ranks[r].isdigit() else 1 << 30, r))
    traces = [traces[r] for r in order]
    sources = [sources[r] for r in order]
    ranks = [ranks[r] for r in order]
    places, how, refine = clock_places(traces)
    calls = [_collectives(c, kernels=True) for c in traces]
    if not any(calls):  # no GPU collectives (a gloo job on CPUs): gloo's spans
        calls = [_collectives(c, kernels=False) for c in traces]
    base = min(places)
    shift = [p - base for p in places]
    moved = _renumber(traces, calls, shift, shared_clock=not refine)
    corrections, agreement = _align(traces, shift, calls, refine)
    shift = [s + k for s, k in zip(shift, corrections, strict=True)]
    low = (
        min(float(c.start.min()) + s for c, s in zip(traces, shift, strict=True) if len(c.start))
        if any(len(c.start) for c in traces)
        else 0.0
    )
    shift = [s - low for s in shift]  # the earliest event of any rank at 0
    columns, lane_of = _concatenate(traces, shift)
    lane_ranks = [ranks[r] for r, lanes in enumerate(lane_of) for _ in lanes]
    columns, links = _link(columns, traces, calls, shift, lane_of)
    size = {str(c.info.get("world_size")) for c in traces} - {"None"}
    notes = [note for c in traces for note in c.notes]  # what each rank's reader left out
    if len(size) == 1 and next(iter(size)).isdigit():
        missing = sorted(set(range(int(next(iter(size))))) - {int(r) for r in ranks if r.isdigit()})
        if missing:
            shown = ", ".join(str(r) for r in missing[:8]) + (", ..." if len(missing) > 8 else "")
            notes.append(f"{len(ranks)} of the job's {next(iter(size))} ranks given; missing: rank {shown}")
    if links >= MAX_LINKS:
        notes.append(f"the first {MAX_LINKS:,} links between the ranks' collectives are drawn")
    per_rank = [
        {"rank": r, "source": s, "host": str(c.info.get("host", "")), "shift_ns": round(k)}
        for r, s, c, k in zip(ranks, sources, traces, shift, strict=True)
    ]
    clock = f"{how}; {agreement}"
    for r, d in sorted(moved.items()):
        calls_apart = f"{abs(d)} collective call{'s' if abs(d) != 1 else ''}"
        clock += (
            f"; rank {ranks[r]}'s trace begins {calls_apart} {'after' if d > 0 else 'before'} the others'"
        )
        if refine:  # or its clock is a step away: the same calls would match the same way
            clock += " (or its host's clock is a step or more off, and so is the rank here)"
    return JobTrace(columns, lane_ranks, clock, per_rank, links, notes)


def _intern(table: dict[Any, int], items: Sequence[Any]) -> np.ndarray:
    return np.asarray([table.setdefault(x, len(table)) for x in items], dtype=np.int64)


def _concatenate(traces: Sequence[TraceColumns], shift: list[float]) -> tuple[TraceColumns, list[list[int]]]:
    """The traces' events in one set of columns (names, categories, stacks and args interned anew;
    lanes numbered rank after rank), sorted by start as :func:`read_columns` sorts them."""
    names: dict[str, int] = {}
    cats: dict[str, int] = {}
    stacks: dict[tuple[str, ...], int] = {(): 0}
    arg_sets: dict[tuple[tuple[str, str], ...], int] = {(): 0}
    keys = ("start", "dur", "name", "cat", "lane", "stack", "args")
    parts: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    lanes: list[tuple[int, int, str]] = []
    lane_of: list[list[int]] = []
    flows = []
    for c, s in zip(traces, shift, strict=True):
        first = len(lanes)
        lanes.extend(c.lanes)
        lane_of.append(list(range(first, len(lanes))))
        n = len(c.start)
        parts["start"].append(c.start + s)
        parts["dur"].append(c.dur)
        parts["name"].append(_intern(names, c.names)[c.name.astype(np.int64)] if n else np.zeros(0, np.int64))
        cat_ids = _intern(cats, c.cats)
        parts["cat"].append(cat_ids[c.cat.astype(np.int64)] if n else np.zeros(0, np.int64))
        parts["lane"].append(c.lane.astype(np.int64) + first)
        stack_ids, args_ids = _intern(stacks, c.stacks), _intern(arg_sets, c.arg_sets)
        none = np.zeros(n, np.int64)
        parts["stack"].append(stack_ids[c.stack.astype(np.int64)] if len(c.stack) == n else none)
        parts["args"].append(args_ids[c.args.astype(np.int64)] if len(c.args) == n else none)
        if len(c.flows):
            f = c.flows.copy()
            f[:, 0] += first
            f[:, 2] += first
            f[:, 1] += s
            f[:, 3] += s
            flows.append(f)
    if len(lanes) > 65535:
        raise DeuteronError(f"the ranks' traces have {len(lanes):,} lanes together; at most 65,535 show")
    if len(cats) > 255:
        raise DeuteronError(f"the ranks' traces have {len(cats):,} categories together; at most 255 show")
    col = {k: np.concatenate(v) for k, v in parts.items()}
    order = np.lexsort((-col["dur"], col["start"]))
    columns = TraceColumns(
        start=col["start"][order],
        dur=col["dur"][order],
        name=col["name"][order].astype(np.uint32),
        cat=col["cat"][order].astype(np.uint8),
        lane=col["lane"][order].astype(np.uint16),
        names=list(names),
        cats=list(cats),
        lanes=lanes,
        flows=np.concatenate(flows) if flows else np.zeros((0, 4)),
        stack=col["stack"][order].astype(np.uint32),
        stacks=list(stacks),
        args=col["args"][order].astype(np.uint32),
        arg_sets=list(arg_sets),
        notes=[note for c in traces for note in c.notes],
    )
    return columns, lane_of


def _link(
    columns: TraceColumns,
    traces: Sequence[TraceColumns],
    calls: list[dict[tuple[str, int], int]],
    shift: list[float],
    lane_of: list[list[int]],
) -> tuple[TraceColumns, int]:
    """An arrow from each rank's kernel of a collective to the kernel of the rank that started it
    last (at most :data:`MAX_LINKS`)."""
    keys: dict[tuple[str, int], list[tuple[float, int]]] = {}
    for r, by_key in enumerate(calls):
        c = traces[r]
        for key, i in by_key.items():
            keys.setdefault(key, []).append((float(c.start[i]) + shift[r], lane_of[r][int(c.lane[i])]))
    rows: list[tuple[float, float, float, float]] = []
    for arrivals in keys.values():
        if len(arrivals) < 2:
            continue
        last = max(arrivals)
        for at, lane in arrivals:
            if (at, lane) != last and len(rows) < MAX_LINKS:
                rows.append((lane, at, last[1], last[0]))
    if not rows:
        return columns, 0
    links = np.asarray(rows, dtype=np.float64)
    return replace(columns, flows=np.concatenate([columns.flows.reshape(-1, 4), links])), len(rows)
