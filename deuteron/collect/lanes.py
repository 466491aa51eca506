"""A session's spans as trace events on lanes: a lane per thread for scopes and interpreted
launches, a lane per (GPU, stream) for GPU kernels, each with an arrow from its launch."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from deuteron.collect.deferred import DeferredValue
from deuteron.collect.placement import CAPTURED_AT
from deuteron.model.intra import IntraSpans
from deuteron.model.trace import KernelSpans, TraceEvent
from deuteron.model.tree import LAUNCH_METADATA_STATE, METRIC_KERNEL, STATE, Node, node_paths

# (kind, node, start_ns, end_ns, thread ident, args): paths are rebuilt from the tree at write time.
RawEvent = tuple[str, Node, int, int, int, "dict[str, Any] | None"]

_MAIN_IDENT = threading.main_thread().ident
GPU_LANE_BASE = 10_000  # lanes of GPU streams are numbered from here, after the threads'


def trace_events(
    root: Node,
    events: Sequence[RawEvent],
    kernel_spans: Sequence[KernelSpans],
    intra_spans: Sequence[IntraSpans] = (),
) -> tuple[list[TraceEvent], dict[int, str]]:
    """Spans of scopes, interpreted launches, GPU kernels and the scopes inside kernels (per CTA
    and unit), and the names of their lanes."""
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
        if args is not None and "metrics" in args:  # a scope's metrics: device values read now
            given = args["metrics"].items()
            args = {"metrics": {k: v.value() if isinstance(v, DeferredValue) else v for k, v in given}}
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
                lane = lanes[key] = GPU_LANE_BASE + len(lanes)
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
    inside, inside_names, _ = intra_events(intra_spans, paths, shift=cupti_shift(intra_spans, kernel_spans))
    names.update(inside_names)
    return out + inside, names


INTRA_LANES = 512  # lanes of CTAs' units a trace keeps, all kernels together; spans beyond are left out
INTRA_BASE = 20_000  # intra-kernel lanes are numbered after the CPU and GPU ones


def cupti_shift(intra: Sequence[IntraSpans], kernels: Sequence[KernelSpans]) -> int:
    """How far to move the spans inside kernels so that they sit in their kernels' CUPTI spans.

    CTA spans come from the GPU's global timer; CUPTI's kernel times are the same timer brought onto
    the host's clock by CUPTI, and the two differ by a near-constant amount (0.35-0.46 ms measured on
    an H200). Where both backends ran, the earliest CTA span of each kernel node is matched with the
    earliest CUPTI span of that node, and the median difference moves every CTA span; without
    CUPTI spans nothing moves (0)."""
    first_kernel: dict[int, int] = {}
    for spans in kernels:
        for group, node in enumerate(spans.nodes):
            if node is None:
                continue
            mine = spans.start[spans.group_of == group]
            if len(mine):
                key = id(node)
                first_kernel[key] = min(first_kernel.get(key, int(mine.min())), int(mine.min()))
    first_intra: dict[int, int] = {}
    for s in intra:
        if s.node is not None and len(s):
            key = id(s.node)
            first_intra[key] = min(first_intra.get(key, int(s.start.min())), int(s.start.min()))
    diffs = sorted(first_kernel[k] - first_intra[k] for k in first_intra if k in first_kernel)
    return diffs[len(diffs) // 2] if diffs else 0


def intra_events(
    all_spans: Sequence[IntraSpans],
    paths: dict[int, tuple[str, ...]],
    proton_shape: bool = False,
    shift: int = 0,
) -> tuple[list[TraceEvent], dict[int, str], int]:
    """The scope spans inside kernels: a lane per (kernel, CTA, unit), named like Proton's
    ``"kernel Core<SM> CTA<n>"`` process and ``"warp <w>"`` thread; the first ``INTRA_LANES`` lanes
    are kept, and the number of spans left out is returned with them. ``shift`` (ns) moves them all
    (see :func:`cupti_shift`)."""
    lanes: dict[tuple[str, int, int], int] = {}
    names: dict[int, str] = {}
    out: list[TraceEvent] = []
    dropped = 0
    for spans in all_spans:
        stack = paths.get(id(spans.node), (spans.kernel,)) if spans.node is not None else (spans.kernel,)
        ctas, sms, units = spans.cta.tolist(), spans.sm.tolist(), spans.unit.tolist()
        scopes, starts, ends = spans.scope.tolist(), spans.start.tolist(), spans.end.tolist()
        row_args = {key: values.tolist() for key, values in spans.row_args.items()}
        for i in range(len(starts)):
            key = (spans.kernel, ctas[i], units[i])
            lane = lanes.get(key)
            if sms[i] >= 0:  # a GPU CTA on its SM, one of its warps (Proton's names)
                process = f"{spans.kernel} Core{sms[i]} CTA{ctas[i]}"
                thread = f"{spans.unit_label} {units[i]}"
            else:  # an interpreted program: the program is the unit
                process, thread = spans.kernel, f"{spans.unit_label} {ctas[i]}"
            if lane is None:
                if len(lanes) >= INTRA_LANES and not proton_shape:
                    dropped += 1
                    continue
                lane = lanes[key] = INTRA_BASE + len(lanes)
                names[lane] = f"{process} · {thread}"
            out.append(
                TraceEvent(
                    "intra",
                    spans.names[scopes[i]],
                    starts[i] + shift,
                    ends[i] + shift,
                    lane,
                    stack,
                    {
                        **spans.args,
                        **{key: values[i] for key, values in row_args.items()},
                        "cta": ctas[i],
                        "sm": sms[i],
                        spans.unit_label: units[i] if sms[i] >= 0 else ctas[i],
                    },
                    proton_labels=(process, thread, spans.kernel) if proton_shape else None,
                )
            )
    return out, names, dropped


def proton_events(events: Sequence[TraceEvent]) -> list[TraceEvent]:
    """Proton's trace (Triton 3.9's) from ours: a ``scope`` event per scope, or, for a scope that
    was given metrics, a ``metric`` event instead, named ``"scope: <a, 1.000000>, <b, 2>"`` (its
    metrics by name, with the values as Proton prints them, also in ``args.metrics``); each
    kernel with Proton's ``launch->kernel`` arrow from its launch. An interpreted kernel runs on
    the thread that launched it, so its arrow starts and ends there, at its start: kept, so that
    every kernel has its arrow as in Proton's (a GPU kernel whose launch is unknown gets none).
    Spans inside kernels are not among ``events``."""
    out: list[TraceEvent] = []
    for e in events:
        if e.category == "scope":
            given = e.args.get("metrics")
            if given:
                shown = {key: proton_value(value) for key, value in sorted(given.items())}
                name = f"{e.name}: " + ", ".join(f"<{key}, {value}>" for key, value in shown.items())
                out.append(replace(e, category="metric", name=name, args={"metrics": shown}))
            else:
                out.append(replace(e, args={}))
        elif e.category == "kernel":
            launch = e.launched_from
            if launch is None and e.lane < GPU_LANE_BASE:  # interpreted: launched where it ran
                launch = (e.lane, e.start_ns)
            out.append(replace(e, launched_from=launch, proton_flow=True))
    return out


def proton_value(value: Any) -> str:
    """A metric value as Proton's trace prints it: a double as C++'s ``std::to_string`` does
    (``1.000000``), an integer as it is, a vector as ``[1.5,2]`` (its doubles as a C++ stream
    prints them, six significant digits), a string as it is."""
    if isinstance(value, float):
        return f"{value:f}"
    if isinstance(value, list):
        return "[" + ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value) + "]"
    return str(value)


GRAPH_LANE_BASE = 30_000  # lanes of the scopes rebuilt for graph replays, one per stream
_BOOKKEEPING = (LAUNCH_METADATA_STATE, METRIC_KERNEL)
_Open = list[tuple[tuple[str, ...], int]]  # open scopes: (call stack to the scope, start)


def graph_scope_events(events: Sequence[TraceEvent]) -> tuple[list[TraceEvent], dict[int, str]]:
    """The scopes a CUDA graph was captured in, as spans of its replays (Proton's ``Graph: Stream
    N`` lanes): a replayed kernel's call stack from ``<captured_at>`` down names the scopes it ran
    in, and on each stream a scope lasts from the first replayed kernel inside it to the end of the
    last. A kernel launched for launch metadata (a ``<metric>`` copy, a helper) marks the scopes
    above its launch-metadata frame only; the frames below are bookkeeping, not scopes."""
    by_stream: dict[tuple[int, int], list[TraceEvent]] = {}
    for e in events:
        if e.category == "kernel" and CAPTURED_AT in e.call_stack:
            key = (int(e.args.get("device", 0)), int(e.args.get("stream", 0)))
            by_stream.setdefault(key, []).append(e)
    out: list[TraceEvent] = []
    names: dict[int, str] = {}
    for index, (key, kernels) in enumerate(sorted(by_stream.items())):
        lane = GRAPH_LANE_BASE + index
        names[lane] = f"Graph: Stream {key[1]}"
        out.extend(_stream_scopes(sorted(kernels, key=lambda k: k.start_ns), lane))
    return out, names


def _stream_scopes(kernels: list[TraceEvent], lane: int) -> list[TraceEvent]:
    """One stream's replayed kernels (by start) as the spans of the captured scopes around them."""
    out: list[TraceEvent] = []
    open_scopes: _Open = []
    last_end = 0
    for e in kernels:
        stack = e.call_stack
        first = stack.index(CAPTURED_AT)
        last = next((i for i in range(first, len(stack)) if stack[i] in _BOOKKEEPING), len(stack) - 1)
        wanted = [stack[: i + 1] for i in range(first, last)]  # the kernel's own name left out
        same = 0
        while same < min(len(open_scopes), len(wanted)) and open_scopes[same][0] == wanted[same]:
            same += 1
        out.extend(_closed(open_scopes, same, last_end, lane))
        open_scopes.extend((scope, e.start_ns) for scope in wanted[same:])
        last_end = max(last_end, e.end_ns)
    out.extend(_closed(open_scopes, 0, last_end, lane))
    return out


def _closed(open_scopes: _Open, keep: int, at: int, lane: int) -> list[TraceEvent]:
    """The scopes above the first ``keep``, ended at ``at`` (taken off ``open_scopes``)."""
    out = []
    while len(open_scopes) > keep:
        stack, began = open_scopes.pop()
        out.append(TraceEvent("scope", stack[-1], began, max(at, began), lane, stack))
    return out
