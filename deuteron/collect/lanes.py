"""A session's spans as trace events on lanes: a lane per thread for scopes and interpreted
launches, a lane per (GPU, stream) for GPU kernels, each with an arrow from its launch."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from deuteron.model.trace import KernelSpans, TraceEvent
from deuteron.model.tree import STATE, Node, node_paths

# (kind, node, start_ns, end_ns, thread ident, args): paths are rebuilt from the tree at write time.
RawEvent = tuple[str, Node, int, int, int, "dict[str, Any] | None"]

_MAIN_IDENT = threading.main_thread().ident


def trace_events(
    root: Node, events: Sequence[RawEvent], kernel_spans: Sequence[KernelSpans]
) -> tuple[list[TraceEvent], dict[int, str]]:
    """Spans of scopes, interpreted launches and GPU kernels, and the names of their lanes."""
    paths = node_paths(root)
    lanes: dict[object, int] = {}
    names: dict[int, str] = {}

    def cpu_lane(ident: int) -> int:
        lane = lanes.get(ident)
        if lane is None:
            lane = lanes[ident] = len(lanes)
            names[lane] = "main thread" if ident == _MAIN_IDENT else f"thread {ident}"
        return lane

    out = []
    for kind, node, start, end, ident, args in events:
        path = paths.get(id(node), (node.name,))
        name = node.name if node.type != STATE else path[-2]
        out.append(TraceEvent(kind, name, start, end, cpu_lane(ident), path, args or {}))
    for spans in kernel_spans:
        group_paths = [paths.get(id(n), (n.name,)) if n is not None else None for n in spans.nodes]
        for i, group in enumerate(spans.group_of.tolist()):
            path = group_paths[group]
            if path is None:
                continue
            device, stream = int(spans.device[i]), int(spans.stream[i])
            key = ("gpu", device, stream)
            lane = lanes.get(key)
            if lane is None:
                lane = lanes[key] = 10_000 + len(lanes)
                names[lane] = f"GPU {device} stream {stream}"
            launch = int(spans.launch[i])
            ident = int(spans.thread[i])
            flow = (cpu_lane(ident), launch) if launch and ident else None
            name = path[-1] if spans.nodes[group].type != STATE else path[-2]  # type: ignore[union-attr]
            out.append(
                TraceEvent(
                    "kernel",
                    name,
                    int(spans.start[i]),
                    int(spans.end[i]),
                    lane,
                    path,
                    {"device": device, "stream": stream},
                    flow,
                )
            )
    return out, names
