"""A job's ranks step by step: compute, communication (exposed and hidden behind compute) and idle
time per rank and training step, from the ranks' traces (``deuteron run --trace``) beside their
profiles (``deuteron view NAME.rank*.hatchet --advise`` reads ``NAME.rank<R>.chrome_trace`` where
it is there). What a step is, and which kernels belong to it: :mod:`deuteron.view.step_window`.

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
the time any kernel ran; a step's length is from the previous step's end to its own.

**A row per rank, a few ranks.** Ranks times steps would be tens of thousands of rows on a large
job, so each rank is summed up in one row (its median step, its worst step and which one, the
medians of compute, exposed communication and idle), and only the :data:`LISTED_RANKS` ranks
with most compute per step (the ones the others wait for) are listed; the title counts the rest.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from deuteron.formats import FormatError, chrome_trace
from deuteron.formats.chrome_trace import TraceColumns
from deuteron.view.advise import Advice
from deuteron.view.rank_traces import clock_places
from deuteron.view.step_window import StepTimes, rank_steps, trace_beside

LISTED_RANKS = 5  # ranks listed in the [steps] advice, most compute per step first


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


def _rank_row(rank: str, steps: list[StepTimes]) -> dict[str, object]:
    """One rank's steps in one row: the median step and the worst (longest, end to end) with its
    number, and the medians of compute, exposed communication and idle per step."""
    worst = max(steps, key=lambda t: (t.wall_ns, t.compute_ns))
    return {
        "path": f"rank {rank}",
        "steps": len(steps),
        "step_ms_median": _ms(statistics.median(t.wall_ns for t in steps)),
        "worst_step": worst.step,
        "worst_step_ms": _ms(worst.wall_ns),
        "compute_ms_median": _ms(statistics.median(t.compute_ns for t in steps)),
        "exposed_communication_ms_median": _ms(statistics.median(t.exposed_ns for t in steps)),
        "idle_ms_median": _ms(statistics.median(t.idle_ns for t in steps)),
    }


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
    listed = sorted(per_rank, key=lambda rs: -statistics.median(t.compute_ns for t in rs[1]))
    rows = [_rank_row(rank, steps) for rank, steps in listed[:LISTED_RANKS]]
    steps_seen = max(len(steps) for _, steps in per_rank)
    ranks_seen = len(per_rank)
    counted = f"{steps_seen:,} step{'' if steps_seen == 1 else 's'} of {ranks_seen:,} rank"
    title = (
        f"{counted}{'' if ranks_seen == 1 else 's'}, from their traces: a step runs from one end of the "
        "rank's optimizer step (or of a scope named step) to the next, and holds the kernels launched "
        "in it; compute is the non-collective kernels' time, communication the collectives' (exposed: "
        "beside no other kernel; hidden: beside compute), idle the step's kernel window less the time "
        "any kernel ran; a row per rank, most compute first: its median and worst step (end to end), "
        "and its medians per step"
    )
    if ranks_seen > LISTED_RANKS:
        rest = [statistics.median(t.compute_ns for t in steps) for _, steps in listed[LISTED_RANKS:]]
        title += (
            f"; listed: the {LISTED_RANKS} ranks with most compute per step (median; the ones the others "
            f"wait for); {len(rest):,} more not listed (median compute {_ms(min(rest)):,.3f} to "
            f"{_ms(max(rest)):,.3f} ms)"
        )
    title += "; "
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
