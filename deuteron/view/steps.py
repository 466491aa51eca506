"""A job's ranks step by step: compute, communication (exposed and hidden behind compute) and idle
time per rank and per training step, from the ranks' traces (``deuteron run --trace``) beside
their profiles (``deuteron view NAME.rank*.hatchet --advise`` reads ``NAME.rank<R>.chrome_trace``
where it is there).

**Steps.** A step ends where the rank's optimizer step ends (``-c torch``'s ``optimizer.step
(AdamW)`` span), or, in a program that marks its steps itself, where a scope named ``step``
ends; a step is what lies between two such ends (before the first end, the run's set-up, or in a
trace that was cut part of a step, is left out, as is the tail after the last). Kernels run after
their launch, so each kernel belongs to the step its launch was made in (the trace's launch
arrow), or, without one, the step its start falls in.

**One numbering for all ranks.** Traces start and stop at different moments, so the n-th step of
one trace need not be the n-th of another. The traces are placed on one clock as the timeline
places them (:func:`deuteron.view.rank_traces.clock_places`: one host's clock, or hosts' wall
clocks), and each rank's step is given the number of the reference rank's (the one with most
steps) that ends nearest, within half a step; steps that match none are left out. Traces that
say no clock keep their own numbering, and the finding says so. A trace of another job or rank
than its profile (left from an earlier run) is not read, and said.

**Per step and rank**, over that step's kernels: compute is the time of the non-collective
kernels (summed: kernels on two streams at once count twice, as in ``[ranks]``); communication is
the time some collective kernel ran (NCCL's, RCCL's), split into the part beside another kernel
(hidden) and the rest (exposed); idle is the step's kernel window (first start to last end) less
the time any kernel ran.
"""

from __future__ import annotations

import os
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from deuteron.formats import FormatError, chrome_trace
from deuteron.formats.chrome_trace import TraceColumns
from deuteron.model.trace import COMM_KERNEL, overlap_sweep
from deuteron.view.advise import Advice
from deuteron.view.rank_traces import clock_places

STEP_END = re.compile(r"^(optimizer\.step \(.*\)|step)$")
KERNEL_CATS = ("kernel", "gpu", "cuda", "gpu_kernel", "kernel_nccl")
PER_RANK_ROWS = 4  # up to this many ranks, a row per rank and step; more, a row per step


@dataclass(frozen=True)
class StepTimes:
    """One rank's one step, in ns."""

    step: int
    compute_ns: int
    comm_ns: int
    hidden_ns: int
    idle_ns: int

    @property
    def exposed_ns(self) -> int:
        return self.comm_ns - self.hidden_ns


def trace_beside(source: str) -> str | None:
    """``NAME.rank3.chrome_trace`` for ``NAME.rank3.hatchet`` (or ``.hatchet_msgpack``), if it is there."""
    base, ext = os.path.splitext(source)
    if ext not in (".hatchet", ".hatchet_msgpack"):
        return None
    path = base + ".chrome_trace"
    return path if os.path.isfile(path) else None


def rank_steps(c: TraceColumns) -> list[tuple[float, StepTimes]]:
    """Each step's end (ns, the trace's own clock) and times on one rank, numbered within the
    trace (see the module); [] without two step ends or without kernels."""
    step_names = [i for i, name in enumerate(c.names) if STEP_END.match(name)]  # names once, not events
    marked = np.isin(c.name, step_names)
    ends = np.sort(c.start[marked] + c.dur[marked])
    kernel_cats = [i for i, name in enumerate(c.cats) if name in KERNEL_CATS]
    kernels = np.flatnonzero(np.isin(c.cat, kernel_cats))
    if len(ends) < 2 or not len(kernels):
        return []
    launched: dict[tuple[int, int], float] = {}  # (kernel lane, start ns) -> its launch, from the arrows
    for _, from_ns, to_lane, to_ns in c.flows.tolist():
        launched[(int(to_lane), round(to_ns))] = from_ns
    starts, durs, lanes = c.start[kernels], c.dur[kernels], c.lane[kernels]
    pairs = zip(lanes.tolist(), starts.tolist(), strict=True)
    when = np.asarray([launched.get((int(lane), round(t)), t) for lane, t in pairs])
    step_of = np.searchsorted(ends, when, side="left")  # k: launched after end k-1, by end k
    comm_names = np.asarray([bool(COMM_KERNEL.search(n)) for n in c.names] + [False])
    is_comm = comm_names[c.name[kernels].astype(np.int64)]
    out = []
    for k in range(1, len(ends)):  # before the first end: set-up, or part of a step
        mine = step_of == k
        if not mine.any():
            continue
        s, d, comm = starts[mine], durs[mine], is_comm[mine]
        busy, comm_ns, hidden = overlap_sweep(np.round(s), np.round(s + d), comm)
        window = float((s + d).max() - s.min())
        times = StepTimes(k, int(d[~comm].sum()), comm_ns, hidden, max(int(window) - busy, 0))
        out.append((float(ends[k]), times))
    return out


