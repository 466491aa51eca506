"""Spans in time: what a Chrome/Perfetto trace shows, and GPU kernel spans kept in bulk until then."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deuteron.model.tree import Node

COMM_KERNEL = re.compile(r"nccl|rccl", re.IGNORECASE)  # NCCL's and RCCL's kernels, mangled or not


@dataclass(frozen=True)
class TraceEvent:
    """A span on one lane: a CPU scope on its thread, or a kernel on its device lane."""

    category: str  # "scope" or "kernel" ("metric": a scope given metrics, in Proton's trace)
    name: str
    start_ns: int
    end_ns: int
    lane: int
    call_stack: tuple[str, ...] = ()
    args: dict[str, Any] = field(default_factory=dict)
    launched_from: tuple[int, int] | None = None  # (lane, time) of the launch, drawn as an arrow
    # Proton's own trace names its lanes by strings: (process, thread, category); None for ours
    proton_labels: tuple[str, str, str] | None = None
    # the launch arrow as Proton draws it (a "launch->kernel" flow alone) rather than ours (a
    # "launch" tick on the launching lane and a flow from it)
    proton_flow: bool = False


@dataclass
class KernelSpans:
    """A batch of GPU kernels for the trace, times already on the session's clock.

    Kept as arrays (one row per kernel) rather than events: a long run has millions of kernels,
    and only a trace that is actually written needs them as objects.
    """

    nodes: list[Node | None]  # per group: the node its kernels were filed under; None for groups left out
    # (a GPU backend hands the spans over without nodes; the session that files the groups sets them)
    group_of: np.ndarray  # per kernel: its group
    start: np.ndarray
    end: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    launch: np.ndarray  # launch time, 0 when unknown
    thread: np.ndarray  # launching thread ident, 0 when unknown


def gpu_busy(spans: list[KernelSpans]) -> tuple[int, int]:
    """(time some kernel ran, time from the first kernel's start to the last one's end), in ns:
    the union of every kernel's span on any device, so overlapping kernels count once."""
    if not spans:
        return 0, 0
    start = np.concatenate([s.start for s in spans]).astype(np.int64)
    end = np.concatenate([s.end for s in spans]).astype(np.int64)
    if not len(start):
        return 0, 0
    order = np.argsort(start, kind="stable")
    start, end = start[order], np.maximum(end[order], start[order])
    reach = np.maximum.accumulate(end)
    gaps = np.clip(start[1:] - reach[:-1], 0, None)  # idle between a kernel and all before it
    window = int(reach[-1] - start[0])
    return window - int(gaps.sum()), window


def comm_overlap(spans: list[KernelSpans]) -> tuple[int, int]:
    """(time some collective kernel ran, the part of it while some other kernel ran too), in ns.

    A collective's kernel (:data:`COMM_KERNEL`) overlapped by compute costs nothing extra; the
    rest (exposed communication) is time the rank did nothing but communicate or wait for the
    others."""
    starts, ends, comm = [], [], []
    for s in spans:
        if not len(s.start):
            continue
        is_comm = np.asarray(
            [n is not None and bool(COMM_KERNEL.search(n.name)) for n in s.nodes] + [False], dtype=bool
        )
        starts.append(s.start.astype(np.int64))
        ends.append(s.end.astype(np.int64))
        comm.append(is_comm[np.clip(s.group_of.astype(np.int64), -1, len(s.nodes))])
    if not starts:
        return 0, 0
    _, union, hidden = overlap_sweep(np.concatenate(starts), np.concatenate(ends), np.concatenate(comm))
    return union, hidden


def overlap_sweep(start: np.ndarray, end: np.ndarray, is_comm: np.ndarray) -> tuple[int, int, int]:
    """(time any kernel ran, time a collective ran, time a collective ran beside another kernel)
    in the units given, for kernels as start/end arrays and whether each is a collective.

    One sweep over every start and end: each class's running count says which are active between
    two consecutive boundaries."""
    if not len(start):
        return 0, 0, 0
    start = start.astype(np.int64)
    end = np.maximum(end.astype(np.int64), start)
    times = np.concatenate([start, end])
    step = np.concatenate([np.ones(len(start), np.int64), -np.ones(len(end), np.int64)])
    kind = np.concatenate([is_comm, is_comm]).astype(bool)
    order = np.argsort(times, kind="stable")
    times, step, kind = times[order], step[order], kind[order]
    active_comm = np.cumsum(np.where(kind, step, 0))[:-1] > 0
    active_other = np.cumsum(np.where(kind, 0, step))[:-1] > 0
    length = np.diff(times)
    busy = int(length[active_comm | active_other].sum())
    return busy, int(length[active_comm].sum()), int(length[active_comm & active_other].sum())
