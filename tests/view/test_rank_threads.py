"""A rank's host per step from its trace (deuteron.view.rank_threads): which thread is which, the
time each was busy per step less the spans that wait, and the waits put into their steps."""

from __future__ import annotations

from pathlib import Path

from deuteron.formats import chrome_trace
from deuteron.model.trace import TraceEvent
from deuteron.view.rank_threads import (
    AUTOGRAD,
    MAIN,
    OTHER,
    host_steps,
    thread_roles,
    waits_per_step,
    wall_zero,
)
from tests.helpers.rank_traces import unpacked

MS = 1_000_000


def _span(name: str, start: float, end: float, lane: int, stack: tuple[str, ...] = ("ROOT",)) -> TraceEvent:
    return TraceEvent("scope", name, int(start * MS), int(end * MS), lane, stack)


def test_threads_are_told_apart_and_their_busy_time_counts_overlaps_once_and_no_waits(tmp_path: Path) -> None:
    events = [
        _span("optimizer.step (AdamW)", 9, 10, 1),
        # step 1 (10 to 50 ms): the main thread works 4 + 3 ms (a nested op counted once) and
        # waits 10 ms at .item(); the autograd thread works 12 ms, from 40 ms on past the step's
        # end (only 10 ms of it in the step); a loader thread 5 ms
        _span("forward", 11, 15, 1),
        _span("aten::mm", 12, 14, 1),
        _span("aten::item", 20, 30, 1),
        _span("aten::add", 31, 34, 1),
        _span("aten::mm", 40, 52, 2, ("ROOT", "backward")),
        _span("collate", 11, 16, 3),
        TraceEvent("kernel", "gemm", int(12 * MS), int(14 * MS), 9),
        _span("optimizer.step (AdamW)", 49, 50, 1),
        _span("optimizer.step (AdamW)", 89, 90, 1),
    ]
    path = tmp_path / "x.chrome_trace"
    lanes = {1: "main thread", 2: "thread 77", 3: "thread 78"}
    chrome_trace.write(events, path, lane_names=lanes, other={"rank": "0", "wall_minus_clock_ns": 5 * MS})
    c = chrome_trace.read_columns(path)
    assert sorted(thread_roles(c).values()) == sorted([MAIN, AUTOGRAD, OTHER])  # the GPU lane is none
    steps = host_steps(c)
    assert steps.ends == [
        10 * MS - 9 * MS,
        50 * MS - 9 * MS,
        90 * MS - 9 * MS,
    ]  # from the trace's zero (9 ms)
    # main: 4 (forward, with its mm) + 3 (add) + 1 (the optimizer step ending the step); not .item()'s 10
    assert steps.busy[0] == {MAIN: 8 * MS, AUTOGRAD: 10 * MS, OTHER: 5 * MS}
    assert steps.busy[1] == {MAIN: 1 * MS, AUTOGRAD: 2 * MS, OTHER: 0.0}
    assert steps.median(AUTOGRAD) == 6 * MS
    # waits by when the CPU made the call, on the host's wall clock: the trace's zero is at 9 ms of
    # its clock, 14 ms of the wall; calls made at 30 and 60 ms of the trace's clock (wall 35, 65)
    zero = wall_zero(c)
    assert zero == 14 * MS
    assert waits_per_step(steps, zero, [(35 * MS, 2.0 * MS), (65 * MS, 3.0 * MS), (5 * MS, 9.0)]) == [
        2 * MS,
        3 * MS,
    ]


def test_a_trace_without_a_clock_or_steps_says_none(tmp_path: Path) -> None:
    path = tmp_path / "x.chrome_trace"
    chrome_trace.write([_span("optimizer.step (AdamW)", 9, 10, 1)], path, lane_names={1: "main thread"})
    c = chrome_trace.read_columns(path)
    assert wall_zero(c) is None and host_steps(c).busy == []


def test_the_recorded_ddp_ranks_threads_work_alike(tmp_path: Path) -> None:
    """The DDP fixture's straggler computes twice the tokens on its GPU; its host does the same
    work as rank 0's: each thread within half a millisecond a step of the other rank's."""
    folder = unpacked("ddp", tmp_path, only=".chrome_trace")
    busy = [host_steps(chrome_trace.read_columns(folder / f"deuteron.rank{r}.chrome_trace")) for r in (0, 1)]
    assert [len(b.busy) for b in busy] == [2, 2]
    for role in (MAIN, AUTOGRAD):
        mine, theirs = (b.median(role) for b in busy)
        assert mine is not None and theirs is not None and 4 * MS < mine < 8 * MS
        assert abs(mine - theirs) < 0.5 * MS, role
