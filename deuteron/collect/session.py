"""Session lifecycle: one session per ``start()``, owning one backend, a chain of context sources
and one tree.

Backends and context sources never touch each other: a backend reports a kernel with
``record_kernel`` (or, for GPU backends that speak in context ids, ``file_gpu_kernels``); the
session asks its context sources where the launching thread is and files the metrics there. It
also keeps the spans of scopes and launches for traces. Where partial contexts go is
:mod:`.placement`'s job, trace lanes :mod:`.lanes`', what is written :mod:`.output`'s.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deuteron.collect import collectives, lanes, output
from deuteron.collect.backends import Backend, KernelGroup, resolve
from deuteron.collect.backends.port import Frameworks
from deuteron.collect.context import ContextSource, ContextSpecError, LaunchPlaces, parse_context
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
from deuteron.formats.files import OutputError, check_writable
from deuteron.model.errors import DeuteronError
from deuteron.model.intra import IntraSpans, ScopeRow
from deuteron.model.metrics import CPU_TIME, EXC, TIME, split_kind
from deuteron.model.trace import KernelSpans, TraceEvent, comm_overlap, gpu_busy
from deuteron.model.tree import Node, Profile, node_paths, on_paths_to
from deuteron.model.tree_ops import copy, merge, prune
from deuteron.triton import proton_knob

HOOKS = (None, "triton")
TRACE_LIMIT = int(os.environ.get("DEUTERON_TRACE_LIMIT", "1000000"))


class SessionError(DeuteronError, ValueError):
    """Bad arguments to the session API; the message says which and what is allowed."""


DISABLE_VARIABLES = ("DEUTERON_DISABLE", "TRITON_PROTON_DISABLE")  # ours, and Proton's (same meaning)


DISABLED_OFF = ("", "0", "false", "no")  # values that leave profiling on


def disabled_by() -> str | None:
    """What turns profiling off (a variable's name, or Proton's knob), None while it is on."""
    for name in DISABLE_VARIABLES:
        if os.environ.get(name, "").strip().lower() not in DISABLED_OFF:
            return name
    return "triton.knobs.proton.disable" if proton_knob("disable") is True else None


def disabled() -> bool:
    return disabled_by() is not None


_get_ident = threading.get_ident


class Session:
    """One profiling session: a calling-context tree and what fills it, from ``start`` to ``finalize``.

    It owns the context sources (shadow scopes or Python call paths, states, and the framework
    contexts ``-c torch``/``jax``/``native`` asked for), the translation of context ids to tree nodes
    that GPU backends report by (``contexts``), the backend, and Proton's data phases. Backends see
    it only through :class:`~deuteron.collect.backends.port.SessionPort`; scopes reach it from the
    API's hot path, so what a scope does here is kept to a few attribute reads and one call."""

    def __init__(
        self,
        sid: int,
        name: str,
        backend: str = "auto",
        context: str = "shadow",
        hook: str | None = None,
        command: list[str] | None = None,
        outputs: tuple[str, ...] = (),
        default_format: str = "hatchet",
        flush_format: str | None = None,
        trace_shape: str = "deuteron",
        mode: Any = None,
    ) -> None:
        """``outputs``: the formats this session will write; their files are checked now, before
        any work, and the output path is fixed here (absolute), so a later chdir does not move it.
        ``default_format``: what ``finalize()`` writes when not told (``data="tree"``: hatchet);
        ``flush_format``: Proton's periodic flushing, each completed phase written to
        ``NAME.part_<phase>.<format>`` and dropped from memory (None: phases kept until finalize);
        ``trace_shape``: ``"proton"`` writes Proton's trace (``start(data="trace")``; see ``trace_events``);
        ``mode``: Proton's instrumentation mode, for the instrumentation backend."""
        try:
            base_context, frameworks = parse_context(context)
        except ContextSpecError as exc:
            raise SessionError(str(exc)) from None
        if hook not in HOOKS:
            raise SessionError(f"unknown hook {hook!r}; choose None or 'triton'")
        self.id = sid
        self.name = name
        self.base = Path(os.path.abspath(name))
        self._relative_to = None if os.path.isabs(name) else os.getcwd()
        self.outputs = outputs
        for target in output.paths(self.base, list(outputs)):
            try:
                check_writable(target)
            except OutputError as exc:
                raise SessionError(f"cannot write the profile: {exc}") from None
        self.context = base_context  # what backends need: "shadow" or "python"
        self.context_spec = ",".join((base_context, *frameworks)) if frameworks else base_context
        self.hook = hook
        self.backend: Backend = resolve(backend, mode)
        self.profile = Profile()
        self.profile.metadata.update(
            output.run_metadata(name, self.backend.name, self.context_spec, hook, command)
        )
        collectives.prepare()  # a rank's process groups made from now on record their calls
        self.profile.kinds[CPU_TIME] = EXC
        root = self.profile.root
        # Scopes are always tracked (their stack closes them); they place kernels only in the shadow chain.
        self.shadow = ShadowContext(root)
        self.python = PythonContext(root) if base_context == "python" else None
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
        # the sources that fill the launch entries' op column, each owning its range of values
        self._op_sources: list[LaunchPlaces] = [
            s for s in (self.jax, self.native, self.torch) if s is not None
        ]
        self.lock = threading.Lock()
        self.events: list[lanes.RawEvent] = []
        self.dropped_events = 0
        self.active = False
        self.finalized = False
        # Told the thread's innermost scope and state, as ids, whenever they change (the CUPTI shim's slots).
        self.context_listener: Callable[[int, int], None] | None = None
        self.kernel_spans: list[KernelSpans] = []
        self.intra_spans: list[IntraSpans] = []  # kernels' scopes per CTA and unit (pl.scope)
        self.samples = SampleFiler()  # where each kernel ran since the last drain of PC samples
        self.default_format = default_format
        self.trace_shape = trace_shape
        # Proton's rule: a user metric keeps its first value type (`deuteron run`'s own session
        # turns it off: it merges sessions the program keeps apart; see scope_metrics)
        self.value_types = ValueTypes(SessionError)
        # the metrics each open scope was given on entry, by (thread, depth): its trace event's
        self._given: dict[tuple[int, int], dict[str, Any]] = {}
        self._deferred: list[tuple[Node, dict[str, Any]]] = []  # metrics the GPU has yet to compute
        # metrics given inside graph capture, by the capturing scope's context id: added per replay
        self._replayed: dict[int, list[dict[str, Any]]] = {}
        # Proton's data phases: the live tree is the current phase; completed ones are kept here
        self.phase = 0
        self.phases: dict[int, Profile] = {}
        # ids of the frames entered since the current phase began; None until a phase ends or is
        # cleared (until then every frame is the current phase's; see phase_profile)
        self._phase_frames: set[int] | None = None
        self.flush_format = flush_format
        self.parts_written: list[Path] = []

    # --- context ---------------------------------------------------------------------------------

    def start_frameworks(self) -> None:
        """Start the framework sources (before the backend, which may ask them for a probe)."""
        if self.native is not None and "cupti" not in self.backend.name.split(","):
            raise SessionError(
                "-c native takes the C/C++ frames at each CUDA launch: it needs the cupti backend "
                f"(a machine with an NVIDIA GPU), not {self.backend.name}"
            )
        if self.torch is not None:
            on_gpu = "cupti" in self.backend.name.split(",")
            spans = "chrome_trace" in self.outputs  # module/op/backward spans on the thread lanes
            self.torch.start(self.contexts.id_of(self.shadow.current()), on_gpu=on_gpu, spans=spans)
        if self.jax is not None:
            self.jax.start()

    def stop_frameworks(self) -> None:
        if self.torch is not None:
            self.torch.stop()
        if self.jax is not None:
            self.jax.stop()

    def launch_context(self) -> Node:
        node = self.profile.root
        for source in self.sources:
            node = source.locate(node)
        return node

    def open_scope(self, name: str, metrics: dict[str, Any] | None) -> None:
        stack = self.shadow.stack()  # the hot path: one thread-local lookup per scope
        parent = stack[-1] if self.python is None else self.launch_context()
        node = parent.child(name)
        if metrics:  # before the push: a bad metric must not leave the scope open
            with self.lock:
                given = self._add_scope_metrics(node, metrics)
            if given:
                self._given[(_get_ident(), len(stack))] = given
        if self._phase_frames is not None:
            self._phase_frames.add(id(node))
        stack.append(node)
        if self.context_listener is not None:
            self._tell_context(node)
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
        given = self._given.pop((ident, len(self.shadow.stack())), None) if self._given else None
        if self.context_listener is not None:
            self._tell_context(self.shadow.current())
        if self.torch is not None:
            self.torch.set_base(self.contexts.id_of(self.shadow.current()))
        with self.lock:
            if metrics:
                given = merged(given, self._add_scope_metrics(node, metrics))
            if timed:
                m = node.metrics
                m[CPU_TIME] = m.get(CPU_TIME, 0) + (end_ns - start_ns)  # type: ignore[operator]
                given = merged(given, {PROTON_CPU_TIME: end_ns - start_ns})
            self._event(("scope", node, start_ns, end_ns, ident, {"metrics": given} if given else None))

    def abandon_scope(self, name: str) -> None:
        """Undo an ``open_scope`` whose scope never opened in a session after this one (one of them
        refused a metric): closed with no event, so the stack is as it was (see ``open_in``)."""
        self.shadow.pop(name)
        self._given.pop((_get_ident(), len(self.shadow.stack())), None)
        if self.context_listener is not None:
            self._tell_context(self.shadow.current())
        if self.torch is not None:
            self.torch.set_base(self.contexts.id_of(self.shadow.current()))

    def _add_scope_metrics(self, scope: Node, metrics: dict[str, Any]) -> dict[str, Any]:
        """A scope's metrics, where Proton puts them (see ``_metrics_node``); the caller holds the
        lock. Returns what was given as the trace shows it: plain values, and device values still
        to be read (not those replayed from a graph, whose every read is a new one)."""
        target = self._metrics_node(scope)
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
        self._tell_context(scope)
        try:
            if in_capture:
                replayed = replayed_metrics(metrics)
                if replayed:
                    self._replayed.setdefault(self.contexts.id_of(scope), []).append(replayed)
                return {}, {}
            scalars, deferred = transform_tensor_metrics(metrics)
        finally:
            self.states.set(previous)
            self._tell_context(self.shadow.current())
        if deferred:
            self._deferred.append((target, dict(deferred)))
        return scalars, deferred

    def settle(self) -> None:
        """Add the metrics known only once the GPU has run (reading them waits for it); on the
        program's thread, when the profile is read or written."""
        with self.lock:
            if self.torch is not None:
                self.torch.file_metrics(self.profile)
            deferred, self._deferred = self._deferred, []
            for node, values in deferred:
                read = {k: v for k, v in resolved(values).items() if v is not None}
                self.value_types.check(read)
                self.profile.add_metrics(node, read)

    def _metrics_node(self, node: Node) -> Node:
        """Where a scope's metrics go: the scope, or, inside a state, that state's frame below it
        (as Proton files them: scope, then state, then the values)."""
        return self.states.place(node, self.states.current())

    def state(self) -> str | None:
        """The state the calling thread is in (see ``deuteron.state``)."""
        return self.states.current()

    def set_state(self, name: str | None) -> None:
        self.states.set(name)
        if self.context_listener is not None:
            self._tell_context(self.shadow.current())

    def launch_context_ids(self) -> tuple[int, int]:
        """The calling thread's whole launch context (scopes, Python frames, module and op), and its
        state, as ids: what a backend that sees launches in Python (instrumentation) records."""
        return self.contexts.id_of(self.launch_context()), self.contexts.state_id(self.states.current())

    def context_ids(self) -> tuple[int, int]:
        """The calling thread's innermost scope and state, as the ids a GPU backend records."""
        return self.contexts.id_of(self.shadow.current()), self.contexts.state_id(self.states.current())

    def _tell_context(self, node: Node) -> None:
        """The GPU backend's listener hears the calling thread's scope (``node``, the shadow stack's
        top, passed in because ``open_scope`` holds it already: one thread-local lookup less on the
        scope path) and state."""
        listener = self.context_listener
        if listener is not None:
            listener(self.contexts.id_of(node), self.contexts.state_id(self.states.current()))

    def _event(self, event: lanes.RawEvent) -> None:
        """Keep a span for traces, up to TRACE_LIMIT; past it, only count what is dropped."""
        if len(self.events) < TRACE_LIMIT:
            self.events.append(event)
        else:
            self.dropped_events += 1

    # --- backends report here --------------------------------------------------------------------

    def record_kernel(
        self,
        name: str,
        metrics: dict[str, Any],
        start_ns: int,
        end_ns: int,
        scopes: list[ScopeRow] | None = None,
        intra: IntraSpans | None = None,
    ) -> None:
        """A kernel launched by the calling thread, just now (the interpreter's launches), with the
        ``pl.scope``s it recorded, if any, and their spans per program."""
        node = self.add_kernel(self.launch_context(), name, metrics, self.state())
        if scopes:
            self.file_scopes(node, scopes)
        if intra is not None:
            intra.node = node
            self.add_intra_spans(intra)
        args = {}
        for key, value in metrics.items():
            clean = split_kind(key)[0]
            if clean in ("bytes", "flops", "grid"):
                args[clean] = value
                if clean != "grid" and scopes:  # the launch's total: the scopes' share was taken off
                    args[clean] += sum(row.metrics.get(clean, 0) for row in scopes)
        with self.lock:
            self._event(("kernel", node, start_ns, end_ns, _get_ident(), args))

    def add_kernel(self, parent: Node, name: str, metrics: dict[str, Any], state: str | None) -> Node:
        """File a kernel's metrics under ``parent`` (and its state), as the kernel's node."""
        with self.lock:
            node = self.states.place_kernel(parent, state, name)
            later = {k: v for k, v in metrics.items() if isinstance(v, DeferredValue)}
            if later:
                self._deferred.append((node, later))
                metrics = {k: v for k, v in metrics.items() if k not in later}
            self.profile.add_metrics(node, metrics)
        return node

    def file_gpu_kernels(self, groups: list[KernelGroup | None], spans: KernelSpans) -> None:
        """File a batch of GPU kernels reported by context id, one group per (context, kernel, ...),
        and keep their spans for the trace (``spans.group_of``: each kernel's group; None groups are
        left out). The spans' nodes are the ones filed here."""
        contexts = self.contexts
        nodes: list[Node | None] = []
        told: set[tuple[int, int]] = set()
        for group in groups:
            if group is None:
                nodes.append(None)
                continue
            other_thread = group.other_thread
            captured_in = contexts.node(group.capture) if group.capture else None
            source = next((s for s in self._op_sources if s.owns(group.op)), None) if group.op else None
            if source is not None:  # a framework's place: module and op, JAX scopes, C/C++ frames
                place = source.launch_place(group.op, group.context)
                base = place.node
                other_thread = other_thread and not place.any_thread
                captured_in = None if place.outside_capture else captured_in
            else:
                base = contexts.node(group.context)
            parent = contexts.kernel_parent(base, other_thread=other_thread, captured_in=captured_in)
            state = contexts.states.get(group.state)
            node = self.add_kernel(parent, group.name, group.metrics, state)
            if group.symbol:
                self.samples.saw(group.symbol, node, group.metrics.get(TIME, 0))
            if group.scopes:
                self.file_scopes(node, group.scopes)
            if group.intra is not None:
                group.intra.node = node
                self.add_intra_spans(group.intra)
            nodes.append(node)
            replayed = self._replayed.get(group.capture) if group.capture else None
            if replayed and (id(parent), group.capture) not in told:  # once per scope per batch
                told.add((id(parent), group.capture))
                with self.lock:
                    self._deferred.extend((parent, dict(metrics)) for metrics in replayed)
        if len(spans.group_of):
            spans.nodes = nodes
            self.add_kernel_spans(spans)

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

    def add_intra_spans(self, spans: IntraSpans) -> None:
        """Keep a launch's per-CTA scope spans for the trace, within the same TRACE_LIMIT."""
        with self.lock:
            room = TRACE_LIMIT - len(self.events) - sum(len(s.start) for s in self.kernel_spans)
            room -= sum(len(s) for s in self.intra_spans)
            if room < len(spans):
                self.dropped_events += len(spans)
                return
            self.intra_spans.append(spans)

    def add_kernel_spans(self, spans: KernelSpans) -> None:
        """Keep GPU kernel spans for the trace, up to TRACE_LIMIT spans in all."""
        with self.lock:
            room = TRACE_LIMIT - len(self.events) - sum(len(s.start) for s in self.kernel_spans)
            if room <= 0:
                self.dropped_events += len(spans.start)
                return
            self.kernel_spans.append(spans)

    def add_device(self, device_type: str, device_id: str, row: dict[str, object]) -> None:
        """One row of the device table (what ``util`` and the roofline need)."""
        self.profile.devices.setdefault(device_type, {})[device_id] = row

    def note(self, **metadata: Any) -> None:
        """Facts about the run that travel in the file's metadata."""
        self.profile.metadata.update(metadata)

    # --- output ----------------------------------------------------------------------------------

    def trace_events(self) -> tuple[list[TraceEvent], dict[int, str]]:
        """Spans of scopes, interpreted launches and GPU kernels, and the names of their lanes.
        A session started through Proton's API with ``data="trace"`` writes Proton's trace (Triton
        3.9's): a scope event per scope (a metric event, named by its metrics, where it was given
        any), kernels with their call stacks and an arrow from each launch, and no lane names."""
        root = self.profile.root
        raw = self.events
        if self.torch is not None:  # modules, ops, backward nodes: torch.profiler's CPU spans
            spans, left_out = self.torch.spans()
            raw = [("scope", node, t0, t1, ident, None) for node, t0, t1, ident in spans] + raw
            if left_out:
                self.profile.metadata["torch_spans_left_out"] = left_out
        events, names = lanes.trace_events(root, raw, self.kernel_spans, self.intra_spans)
        if self.trace_shape == "proton":  # Proton's: scopes, metrics, kernels; scopes by CTA and warp
            shift = lanes.cupti_shift(self.intra_spans, self.kernel_spans)
            paths = node_paths(self.profile.root)
            inside = lanes.intra_events(self.intra_spans, paths, proton_shape=True, shift=shift)[0]
            graph_scopes, graph_lanes = lanes.graph_scope_events(events)
            return lanes.proton_events(events) + graph_scopes + inside, graph_lanes
        return events, names

    # --- phases (Proton's data API) ------------------------------------------------------------

    def advance_phase(self) -> int:
        """Close the current phase (what the GPU has recorded is filed first) and start the next:
        its values start from zero on the same frames, so open scopes stay open."""
        if not self.finalized:
            self.backend.flush(self)
        self.settle()
        with self.lock:
            if self.flush_format is not None:
                self._write_part(self.flush_format)
            else:
                self.phases[self.phase] = self._phase_tree(detached=True)
            self._restart_phase()
            self.phase += 1
            return self.phase

    def _restart_phase(self) -> None:
        """The current phase starts again from nothing: values zeroed on the same frames (open
        scopes stay open), and no frame counted as entered in it yet."""
        for node in self.profile.root.walk():
            node.metrics = {}
        self._phase_frames = set()

    def _phase_tree(self, detached: bool = False) -> Profile:
        """The current phase as Proton has it: the frames entered or given values since it began
        (with the paths to them), not those of earlier or cleared phases, which the live tree keeps
        empty. Before any phase ended or was cleared, the live tree itself (a copy if
        ``detached``); the caller holds the lock."""
        frames = self._phase_frames
        if frames is None:
            return copy(self.profile) if detached else self.profile
        wanted = on_paths_to(self.profile.root, lambda n: bool(n.metrics) or id(n) in frames)
        return prune(self.profile, lambda n, _depth: id(n) in wanted)

    def _write_part(self, fmt: str) -> None:
        """Write the current phase as ``NAME.part_<phase>.<fmt>`` and drop its trace spans (the
        tree is cleared by the caller)."""
        part = self._phase_tree(detached=True)
        part.metadata = {**self.profile.metadata, "phase": self.phase, "end_time": time.time()}
        base = self.base.with_name(f"{self.base.name}.part_{self.phase}")
        self.parts_written += output.write(part, [fmt], base, self.trace_events)
        self.events = []
        self.kernel_spans = []

    def phase_profile(self, phase: int) -> Profile | None:
        """The tree of one phase (see ``_phase_tree`` for the current one); None once cleared or
        not reached. The caller holds the lock."""
        return self._phase_tree() if phase == self.phase else self.phases.get(phase)

    def clear_phase(self, phase: int, up_to: bool = False) -> None:
        with self.lock:
            for p in [p for p in list(self.phases) if p == phase or (up_to and p < phase)]:
                del self.phases[p]
            if phase == self.phase or (up_to and phase > self.phase):
                self._restart_phase()

    def _whole(self) -> Profile:
        """Every phase not cleared, as one tree (what ``finalize`` writes)."""
        if not self.phases and self._phase_frames is None:
            return self.profile
        whole = merge([*self.phases.values(), self._phase_tree()])
        whole.metadata = self.profile.metadata
        return whole

    def write(self, output_format: str = "hatchet", path: str | os.PathLike[str] | None = None) -> list[Path]:
        try:
            formats = output.parse_formats(output_format)
        except ValueError as exc:
            raise SessionError(str(exc)) from None
        base = Path(path) if path is not None else self.base
        self.settle()
        if self.flush_format is not None and path is None:  # the last phase, as one more part
            with self.lock:
                if not self.parts_written or any(n.metrics for n in self.profile.root.walk()):
                    self._write_part(formats[0] if formats else self.flush_format)
            return [self._as_named(p) for p in self.parts_written]
        with self.lock:
            self.profile.metadata["end_time"] = time.time()
            self.profile.metadata["dropped_trace_events"] = self.dropped_events
            if self.kernel_spans:  # what `deuteron view --advise` needs for the GPU's idle share
                busy, window = gpu_busy(self.kernel_spans)
                self.profile.metadata.update(gpu_busy_ns=busy, gpu_window_ns=window)
                comm, overlapped = comm_overlap(self.kernel_spans)
                if comm:  # a rank's collectives: how much of them other kernels hid
                    self.profile.metadata.update(gpu_comm_ns=comm, gpu_comm_overlapped_ns=overlapped)
            self.profile.metadata.update(collectives.read())  # a rank's calls, as torch recorded them
            written = output.write(self._whole(), formats, base, self.trace_events)
        return [self._as_named(p) for p in written]

    def _as_named(self, path: Path) -> Path:
        """A written file as the user named it: relative while the working folder is the one the
        session started in (and the name was relative), absolute otherwise."""
        if (
            self._relative_to is not None
            and os.getcwd() == self._relative_to
            and path.parent == self.base.parent
        ):
            return Path(os.path.relpath(path, self._relative_to))
        return path
