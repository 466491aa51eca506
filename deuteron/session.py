"""Session lifecycle: one session per ``start()``, owning one backend, one context source and one tree.

Backends and context sources never touch each other: a backend reports a kernel with
``record_kernel``; the session asks its context source where the launching thread is and
files the metrics there. Sessions also keep the spans of scopes and launches for traces.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .backends import Backend, resolve
from .context.python import PythonContext
from .context.shadow import ShadowContext
from .formats import chrome_trace, hatchet
from .formats.chrome_trace import TraceEvent
from .metrics import CPU_TIME, EXC, split_kind
from .tree import KERNEL, STATE, Node, Profile, path_to

if TYPE_CHECKING:
    import numpy as np

CONTEXTS = ("shadow", "python")
# Frames for kernels whose launch context is partial or missing (GPU backends).
OTHER_THREADS = "<other threads>"  # a thread with no scope of its own, under the starting thread's scope
CAPTURED_AT = "<captured_at>"  # a CUDA-graph replay: then the path where the kernel was captured
NO_PYTHON = "<no Python context>"  # python context, launched by a thread running no Python
NO_LAUNCH = "<no launch record>"  # launched before profiling started
HOOKS = (None, "triton")
OUTPUT_FORMATS = ("hatchet", "chrome_trace")
TRACE_LIMIT = int(os.environ.get("DEUTERON_TRACE_LIMIT", "1000000"))


@dataclass
class KernelSpans:
    """A batch of GPU kernels for the trace, times already on the session's clock."""

    nodes: list[Node | None]  # per group; None for groups left out
    group_of: np.ndarray  # per kernel: its group
    start: np.ndarray
    end: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    launch: np.ndarray  # launch time, 0 when unknown
    thread: np.ndarray  # launching thread ident, 0 when unknown


class SessionError(ValueError):
    """Bad arguments to the session API; the message says which and what is allowed."""


def disabled() -> bool:
    return os.environ.get("DEUTERON_DISABLE", "").strip().lower() not in ("", "0", "false", "no")


# (kind, node, start_ns, end_ns, thread ident, args): paths are rebuilt from the tree at write time.
_RawEvent = tuple[str, Node, int, int, int, "dict[str, Any] | None"]
_get_ident = threading.get_ident


