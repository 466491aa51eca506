"""Spans in time: what a Chrome/Perfetto trace shows, and GPU kernel spans kept in bulk until then."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .tree import Node


@dataclass(frozen=True)
class TraceEvent:
    """A span on one lane: a CPU scope on its thread, or a kernel on its device lane."""

    category: str  # "scope" or "kernel"
    name: str
    start_ns: int
    end_ns: int
    lane: int
    call_stack: tuple[str, ...] = ()
    args: dict[str, Any] = field(default_factory=dict)
    launched_from: tuple[int, int] | None = None  # (lane, time) of the launch, drawn as an arrow


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
