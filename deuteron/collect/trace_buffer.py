"""A session's trace while it records: the spans of scopes and interpreted launches, GPU kernels'
spans by batch, and kernels' own scopes per CTA, all within one limit.

A long run makes millions of spans; the tree needs none of them, the trace file all. So spans are
kept up to :data:`TRACE_LIMIT` in all and past it only counted (``dropped``, said in the file's
metadata). The buffer holds raw spans (nodes, not paths): paths and lanes are made once, at write
time, by :mod:`.lanes`.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol

from deuteron.collect import lanes
from deuteron.model.intra import IntraSpans
from deuteron.model.trace import KernelSpans, TraceEvent, comm_overlap, gpu_busy
from deuteron.model.tree import Node, Profile, node_paths

TRACE_LIMIT = int(os.environ.get("DEUTERON_TRACE_LIMIT", "1000000"))


class FrameworkSpans(Protocol):
    """A framework context with CPU spans of its own (torch's modules, ops and backward nodes)."""

    def spans(self, start: int = 0) -> tuple[list[tuple[Node, int, int, int]], int]: ...


class TraceBuffer:
    """The spans of one session, bounded (see the module); ``lock`` is the session's, which the
    writers of events hold already on the scope path."""

    def __init__(self, lock: threading.Lock, proton_shape: bool = False) -> None:
        self.lock = lock
        self.proton_shape = proton_shape  # start(data="trace"): Proton's trace, see events()
        self.events: list[lanes.RawEvent] = []
        self.kernel_spans: list[KernelSpans] = []
        self.intra_spans: list[IntraSpans] = []  # kernels' scopes per CTA and unit (pl.scope)
        self.dropped = 0
        self.framework_spans_cleared = 0  # a framework's spans before this were in a written part
        self.framework_spans_read = 0

    def add_event(self, event: lanes.RawEvent) -> None:
        """Keep a span of a scope or an interpreted launch; the caller holds the lock."""
        if len(self.events) < TRACE_LIMIT:
            self.events.append(event)
        else:
            self.dropped += 1

    def _room(self) -> int:
        return TRACE_LIMIT - len(self.events) - sum(len(s.start) for s in self.kernel_spans)

    def add_intra_spans(self, spans: IntraSpans) -> None:
        """Keep a launch's per-CTA scope spans, all or none of them."""
        with self.lock:
            if self._room() - sum(len(s) for s in self.intra_spans) < len(spans):
                self.dropped += len(spans)
                return
            self.intra_spans.append(spans)

    def add_kernel_spans(self, spans: KernelSpans) -> None:
        """Keep a batch of GPU kernel spans while any room is left."""
        with self.lock:
            if self._room() <= 0:
                self.dropped += len(spans.start)
                return
            self.kernel_spans.append(spans)

    def clear(self) -> None:
        """A part was written (Proton's periodic flushing): its spans go with it, the kernels'
        per-program scope spans too (else every later part repeats them, and they fill the limit)."""
        self.events = []
        self.kernel_spans = []
        self.intra_spans = []
        self.framework_spans_cleared = self.framework_spans_read

    def gpu_metadata(self) -> dict[str, Any]:
        """What ``deuteron view --advise`` needs of the kernels' spans: the GPU's busy share, and
        how much of a rank's collectives other kernels hid."""
        if not self.kernel_spans:
            return {}
        busy, window = gpu_busy(self.kernel_spans)
        found: dict[str, Any] = {"gpu_busy_ns": busy, "gpu_window_ns": window}
        comm, overlapped = comm_overlap(self.kernel_spans)
        if comm:
            found.update(gpu_comm_ns=comm, gpu_comm_overlapped_ns=overlapped)
        return found

    def trace_events(
        self, profile: Profile, framework: FrameworkSpans | None
    ) -> tuple[list[TraceEvent], dict[int, str]]:
        """Spans of scopes, interpreted launches and GPU kernels, and the names of their lanes
        (``framework``: torch's CPU spans, on the thread lanes). Proton's shape (Triton 3.9's
        trace): a scope event per scope (a metric event, named by its metrics, where it was given
        any), kernels with their call stacks and an arrow from each launch, and no lane names."""
        raw = self.events
        if framework is not None:
            # torch's buffer holds the whole run's: only those not written with an earlier part
            spans, left_out = framework.spans(self.framework_spans_cleared)
            self.framework_spans_read = self.framework_spans_cleared + len(spans)
            raw = [("scope", node, t0, t1, ident, None) for node, t0, t1, ident in spans] + raw
            if left_out:
                profile.metadata["torch_spans_left_out"] = left_out
        events, names = lanes.trace_events(profile.root, raw, self.kernel_spans, self.intra_spans)
        if self.proton_shape:
            shift = lanes.cupti_shift(self.intra_spans, self.kernel_spans)
            paths = node_paths(profile.root)
            inside = lanes.intra_events(self.intra_spans, paths, proton_shape=True, shift=shift)[0]
            graph_scopes, graph_lanes = lanes.graph_scope_events(events)
            return lanes.proton_events(events) + graph_scopes + inside, graph_lanes
        return events, names