class Session:
    def __init__(
        self,
        sid: int,
        name: str,
        backend: str = "auto",
        context: str = "shadow",
        hook: str | None = None,
        command: list[str] | None = None,
    ) -> None:
        if context not in CONTEXTS:
            raise SessionError(f"unknown context {context!r}; choose one of: {', '.join(CONTEXTS)}")
        if hook not in HOOKS:
            raise SessionError(f"unknown hook {hook!r}; choose None or 'triton'")
        self.id = sid
        self.name = name
        self.context = context
        self.hook = hook
        self.backend: Backend = resolve(backend)
        self.profile = Profile()
        self.profile.metadata.update(_run_metadata(name, self.backend.name, context, hook, command))
        self.profile.kinds[CPU_TIME] = EXC
        self.shadow = ShadowContext(self.profile.root)
        self.python = PythonContext(self.profile.root) if context == "python" else None
        self.lock = threading.Lock()
        self.events: list[_RawEvent] = []
        self.dropped_events = 0
        self.active = False
        self.finalized = False
        self._state = threading.local()
        # Told the thread's innermost scope and state whenever they change (the CUPTI shim's slots).
        self.context_listener: Callable[[Node, str | None], None] | None = None
        self.kernel_spans: list[KernelSpans] = []
        self._capture_paths: dict[int, list[str]] = {}

    # --- context ---------------------------------------------------------------------------------

    def launch_context(self) -> Node:
        if self.python is not None:
            return self.python.current()
        return self.shadow.current()

    def open_scope(self, name: str, metrics: dict[str, Any] | None) -> None:
        stack = self.shadow.stack()  # the hot path: one thread-local lookup per scope
        parent = stack[-1] if self.python is None else self.python.current()
        node = parent.child(name)
        if metrics:  # before the push: a bad metric must not leave the scope open
            with self.lock:
                self.profile.add_metrics(node, metrics)
        stack.append(node)
        if self.context_listener is not None:
            self.context_listener(node, self.state())

    def close_scope(
        self, name: str | None, start_ns: int, end_ns: int, metrics: dict[str, Any] | None
    ) -> None:
        node = self.shadow.pop(name)
        if self.context_listener is not None:
            self.context_listener(self.shadow.current(), self.state())
        with self.lock:
            if metrics:
                self.profile.add_metrics(node, metrics)
            m = node.metrics
            m[CPU_TIME] = m.get(CPU_TIME, 0) + (end_ns - start_ns)  # type: ignore[operator]
            self._event(("scope", node, start_ns, end_ns, _get_ident(), None))

    def state(self) -> str | None:
        """The state the calling thread is in (see ``deuteron.state``)."""
        return getattr(self._state, "name", None)

    def set_state(self, name: str | None) -> None:
        self._state.name = name
        if self.context_listener is not None:
            self.context_listener(self.shadow.current(), name)

    def _event(self, event: _RawEvent) -> None:
        """Keep a span for traces, up to TRACE_LIMIT; past it, only count what is dropped."""
        if len(self.events) < TRACE_LIMIT:
            self.events.append(event)
        else:
            self.dropped_events += 1

    # --- backends report here --------------------------------------------------------------------

    def record_kernel(self, name: str, metrics: dict[str, Any], start_ns: int, end_ns: int) -> None:
        node = self.add_kernel(self.launch_context(), name, metrics, self.state())
        args = {}
        for key, value in metrics.items():
            clean = split_kind(key)[0]
            if clean in ("bytes", "flops", "grid"):
                args[clean] = value
        with self.lock:
            self._event(("kernel", node, start_ns, end_ns, _get_ident(), args))

    def add_kernel(self, parent: Node, name: str, metrics: dict[str, Any], state: str | None) -> Node:
        """File a kernel's metrics under ``parent`` (and its state), as the kernel's node."""
        with self.lock:
            node = parent.child(name, KERNEL)
            if state:
                node = node.child(state, STATE)
            self.profile.add_metrics(node, metrics)
        return node

    def frame(self, name: str) -> Node:
        """A top-level frame for kernels without a launch context of their own (``NO_LAUNCH``...)."""
        return self.profile.root.child(name)

    def kernel_parent(
        self, context: Node, *, other_thread: bool = False, captured_in: Node | None = None
    ) -> Node:
        """Where a GPU kernel goes, given the context its launch was made in.

        ``other_thread``: launched by a thread that had no context of its own, so ``context`` is the
        starting thread's. ``captured_in``: replayed from a CUDA graph captured in that context.
        """
        node = context.child(OTHER_THREADS) if other_thread else context
        if captured_in is not None:
            path = self._capture_paths.get(id(captured_in))
            if path is None:
                path = self._capture_paths[id(captured_in)] = path_to(self.profile.root, captured_in)
            node = node.child(CAPTURED_AT)
            for name in path:
                node = node.child(name)
        return node

    def add_kernel_spans(self, spans: KernelSpans) -> None:
        """Keep GPU kernel spans for the trace, up to TRACE_LIMIT spans in all."""
        with self.lock:
            room = TRACE_LIMIT - len(self.events) - sum(len(s.start) for s in self.kernel_spans)
            if room <= 0:
                self.dropped_events += len(spans.start)
                return
            self.kernel_spans.append(spans)

    # --- output ----------------------------------------------------------------------------------

    def trace_events(self) -> tuple[list[TraceEvent], dict[int, str]]:
        """Spans of scopes, interpreted launches and GPU kernels, and the names of their lanes.

        CPU work gets a lane per thread; GPU kernels a lane per (device, stream), each with an
        arrow from the thread and time of its launch when the backend saw it.
        """
        paths = _paths(self.profile.root)
        lanes: dict[object, int] = {}
        names: dict[int, str] = {}

        def cpu_lane(ident: int) -> int:
            lane = lanes.get(ident)
            if lane is None:
                lane = lanes[ident] = len(lanes)
                names[lane] = "main thread" if ident == _MAIN_IDENT else f"thread {ident}"
            return lane

        out = []
        for kind, node, start, end, ident, args in self.events:
            path = paths.get(id(node), (node.name,))
            name = node.name if node.type != STATE else path[-2]
            out.append(TraceEvent(kind, name, start, end, cpu_lane(ident), path, args or {}))
        for spans in self.kernel_spans:
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

    def write(self, output_format: str = "hatchet", path: str | os.PathLike[str] | None = None) -> list[Path]:
        formats = [f.strip() for f in output_format.split(",") if f.strip()]
        for f in formats:
            if f not in OUTPUT_FORMATS:
                raise SessionError(f"unknown output format {f!r}; choose from: {', '.join(OUTPUT_FORMATS)}")
        base = Path(path) if path is not None else Path(self.name)
        if base.suffix in (".hatchet", ".chrome_trace", ".json"):
            base = base.with_suffix("")
        written = []
        with self.lock:
            self.profile.metadata["end_time"] = time.time()
            self.profile.metadata["dropped_trace_events"] = self.dropped_events
            for f in formats:
                if f == "hatchet":
                    written.append(hatchet.write(self.profile, base.with_name(base.name + ".hatchet")))
                else:
                    target = base.with_name(base.name + ".chrome_trace")
                    events, lane_names = self.trace_events()
                    written.append(chrome_trace.write(events, target, pid=os.getpid(), lane_names=lane_names))
        return written


_MAIN_IDENT = threading.main_thread().ident


def _paths(root: Node) -> dict[int, tuple[str, ...]]:
    """Every node's path of names from the root, keyed by the node's identity."""
    out: dict[int, tuple[str, ...]] = {id(root): (root.name,)}
    stack = [root]
    while stack:
        node = stack.pop()
        base = out[id(node)]
        for child in node.children.values():
            out[id(child)] = base + (child.name,)
            stack.append(child)
    return out


def _run_metadata(
    name: str, backend: str, context: str, hook: str | None, command: list[str] | None
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "tool": "deuteron",
        "version": __version__,
        "name": name,
        "backend": backend,
        "context": context,
        "hook": hook or "",
        "command": " ".join(command if command is not None else sys.argv),
        "start_time": time.time(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "python": platform.python_version(),
    }
    if "RANK" in os.environ:
        meta["rank"] = os.environ["RANK"]
    triton = sys.modules.get("triton")
    if triton is not None:
        meta["triton"] = getattr(triton, "__version__", "")
    return meta
