"""Where records become tree nodes: the one module that turns a session's scopes, kernels and
samples into nodes of its :class:`~deuteron.model.tree.Profile`.

Backends report by id (a launch's *context id*, its *state id*, a framework's *place id*); the
:class:`TreeBuilder` owns what those ids mean: the context sources (shadow scopes or Python call
paths, states, and the framework contexts ``-c torch``/``jax``/``native``), the translation of
context ids into nodes (:class:`~deuteron.collect.placement.LaunchContexts`), and the metrics that
arrive later (device tensors, CUDA-graph replays). A kernel record becomes a tree node in
:meth:`TreeBuilder.file_kernels` (GPU backends, a batch of :class:`KernelGroup` by context id) or
:meth:`TreeBuilder.record_kernel` (the interpreter, from the launching thread), both through
:meth:`TreeBuilder.add_kernel`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from deuteron.collect.backends.port import (
    AUTOTUNE_SCOPE,
    ContextListener,
    Frameworks,
    InterpretedKernel,
    KernelGroup,
)
from deuteron.collect.context import ContextSource, LaunchPlaces
from deuteron.collect.context.jax.source import JaxContext
from deuteron.collect.context.native import NativeContext
from deuteron.collect.context.python import PythonContext
from deuteron.collect.context.shadow import ShadowContext
from deuteron.collect.context.state import StateContext, metric_state_name
from deuteron.collect.context.torch.source import TorchContext
from deuteron.collect.deferred import (
    DeferredValue,
    capturing,
    replayed_metrics,
    resolved,
    roofline_values,
    transform_tensor_metrics,
)
from deuteron.collect.placement import LaunchContexts
from deuteron.collect.samples import SampleFiler
from deuteron.collect.scope_metrics import PROTON_CPU_TIME, ValueTypes, as_given, merged
from deuteron.collect.trace_buffer import TraceBuffer
from deuteron.model.intra import ScopeRow
from deuteron.model.metrics import CPU_TIME, TIME, split_kind
from deuteron.model.trace import KernelSpans
from deuteron.model.tree import Node, Profile

_get_ident = threading.get_ident


class TreeBuilder:
    """One session's tree as it grows: scopes opened and closed, kernels filed, values added.

    Scopes reach it from the API's hot path (the session hands out its ``open_scope`` and
    ``close_scope`` as its own), so a scope costs a few attribute reads and one call here.
    ``listener`` (a GPU backend's, see ``Recorder.subscribe``) is told the calling thread's scope
    and state ids whenever they change; ``entered_frames`` counts the frames entered since the
    current data phase began (None until one ended: :mod:`.phases`)."""

    def __init__(
        self,
        profile: Profile,
        context: str,
        frameworks: tuple[str, ...],
        lock: threading.Lock,
        trace: TraceBuffer,
        value_types: ValueTypes,
    ) -> None:
        self.profile = profile
        self.lock = lock  # the session's: it guards the tree and the trace
        self.trace = trace
        self.value_types = value_types
        root = profile.root
        # Scopes are always tracked (their stack closes them); they place kernels only in the shadow chain.
        self.shadow = ShadowContext(root)
        self.python = PythonContext(root) if context == "python" else None
        self.sources: list[ContextSource] = [self.python if self.python is not None else self.shadow]
        self.states = StateContext()
        self.contexts = LaunchContexts(root, self.python.node_for if self.python is not None else None)
        self.torch: TorchContext | None = None
        if "torch" in frameworks:
            self.torch = TorchContext(self.contexts, self.python.current if self.python is not None else None)
            self.sources.append(self.torch)
        # JAX kernels are placed when their records arrive (by name, in the executables' HLO)
        self.jax: JaxContext | None = JaxContext(self.contexts) if "jax" in frameworks else None
        # the C/C++ frames of each launch, unwound by the CUPTI shim
        self.native: NativeContext | None = NativeContext(self.contexts) if "native" in frameworks else None
        self.frameworks = Frameworks(torch=self.torch, jax=self.jax, native=self.native)
        # the sources that fill the launch entries' place column, each owning its range of place ids
        self.place_sources: list[LaunchPlaces] = [
            s for s in (self.jax, self.native, self.torch) if s is not None
        ]
        self.listener: ContextListener | None = None
        self.on_step: Callable[[], None] | None = None  # a step scope closed (deuteron run --flush-every)
        self.entered_frames: set[int] | None = None
        # the metrics each open scope was given on entry, by (thread, depth): its trace event's
        self.given: dict[tuple[int, int], dict[str, Any]] = {}
        self.deferred: list[tuple[Node, dict[str, Any]]] = []  # metrics the GPU has yet to compute
        # metrics given inside graph capture, by the capturing scope's context id: added per replay
        self.replayed: dict[int, list[dict[str, Any]]] = {}
        self.samples = SampleFiler()  # where each kernel ran since the last drain of PC samples

    # --- where the calling thread is --------------------------------------------------------------

    def launch_context(self) -> Node:
        """Where the calling thread's launch goes: each context source's frames below the last.
        A benchmark launch (in ``<autotune>``) stays in that scope: the module and op it was made
        in are the compile's (``torch.compile`` tunes while the model's first call runs), not a
        step's, and a module call already running would otherwise claim it. (CUPTI's launches are
        not yet filed so: see docs/torch.md.)"""
        node = self.profile.root
        for source in self.sources:
            node = source.locate(node)
            if node.name == AUTOTUNE_SCOPE:
                return node
        return node

    def context_ids(self, launch: bool = False) -> tuple[int, int]:
        """The calling thread's innermost scope (``launch``: its whole launch context, with Python
        frames, module and op) and its state, as ids."""
        node = self.launch_context() if launch else self.shadow.current()
        return self.contexts.id_of(node), self.contexts.state_id(self.states.current())

    def tell_context(self, node: Node) -> None:
        """The listener hears the calling thread's scope (``node``, the shadow stack's top, passed
        in because ``open_scope`` holds it already: one thread-local lookup less on the scope path)
        and state."""
        listener = self.listener
        if listener is not None:
            listener(self.contexts.id_of(node), self.contexts.state_id(self.states.current()))

    def set_state(self, name: str | None) -> None:
        self.states.set(name)
        if self.listener is not None:
            self.tell_context(self.shadow.current())

    # --- scopes: the hot path ---------------------------------------------------------------------

    def open_scope(self, name: str, metrics: dict[str, Any] | None) -> None:
        stack = self.shadow.stack()  # the hot path: one thread-local lookup per scope
        parent = stack[-1] if self.python is None else self.launch_context()
        node = parent.child(name)
        if metrics:  # before the push: a bad metric must not leave the scope open
            with self.lock:
                given = self.add_scope_metrics(node, metrics)
            if given:
                self.given[(_get_ident(), len(stack))] = given
        if self.entered_frames is not None:
            self.entered_frames.add(id(node))
        stack.append(node)
        if self.listener is not None:
            self.tell_context(node)
        if self.torch is not None:
            self.torch.set_base(self.contexts.id_of(node))

    def close_scope(
        self,
        name: str | None,
        start_ns: int,
        end_ns: int,
        metrics: dict[str, Any] | None,
        timed: bool = False,
    ) -> None:
        """``timed``: a ``cpu_timed_scope``, whose node gets its CPU time (plain scopes do not, as
        in Proton; every scope's span is in the trace either way). The scope's trace event carries
        the metrics it was given, on entry and here (Proton's trace shows them)."""
        node = self.shadow.pop(name)
        ident = _get_ident()
        given = self.given.pop((ident, len(self.shadow.stack())), None) if self.given else None
        if self.listener is not None:
            self.tell_context(self.shadow.current())
        if self.torch is not None:
            self.torch.set_base(self.contexts.id_of(self.shadow.current()))
        with self.lock:
            if metrics:
                given = merged(given, self.add_scope_metrics(node, metrics))
            if timed:
                m = node.metrics
                m[CPU_TIME] = m.get(CPU_TIME, 0) + (end_ns - start_ns)  # type: ignore[operator]
                given = merged(given, {PROTON_CPU_TIME: end_ns - start_ns})
            self.trace.add_event(
                ("scope", node, start_ns, end_ns, ident, {"metrics": given} if given else None)
            )
        if self.on_step is not None and node.name == "step":
            self.on_step()

    def abandon_scope(self, name: str) -> None:
        """Undo an ``open_scope`` whose scope never opened in a session after this one (one of them
        refused a metric): closed with no event, so the stack is as it was (see ``open_in``)."""
        self.shadow.pop(name)
        self.given.pop((_get_ident(), len(self.shadow.stack())), None)
        if self.listener is not None:
            self.tell_context(self.shadow.current())
        if self.torch is not None:
            self.torch.set_base(self.contexts.id_of(self.shadow.current()))

    # --- a scope's metrics, now or later ----------------------------------------------------------

    def add_scope_metrics(self, scope: Node, metrics: dict[str, Any]) -> dict[str, Any]:
        """A scope's metrics, where Proton puts them: the scope, or, inside a state, that state's
        frame below it (scope, then state, then the values); the caller holds the lock. Returns
        what was given as the trace shows it: plain values, and device values still to be read
        (not those replayed from a graph, whose every read is a new one)."""
        target = self.states.place(scope, self.states.current())
        known, later = self._host_metrics(scope, target, metrics)
        self.value_types.check(known)
        self.profile.add_metrics(target, known)
        return as_given(known, later)

    def _host_metrics(
        self, scope: Node, target: Node, metrics: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, DeferredValue]]:
        """The metrics that can be added now, and those read later. Device tensors are read later
        (see :mod:`deuteron.metric`); inside CUDA-graph capture every metric is counted per replay,
        under the replay's context, when the replayed kernels of this scope are filed. Proton's
        roofline metrics get their one value type (``flops`` doubles, ``bytes`` integers)."""
        in_capture = capturing()
        if not in_capture and not any(hasattr(v, "data_ptr") for v in metrics.values()):
            return roofline_values(metrics), {}
        previous = self.states.current()
        # The copies made here are bookkeeping: <metric> kernels below the scope's launch-metadata
        # frame (the scope is not on the stack yet when it opens), as Proton files them.
        self.states.set(metric_state_name())
        self.tell_context(scope)
        try:
            if in_capture:
                replayed = replayed_metrics(metrics)
                if replayed:
                    self.replayed.setdefault(self.contexts.id_of(scope), []).append(replayed)
                return {}, {}
            scalars, deferred = transform_tensor_metrics(metrics)
        finally:
            self.states.set(previous)
            self.tell_context(self.shadow.current())
        if deferred:
            self.deferred.append((target, dict(deferred)))
        return scalars, deferred

    def settle(self) -> None:
        """Add the metrics known only once the GPU has run (reading them waits for it); on the
        program's thread, when the profile is read or written."""
        with self.lock:
            if self.torch is not None:
                self.torch.file_metrics(self.profile)
            deferred, self.deferred = self.deferred, []
            for node, values in deferred:
                read = {k: v for k, v in resolved(values).items() if v is not None}
                self.value_types.check(read)
                self.profile.add_metrics(node, read)

    # --- kernels: where a record becomes a node ---------------------------------------------------

    def add_kernel(self, parent: Node, name: str, metrics: dict[str, Any], state: str | None) -> Node:
        """File a kernel's metrics under ``parent`` (and its state), as the kernel's node."""
        with self.lock:
            node = self.states.place_kernel(parent, state, name)
            later = {k: v for k, v in metrics.items() if isinstance(v, DeferredValue)}
            if later:
                self.deferred.append((node, later))
                metrics = {k: v for k, v in metrics.items() if k not in later}
            self.profile.add_metrics(node, metrics)
        return node

    def record_kernel(self, kernel: InterpretedKernel) -> None:
        """A kernel launched by the calling thread, just now (the interpreter's launches), with the
        ``pl.scope``s it recorded, if any, and their spans per program."""
        metrics, scopes, intra = kernel.metrics, kernel.scopes, kernel.intra
        node = self.add_kernel(self.launch_context(), kernel.name, metrics, self.states.current())
        if scopes:
            self.file_scopes(node, scopes)
        if intra is not None:
            intra.node = node
            self.trace.add_intra_spans(intra)
        args = {}
        for key, value in metrics.items():
            clean = split_kind(key)[0]
            if clean in ("bytes", "flops", "grid"):
                args[clean] = value
                if clean != "grid" and scopes:  # the launch's total: the scopes' share was taken off
                    args[clean] += sum(row.metrics.get(clean, 0) for row in scopes)
        with self.lock:
            self.trace.add_event(("kernel", node, kernel.start_ns, kernel.end_ns, _get_ident(), args))

    def kernel_parent(self, group: KernelGroup) -> Node:
        """Where a group's kernels go: its framework's place (module and op, JAX scopes, C/C++
        frames) or its context, then the frames of another thread or a CUDA-graph capture. A kernel
        replayed from a graph goes where the replay was launched, then ``<captured_at>`` and the
        whole place it was captured in (scopes, modules and op): each replay's time sits under the
        replaying scope, broken down as the capture was."""
        contexts = self.contexts
        other_thread = group.other_thread
        captured_in = contexts.node(group.captured_context_id) if group.captured_context_id else None
        place_id = group.place_id
        source = next((s for s in self.place_sources if s.owns(place_id)), None) if place_id else None
        if source is not None:
            if captured_in is not None:  # a graph replay: where the replay was, then the capture's place
                place = source.launch_place(place_id, group.captured_context_id)
                if not place.outside_capture:
                    replay = contexts.node(group.context_id)
                    return contexts.kernel_parent(replay, other_thread=other_thread, captured_in=place.node)
            place = source.launch_place(place_id, group.context_id)
            base = place.node
            other_thread = other_thread and not place.any_thread
            captured_in = None if place.outside_capture else captured_in
        else:
            base = contexts.node(group.context_id)
        return contexts.kernel_parent(base, other_thread=other_thread, captured_in=captured_in)

    def file_kernels(self, groups: list[KernelGroup | None], spans: KernelSpans) -> None:
        """File a batch of GPU kernels reported by context id, one group per (context, kernel, ...),
        and keep their spans for the trace (``spans.group_of``: each kernel's group; None groups are
        left out). The spans' nodes are the ones filed here."""
        nodes: list[Node | None] = []
        told: set[tuple[int, int]] = set()
        for group in groups:
            if group is None:
                nodes.append(None)
                continue
            parent = self.kernel_parent(group)
            state = self.contexts.states.get(group.state_id)
            node = self.add_kernel(parent, group.name, group.metrics, state)
            if group.symbol:
                self.samples.saw(group.symbol, node, group.metrics.get(TIME, 0))
            if group.scopes:
                self.file_scopes(node, group.scopes)
            if group.intra is not None:
                group.intra.node = node
                self.trace.add_intra_spans(group.intra)
            nodes.append(node)
            captured = group.captured_context_id
            replayed = self.replayed.get(captured) if captured else None
            if replayed and (id(parent), captured) not in told:  # once per scope per batch
                told.add((id(parent), captured))
                with self.lock:
                    self.deferred.extend((parent, dict(metrics)) for metrics in replayed)
        if len(spans.group_of):
            spans.nodes = nodes
            self.trace.add_kernel_spans(spans)

    def file_scopes(self, kernel: Node, rows: list[ScopeRow]) -> None:
        """A kernel's ``pl.scope``s as its children, nested as they were in the kernel."""
        with self.lock:
            for row in rows:
                node = kernel
                for name in row.path:
                    node = node.child(name)
                self.profile.add_metrics(node, row.metrics)

    def file_samples(self, rows_by_symbol: dict[str, list[ScopeRow]]) -> None:
        """A drain of PC samples, per kernel function: rows under the nodes it ran under."""
        with self.lock:
            self.samples.file(self.profile, rows_by_symbol)
