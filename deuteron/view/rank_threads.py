"""A rank's host step by step, from its trace (``deuteron run --trace``): how long its main thread
and its autograd thread were busy per training step, so that a straggler's extra time is looked
for on the host as well as on the GPU (``[straggler]`` of ``deuteron view NAME.rank*.hatchet
--advise``). A rank whose GPU computes as much as the others' but whose CPU is slower (a data
loader, a Python hook, a thread starved of its core) keeps the others waiting just the same, and
its kernels say nothing of it.

- **Steps** as :mod:`deuteron.view.steps` cuts them: from one end of the optimizer step (``-c
  torch``'s ``optimizer.step (AdamW)`` span, or a scope named ``step``) to the next.
- **Threads.** The trace names the main thread. torch runs backward on a thread of its own per
  device: the autograd thread is the other thread most of whose spans lie under a ``backward``
  frame (``-c torch`` files backward ops there). Any other threads are summed as one.
- **Busy** is the time a thread spent inside its recorded spans (ops, modules, launches) within
  the step, overlaps counted once, less the spans that wait rather than work: a ``.item()`` or a
  synchronize blocks for the GPU, c10d's barrier for the other ranks; an effect, not a cause. A
  thread blocked inside another span (a launch queue that is full, the allocator freeing) still
  counts as busy: the GPU's side is then the larger difference, and is named.
- **Waits per step**: a rank's waits at the collectives (from the Flight Recorder, see
  :mod:`deuteron.view.collective_calls`) put into the step in which its CPU made each call, on
  the trace's clock (the recorder's call times are the host's wall clock, and the trace says
  where its zero lies on it: ``zero_ns`` plus ``wall_minus_clock_ns``).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from deuteron.formats.chrome_trace import TraceColumns
from deuteron.model.tree import Profile
from deuteron.view.collectives import CollectiveReport
from deuteron.view.jobs import rank_of
from deuteron.view.step_window import KERNEL_CATS, STEP_END, rank_steps, trace_of_run

# The steps' ends and the kernels' categories as deuteron.view.steps reads them
MAIN, AUTOGRAD, OTHER = "main thread", "autograd thread", "other threads"
WAIT_SPAN = re.compile(
    r"^(aten::(item|_local_scalar_dense|nonzero|equal|is_nonzero)|c10d::(barrier|wait)|"
    r".*[Ss]ynchronize.*|.*\.wait)$"
)


@dataclass
class HostSteps:
    """One rank's steps from its trace: each step's end (ns, the trace's clock), and per step the
    busy time (ns) of each thread role."""

    ends: list[float]
    busy: list[dict[str, float]] = field(default_factory=list)  # step k: from ends[k] to ends[k + 1]

    def median(self, role: str) -> float | None:
        """The role's busy time in a median step (None where no step has that thread)."""
        values = [b[role] for b in self.busy if role in b]
        return float(statistics.median(values)) if values else None


def thread_roles(c: TraceColumns) -> dict[int, str]:
    """Each thread lane's role (see the module); lanes with kernels are GPU streams, left out."""
    kernel_cats = [i for i, name in enumerate(c.cats) if name in KERNEL_CATS]
    on_gpu = set(np.unique(c.lane[np.isin(c.cat, kernel_cats)]).tolist())
    stacked = len(c.stack) == len(c.start)
    backward = np.asarray(["backward" in s for s in c.stacks] + [False])
    roles: dict[int, str] = {}
    for lane, (_, _, label) in enumerate(c.lanes):
        if lane in on_gpu:
            continue
        mine = c.lane == lane
        if not mine.any():
            continue
        if label == MAIN:
            roles[lane] = MAIN
            continue
        under = backward[c.stack[mine].astype(np.int64)] if stacked else np.zeros(0, bool)
        roles[lane] = AUTOGRAD if len(under) and under.mean() > 0.5 else OTHER
    return roles


def _union(starts: np.ndarray, ends: np.ndarray) -> float:
    """The time covered by the spans, overlaps once."""
    if not len(starts):
        return 0.0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    new = np.concatenate(([True], s[1:] > e[:-1]))  # a span past every earlier end opens a block
    first = np.flatnonzero(new)
    last = np.concatenate((first[1:] - 1, [len(s) - 1]))
    return float((e[last] - s[first]).sum())


def host_steps(c: TraceColumns) -> HostSteps:
    """The rank's threads' busy time per step (see the module); no steps without two step ends."""
    step_names = [i for i, name in enumerate(c.names) if STEP_END.match(name)]
    marked = np.isin(c.name, step_names)
    ends = np.sort(c.start[marked] + c.dur[marked])
    out = HostSteps([float(e) for e in ends])
    if len(ends) < 2:
        return out
    roles = thread_roles(c)
    waiting = np.asarray([bool(WAIT_SPAN.match(n)) for n in c.names] + [False])
    is_wait = waiting[c.name.astype(np.int64)]
    stop = c.start + c.dur
    lanes = {lane: np.flatnonzero(c.lane == lane) for lane in roles}
    for a, b in zip(ends[:-1], ends[1:], strict=True):
        busy: dict[str, float] = {}
        for lane, rows in lanes.items():
            s = np.clip(c.start[rows], a, b)
            e = np.clip(stop[rows], a, b)
            inside = e > s
            work = _union(s[inside], e[inside]) - _union(s[inside & is_wait[rows]], e[inside & is_wait[rows]])
            busy[roles[lane]] = busy.get(roles[lane], 0.0) + work
        out.busy.append(busy)
    return out


def wall_zero(c: TraceColumns) -> int | None:
    """The host's wall clock (ns) at the trace's zero, where the trace says its clock."""
    zero, wall = c.info.get("zero_ns"), c.info.get("wall_minus_clock_ns")
    ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (zero, wall))
    return int(zero) + int(wall) if ok else None  # type: ignore[arg-type]


