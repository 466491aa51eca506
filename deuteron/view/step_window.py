"""One rank's training steps, from its trace (``deuteron run --trace``) beside its profile: where
each step ends, which kernels belong to it, and how busy the GPU was over the steps alone.

**Steps.** A step ends where the rank's optimizer step ends (``-c torch``'s ``optimizer.step
(AdamW)`` span), or, in a program that marks its steps itself, where a scope named ``step``
ends; a step is what lies between two such ends (before the first end, the run's set-up, or in a
trace that was cut part of a step, is left out, as is the tail after the last). Kernels run after
their launch, so each kernel belongs to the step its launch was made in (the trace's launch
arrow), or, without one, the step its start falls in.

**Over the steps.** The profile's own GPU-busy share (``gpu_busy_ns`` of ``gpu_window_ns``) runs
from the process's first kernel to its last, so model loading, compilation and warm-up count as
idle; :func:`steps_busy` measures it over the kernels launched in the steps only: from the first
one's start to the last one's end, the time some kernel ran.

:mod:`deuteron.view.steps` numbers the steps alike across ranks and gives the ``[steps]`` advice;
:mod:`deuteron.view.summary` and :mod:`deuteron.view.advise` read the share over the steps here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from deuteron.formats import FormatError, chrome_trace
from deuteron.formats.chrome_trace import TraceColumns
from deuteron.model.trace import COMM_KERNEL, overlap_sweep

STEP_END = re.compile(r"^(optimizer\.step \(.*\)|step)$")
KERNEL_CATS = ("kernel", "gpu", "cuda", "gpu_kernel", "kernel_nccl")


@dataclass(frozen=True)
class StepTimes:
    """One rank's one step, in ns: the non-collective kernels' time (summed), the collectives'
    time (some collective ran) and the part of it beside another kernel, the idle time in the
    step's kernel window, the time some kernel ran, and the step's length from the previous step's
    end to its own (the host's view of the step)."""

    step: int
    compute_ns: int
    comm_ns: int
    hidden_ns: int
    idle_ns: int
    busy_ns: int = 0
    wall_ns: int = 0

    @property
    def exposed_ns(self) -> int:
        return self.comm_ns - self.hidden_ns


@dataclass(frozen=True)
class StepsBusy:
    """The GPU's busy time over a rank's steps (see the module): ``steps`` steps, the time some
    of their kernels ran, and the window from their first kernel's start to their last one's end."""

    steps: int
    busy_ns: int
    window_ns: int


def trace_beside(source: str) -> str | None:
    """``NAME.rank3.chrome_trace`` for ``NAME.rank3.hatchet`` (or ``.hatchet_msgpack``), if it is there."""
    base, ext = os.path.splitext(source)
    if ext not in (".hatchet", ".hatchet_msgpack"):
        return None
    path = base + ".chrome_trace"
    return path if os.path.isfile(path) else None


@dataclass
class _Assigned:
    """A trace's step ends (sorted) and its kernels (start, duration, collective or not), each
    with the step it was launched in (k: after end k-1 and by end k; 0: before the first end)."""

    ends: np.ndarray
    starts: np.ndarray
    durs: np.ndarray
    comm: np.ndarray
    step_of: np.ndarray


def _assigned(c: TraceColumns) -> _Assigned | None:
    step_names = [i for i, name in enumerate(c.names) if STEP_END.match(name)]  # names once, not events
    marked = np.isin(c.name, step_names)
    ends = np.sort(c.start[marked] + c.dur[marked])
    kernel_cats = [i for i, name in enumerate(c.cats) if name in KERNEL_CATS]
    kernels = np.flatnonzero(np.isin(c.cat, kernel_cats))
    if len(ends) < 2 or not len(kernels):
        return None
    launched: dict[tuple[int, int], float] = {}  # (kernel lane, start ns) -> its launch, from the arrows
    for _, from_ns, to_lane, to_ns in c.flows.tolist():
        launched[(int(to_lane), round(to_ns))] = from_ns
    starts, durs, lanes = c.start[kernels], c.dur[kernels], c.lane[kernels]
    pairs = zip(lanes.tolist(), starts.tolist(), strict=True)
    when = np.asarray([launched.get((int(lane), round(t)), t) for lane, t in pairs])
    comm_names = np.asarray([bool(COMM_KERNEL.search(n)) for n in c.names] + [False])
    is_comm = comm_names[c.name[kernels].astype(np.int64)]
    step_of = np.searchsorted(ends, when, side="left")
    return _Assigned(ends, starts, durs, is_comm, step_of)


def rank_steps(c: TraceColumns) -> list[tuple[float, StepTimes]]:
    """Each step's end (ns, the trace's own clock) and times on one rank, numbered within the
    trace (see the module); [] without two step ends or without kernels."""
    a = _assigned(c)
    if a is None:
        return []
    out = []
    for k in range(1, len(a.ends)):  # before the first end: set-up, or part of a step
        mine = a.step_of == k
        if not mine.any():
            continue
        s, d, comm = a.starts[mine], a.durs[mine], a.comm[mine]
        busy, comm_ns, hidden = overlap_sweep(np.round(s), np.round(s + d), comm)
        window = float((s + d).max() - s.min())
        wall = int(a.ends[k] - a.ends[k - 1])
        times = StepTimes(k, int(d[~comm].sum()), comm_ns, hidden, max(int(window) - busy, 0), busy, wall)
        out.append((float(a.ends[k]), times))
    return out


def steps_busy(c: TraceColumns) -> StepsBusy | None:
    """The GPU's busy time over the kernels launched in the trace's steps (see the module); None
    without two step ends or without a kernel in a step."""
    a = _assigned(c)
    if a is None:
        return None
    mine = (a.step_of >= 1) & (a.step_of < len(a.ends))
    if not mine.any():
        return None
    s, e = np.round(a.starts[mine]), np.round(a.starts[mine] + a.durs[mine])
    busy, _, _ = overlap_sweep(s, e, np.zeros(len(s), dtype=bool))
    steps = len(np.unique(a.step_of[mine]))
    return StepsBusy(steps, busy, int(e.max() - s.min()))


def trace_of_run(source: str | None, metadata: Mapping[str, object] | None = None) -> TraceColumns | None:
    """The trace beside the profile ``source``; None where there is none, it is damaged, or it
    says another run than the profile's ``metadata`` (its job, rank or process)."""
    path = trace_beside(source) if source else None
    if path is None:
        return None
    try:
        columns = chrome_trace.read_columns(path, args=False)  # streamed; steps need no args
    except (FormatError, OSError):
        return None
    for key in ("job_id", "rank", "pid"):
        mine, said = (metadata or {}).get(key), columns.info.get(key)
        if mine is not None and said is not None and str(mine) != str(said):
            return None
    return columns


def steps_busy_beside(source: str | None, metadata: Mapping[str, object] | None = None) -> StepsBusy | None:
    """:func:`steps_busy` of the trace of the same run beside the profile ``source`` (None where
    there is none, or it has no steps)."""
    columns = trace_of_run(source, metadata)
    return steps_busy(columns) if columns is not None else None
