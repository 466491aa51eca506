"""Spans in time: what a Chrome/Perfetto trace shows, and GPU kernel spans kept in bulk until then."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deuteron.model.tree import Node


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
