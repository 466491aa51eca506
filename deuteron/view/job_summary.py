"""The few lines before a merged view of one job's ranks (``deuteron view NAME.rank*.hatchet
--summary``): each rank's total as the merged tree's ROOT shows it (min, median and max over the
ranks, and which rank holds each end), the ranks' GPU compute and communication, their GPU busy
share, and the straggler the others wait for (:mod:`deuteron.view.ranks`' rule, as ``--advise``
names it).

The totals are read from the per-rank trees the merged tree is made of (:func:`deuteron.view.build.
build_ranks`), so they are the numbers of its ROOT, filters included; compute, communication and
busy share are each rank's whole run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from deuteron.model.tree import Profile
from deuteron.render.console import format_cell, format_value
from deuteron.view import processors
from deuteron.view.collectives import collective_report
from deuteron.view.ranks import MIN_SPREAD, RankTimes, rank_times, straggler_index

LISTED = 8  # ranks listed one by one up to this many; beyond, only min, median and max


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.2f} ms"


def _spread(values: Sequence[Any], ranks: Sequence[str], show: Callable[[Any], str] = format_value) -> str:
    """``min X (rank a), median Y, max Z (rank b)``: the merged tree's rule (a NaN counts as 0)."""
    low, median, high = processors.min_median_max(list(values))
    cleaned = [v if isinstance(v, (int, float)) and v == v else 0 for v in values]
    lo_rank = ranks[cleaned.index(low)]
    hi_rank = ranks[cleaned.index(high)]
    return f"min {show(low)} (rank {lo_rank}), median {show(median)}, max {show(high)} (rank {hi_rank})"


def job_summary_lines(
    profiles: Sequence[Profile], ranks: Sequence[str], columns: Sequence[str], trees: Sequence[Profile]
) -> list[str]:
    """The job's summary: ``trees`` are the ranks' trees of ``columns`` (the merged view's parts),
    ``ranks`` their rank names, ``profiles`` the files as read."""
    lines = [f"{len(ranks)} ranks{_job(profiles)}"]
    for column in columns:
        values = [t.root.metrics.get(column) for t in trees]

        def shown(v: Any, c: str = column) -> str:  # as the tree prints the column
            return format_cell(v, c)

        line = f"{column} at ROOT per rank: {_spread(values, ranks, shown)}"
        if len(ranks) <= LISTED:
            line += "; " + ", ".join(f"rank {r} {shown(v)}" for r, v in zip(ranks, values, strict=True))
        lines.append(line)
    times = [rank_times(p, "", i) for i, p in enumerate(profiles)]
    if not any(t.kernels_ns for t in times):
        return lines
    compute = _spread([t.compute_ns for t in times], ranks, _ms)
    comm = _spread([t.comm_ns for t in times], ranks, _ms)
    lines.append(
        f"GPU compute per rank (kernels less collectives): {compute}; "
        f"communication (collectives' kernels, waits included): {comm}"
    )
    if all(t.busy_ns is not None and t.window_ns for t in times):
        shares = [(t.busy_ns or 0) / (t.window_ns or 1) * 100 for t in times]
        lines.append(
            "GPU busy per rank (each process's first kernel to its last): "
            + _spread(shares, ranks, lambda v: f"{v:.1f}%")
        )
    lines.append(_straggler_line(profiles, times))
    return lines


def _job(profiles: Sequence[Profile]) -> str:
    jobs = {p.metadata.get("job_id") for p in profiles} - {None, ""}
    size = {p.metadata.get("world_size") for p in profiles} - {None, ""}
    job = f" of job {jobs.pop()}" if len(jobs) == 1 else ""
    world = f" (world size {size.pop()})" if len(size) == 1 else ""
    return job + world


def straggler_rank(profiles: Sequence[Profile]) -> str | None:
    """The rank the others wait for (as ``--advise`` names it), or None."""
    times = [rank_times(p, "", i) for i, p in enumerate(profiles)]
    if not any(t.kernels_ns for t in times):
        return None
    slow = straggler_index(times, collective_report(list(profiles)))
    return None if slow is None else times[slow].rank


def _straggler_line(profiles: Sequence[Profile], times: list[RankTimes]) -> str:
    report = collective_report(list(profiles))
    slow = straggler_index(times, report)
    if slow is None:
        return (
            f"no straggler: no rank's GPU compute is {MIN_SPREAD:.0%} over the others' median, and the "
            "collectives' record (where the files hold one) names no rank the others wait for"
        )
    s = times[slow]
    others = sorted(t.compute_ns for t in times if t is not s)
    median = processors.min_median_max(list(others))[1]
    why = []
    if report.holds_up == slow:
        why.append(f"the others wait {_ms(report.others_waited_ns)} for it at the collectives")
    ratio = f"{s.compute_ns / median:.2f}x" if median > 0 else "above"
    why.append(f"its GPU compute {_ms(s.compute_ns)} is {ratio} the other ranks' median {_ms(median)}")
    return f"straggler: rank {s.rank}: {'; '.join(why)} (--advise: where its extra time is)"
