"""What happened inside a kernel: its ``pl.scope``s, summed per launch for the tree, and the spans of
each CTA's warps for the trace.

A backend that looks inside kernels (GPU instrumentation, or the interpreter's per-program scopes)
hands these to the session; the session files the rows under the kernel's node and keeps the spans
for the trace. They are plain records so that ``model/`` stays free of backends and of Triton.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deuteron.model.tree import Node

# The metrics a scope row carries, by name (Proton's first two; the rest are Deuteron's).
CYCLES = "cycles"  # Proton: the scope's cycles summed over every unit (warp) and CTA that ran it
NORMALIZED_CYCLES = "normalized_cycles"  # Proton: cycles / (CTAs x units)
# How many times the scope ran (per unit, per program): exclusive, so a kernel's launch count
# above it is not inflated by its scopes' instances.
INSTANCES = "instances (exc)"


@dataclass(frozen=True)
class ScopeRow:
    """One ``pl.scope`` of one kernel (one launch, or a batch of launches of the same kernel in the
    same context), with its metrics; ``path`` names the scope and the scopes it is nested in,
    outermost first, so the session can build ``kernel > outer > inner``."""

    path: tuple[str, ...]
    metrics: dict[str, Any]


@dataclass
class IntraSpans:
    """The scope spans of one launch, one row per (CTA, unit, scope instance), on the session's
    clock; kept as arrays because a launch of thousands of CTAs has tens of thousands of spans.

    ``sm`` is the SM (NVIDIA's "Core") the CTA ran on, or -1 in the interpreter (where a "CTA" is a
    program and a unit is the whole program). ``scope`` indexes ``names``. Spans are written with
    the kernel node's call path, found from ``node`` when the trace is written."""

    kernel: str
    names: list[str]
    cta: np.ndarray
    sm: np.ndarray
    unit: np.ndarray
    scope: np.ndarray
    start: np.ndarray
    end: np.ndarray
    unit_label: str = "warp"  # what a unit is: warp, warp group, cta, program
    node: Node | None = None  # the kernel's node, set by the session that files the launch
    args: dict[str, Any] = field(default_factory=dict)  # the same for every row
    row_args: dict[str, np.ndarray] = field(default_factory=dict)  # one value per row, by arg name

    def __len__(self) -> int:
        return len(self.start)