def waits_per_step(steps: HostSteps, zero: int, waits: Sequence[tuple[int, float]]) -> list[float]:
    """The rank's waits (ns) summed per step: each ``(call time on the wall clock, wait)`` in the
    step its CPU made the call in."""
    if len(steps.ends) < 2:
        return []
    ends = np.asarray(steps.ends)
    per = [0.0] * (len(ends) - 1)
    for created, wait in waits:
        k = int(np.searchsorted(ends, created - zero, side="left"))  # made after end k-1, by end k
        if 1 <= k < len(ends):
            per[k - 1] += wait
    return per


@dataclass
class RankStep:
    """One rank's median step from its trace: GPU compute, each thread's busy time, and its waits
    at the collectives (ns; None where the trace or the record cannot say)."""

    steps: int
    compute_ns: float | None
    busy: dict[str, float]
    waits_ns: float | None


@dataclass
class HostCause:
    """The straggler's median step against the typical rank's: one sentence and two rows."""

    sentence: str
    rows: list[dict[str, object]]


def _trace(source: str, profile: Profile) -> TraceColumns | None:
    """The trace beside a rank's file, where it is there, readable and of the same run."""
    return trace_of_run(source, profile.metadata)


def _rank_step(c: TraceColumns, index: int, report: CollectiveReport) -> RankStep | None:
    host = host_steps(c)
    if not host.busy:
        return None
    gpu = [t.compute_ns for _, t in rank_steps(c)]
    roles = {role for b in host.busy for role in b}
    busy = {role: m for role in roles if (m := host.median(role)) is not None}
    waits: float | None = None
    zero = wall_zero(c)
    matched = report.matched
    record = next((r for r in matched.records if r.index == index), None) if matched else None
    if matched is not None and record is not None and zero is not None:
        mine = []
        for call in matched.calls:
            if call.arrivals is not None and index in call.ranks:
                row = record.calls.get((call.group, call.seq))
                if row is not None:
                    mine.append((row.created_ns, call.waits()[call.ranks.index(index)]))
        per = waits_per_step(host, zero, mine)
        waits = float(statistics.median(per)) if per else None
    return RankStep(len(host.busy), float(statistics.median(gpu)) if gpu else None, busy, waits)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def _signed(ns: float) -> str:
    return f"{'+' if ns >= 0 else '-'}{abs(ns) / 1e6:.2f} ms"


def host_cause(
    profiles: Sequence[Profile], sources: Sequence[str], slow: int, typical: int, report: CollectiveReport
) -> HostCause | None:
    """The straggler's median step against the typical rank's, on the GPU and on the host, with
    the waits it causes, naming the larger difference; None without both ranks' traces."""
    steps: dict[int, RankStep] = {}
    for i in (slow, typical):
        c = _trace(sources[i], profiles[i])
        got = _rank_step(c, i, report) if c is not None else None
        if got is None:
            return None
        steps[i] = got
    s, t = steps[slow], steps[typical]
    name, other = rank_of(profiles[slow], slow), rank_of(profiles[typical], typical)
    parts = []
    gpu_diff = None
    if s.compute_ns is not None and t.compute_ns is not None:
        gpu_diff = s.compute_ns - t.compute_ns
        against = f"{_ms(t.compute_ns)} on rank {other}"
        parts.append(f"GPU compute {_ms(s.compute_ns)} against {against} ({_signed(gpu_diff)})")
    host: list[tuple[float, str]] = []
    for role in (AUTOGRAD, MAIN, OTHER):
        if role in s.busy and role in t.busy:
            diff = s.busy[role] - t.busy[role]
            host.append((diff, role))
            parts.append(f"{role} {_ms(s.busy[role])} against {_ms(t.busy[role])} ({_signed(diff)})")
    counted = f"{min(s.steps, t.steps)}" if s.steps == t.steps else f"{s.steps} and {t.steps}"
    sentence = f"per step (medians of {counted} steps in their traces): " + ", ".join(parts)
    if t.waits_ns is not None:
        sentence += f"; rank {other} waits {_ms(t.waits_ns)} a step at the collectives"
    worst_host = max(host, default=None)
    gpu = gpu_diff if gpu_diff is not None else 0.0
    if worst_host is not None and worst_host[0] > gpu and worst_host[0] > 0:
        diff, role = worst_host
        sentence += (
            f": the host's difference is the larger: rank {name}'s {role} {_ms(s.busy[role])} a step "
            f"against {_ms(t.busy[role])} on rank {other} ({_signed(diff)}), its GPU {_signed(gpu)}"
        )
    elif gpu > 0:
        most = f"{_signed(worst_host[0])} ({worst_host[1]})" if worst_host else "not recorded"
        sentence += (
            f": the GPU's difference is the larger ({_signed(gpu)} a step; the host's threads: {most})"
        )
    else:
        sentence += (
            f": neither rank {name}'s GPU nor its threads are busier a step; what holds it up is not "
            "in its trace (its data loader's processes, I/O, another process on its CPU or GPU)"
        )
    rows = []
    for i, r in ((slow, s), (typical, t)):
        row: dict[str, object] = {"path": f"rank {rank_of(profiles[i], i)} per step"}
        if r.compute_ns is not None:
            row["gpu_compute_ms"] = round(r.compute_ns / 1e6, 3)
        for role in (AUTOGRAD, MAIN, OTHER):
            if role in r.busy:
                row[f"{role.replace(' ', '_')}_ms"] = round(r.busy[role] / 1e6, 3)
        if r.waits_ns is not None:
            row["waits_ms"] = round(r.waits_ns / 1e6, 3)
        rows.append(row)
    return HostCause(sentence, rows)