def _numbered(steps: list[list[tuple[float, StepTimes]]], places: list[float]) -> list[list[StepTimes]]:
    """Every rank's steps numbered as the reference rank's that end nearest on the shared clock
    (within half its median step), from 1; a step that matches none is left out."""
    ref = max(range(len(steps)), key=lambda r: len(steps[r]))
    ref_ends = np.asarray([end + places[ref] for end, _ in steps[ref]])
    period = float(np.median(np.diff(ref_ends))) if len(ref_ends) > 1 else float("inf")
    labelled: list[list[tuple[int, StepTimes]]] = []
    for r, mine in enumerate(steps):
        rows = []
        for end, t in mine:
            j = int(np.argmin(np.abs(ref_ends - (end + places[r]))))
            if abs(ref_ends[j] - (end + places[r])) <= period / 2:
                rows.append((j, t))
        labelled.append(rows)
    first = min((j for rows in labelled for j, _ in rows), default=0)
    return [[replace(t, step=j - first + 1) for j, t in rows] for rows in labelled]


def _ms(ns: float) -> float:
    return round(ns / 1e6, 3)


def step_findings(
    sources: Sequence[str], ranks: Sequence[str], jobs: Sequence[str | None] | None = None
) -> list[Advice]:
    """The ``[steps]`` finding from the traces beside the rank files, or [] where none are there
    (or none has steps). A damaged trace, or one of another job or rank than its profile (``jobs``:
    each profile's job id), is said in the finding's title, not read."""
    read: list[tuple[str, TraceColumns]] = []
    unread: list[str] = []
    other: list[str] = []
    for i, (source, rank) in enumerate(zip(sources, ranks, strict=True)):
        path = trace_beside(source)
        if path is None:
            continue
        try:
            columns = chrome_trace.read_columns(path)
        except FormatError:
            unread.append(os.path.basename(path))
            continue
        job = jobs[i] if jobs is not None else None
        said_job, said_rank = columns.info.get("job_id"), columns.info.get("rank")
        if (job and said_job and said_job != job) or (said_rank is not None and str(said_rank) != rank):
            other.append(os.path.basename(path))
            continue
        read.append((rank, columns))
    if not read:
        return []
    places, how, _ = clock_places([c for _, c in read])
    found = [rank_steps(c) for _, c in read]
    no_clock = how.startswith("the traces say no clock")
    if no_clock:
        numbered = [[t for _, t in steps] for steps in found]
    else:
        numbered = _numbered(found, places)
    per_rank = [(rank, steps) for (rank, _), steps in zip(read, numbered, strict=True) if steps]
    if not per_rank:
        return []
    rows: list[dict[str, object]] = []
    if len(per_rank) <= PER_RANK_ROWS:
        for rank, steps in per_rank:
            rows.extend(
                {
                    "path": f"rank {rank} step {t.step}",
                    "compute_ms": _ms(t.compute_ns),
                    "exposed_communication_ms": _ms(t.exposed_ns),
                    "hidden_communication_ms": _ms(t.hidden_ns),
                    "idle_ms": _ms(t.idle_ns),
                }
                for t in steps
            )
    else:
        by_step: dict[int, list[tuple[str, StepTimes]]] = {}
        for rank, steps in per_rank:
            for t in steps:
                by_step.setdefault(t.step, []).append((rank, t))
        for step, times in sorted(by_step.items()):
            slow_rank, slow = max(times, key=lambda rt: rt[1].compute_ns)
            rows.append(
                {
                    "path": f"step {step}",
                    "ranks": len(times),
                    "compute_ms_median": _ms(statistics.median(t.compute_ns for _, t in times)),
                    "compute_ms_max": _ms(slow.compute_ns),
                    "most_compute": f"rank {slow_rank}",
                    "exposed_communication_ms_median": _ms(statistics.median(t.exposed_ns for _, t in times)),
                    "idle_ms_median": _ms(statistics.median(t.idle_ns for _, t in times)),
                }
            )
    steps_seen = max(len(steps) for _, steps in per_rank)
    ranks_seen = len(per_rank)
    counted = f"{steps_seen} step{'' if steps_seen == 1 else 's'} of {ranks_seen} rank"
    title = (
        f"{counted}{'' if ranks_seen == 1 else 's'}, from their traces: a step runs from one end of the "
        "rank's optimizer step (or of a scope named step) to the next, and holds the kernels launched "
        "in it; compute is the non-collective kernels' time, communication the collectives' (exposed: "
        "beside no other kernel; hidden: beside compute), idle the step's kernel window less the time "
        "any kernel ran; "
    )
    title += (
        "steps numbered within each trace (the traces say no clock)"
        if no_clock
        else "steps matched across the ranks by when they end"
    )
    if unread:
        title += f"; not read (damaged): {', '.join(unread[:4])}"
    if other:
        title += f"; not read (another job's or rank's trace): {', '.join(other[:4])}"
    return [Advice("steps", title, rows)]
