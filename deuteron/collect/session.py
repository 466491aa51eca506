"""A profiling session: one per ``start()``, a plain record of what it was asked for and what it
holds, from ``start`` to ``finalize``.

Its parts each have one job: the :class:`~deuteron.collect.tree_builder.TreeBuilder` turns scopes
and kernel records into tree nodes (the one place that does), the
:class:`~deuteron.collect.trace_buffer.TraceBuffer` keeps spans for traces, the
:class:`~deuteron.collect.phases.Phases` are Proton's data phases, and :mod:`.output` writes the
finished profile. Backends see the session only as a
:class:`~deuteron.collect.backends.port.Recorder`: a few calls by id, never its parts.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from deuteron.collect import collectives, flushing, output
from deuteron.collect.backends import Backend, resolve
from deuteron.collect.backends.port import (
    ContextListener,
    KernelGroup,
    PythonFrames,
    RecordedTable,
    RecorderSetup,
)
from deuteron.collect.context import ContextSpecError, parse_context
from deuteron.collect.context.torch import inductor
from deuteron.collect.phases import Phases
from deuteron.collect.placement import ContextTable, StateTable
from deuteron.collect.registry import SessionError as SessionError  # its home; the session API's error
from deuteron.collect.scope_metrics import ValueTypes
from deuteron.collect.trace_buffer import TraceBuffer
from deuteron.collect.tree_builder import TreeBuilder
from deuteron.formats.files import OutputError, check_writable
from deuteron.model.intra import ScopeRow
from deuteron.model.metrics import CPU_TIME, EXC
from deuteron.model.trace import KernelSpans, TraceEvent
from deuteron.model.tree import Profile

HOOKS = (None, "triton")


class Session:
    """One profiling session (see the module): its options, its profile, its parts, its backend.

    The scope calls and the filing calls are its tree builder's own bound methods, taken over as
    attributes: a scope on the API's hot path costs one call, not two."""

    open_scope: Callable[[str, dict[str, Any] | None], None]
    close_scope: Callable[..., None]
    abandon_scope: Callable[[str], None]
    record_kernel: Callable[..., None]
    file_kernels: Callable[[list[KernelGroup | None], KernelSpans], None]
    file_samples: Callable[[dict[str, list[ScopeRow]]], None]
    context_ids: Callable[..., tuple[int, int]]
    set_state: Callable[[str | None], None]
    settle: Callable[[], None]

    def __init__(
        self,
        session_id: int,
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
        ``trace_shape``: ``"proton"`` writes Proton's trace (``start(data="trace")``); ``mode``:
        Proton's instrumentation mode, for the instrumentation backend."""
        try:
            base_context, frameworks = parse_context(context)
        except ContextSpecError as exc:
            raise SessionError(str(exc)) from None
        if hook not in HOOKS:
            raise SessionError(f"unknown hook {hook!r}; choose None or 'triton'")
        self.id = session_id
        self.name = name
        self.base = Path(os.path.abspath(name))
        self._relative_to = None if os.path.isabs(name) else os.getcwd()
        self.outputs = outputs
        for target in output.paths(self.base, list(outputs)):
            try:
                check_writable(target)
            except OutputError as exc:
                raise SessionError(f"cannot write the profile: {exc}") from None
        self.backend: Backend = resolve(backend, mode)
        self.profile = Profile()
        spec = ",".join((base_context, *frameworks))  # the context as asked, e.g. "shadow,torch"
        self.profile.metadata.update(output.run_metadata(name, self.backend.name, spec, hook, command))
        collectives.prepare()  # a rank's process groups made from now on record their calls
        self.profile.kinds[CPU_TIME] = EXC
        self.lock = threading.Lock()
        self.active = False
        self.finalized = False
        self.default_format = default_format
        self.trace = TraceBuffer(self.lock, proton_shape=trace_shape == "proton")
        # Proton's rule: a user metric keeps its first value type (`deuteron run`'s own session
        # turns it off: it merges sessions the program keeps apart; see scope_metrics)
        self.value_types = ValueTypes(SessionError)
        self.tree = tree = TreeBuilder(
            self.profile, base_context, frameworks, self.lock, self.trace, self.value_types
        )
        self.setup = RecorderSetup(session_id, base_context, hook, tree.frameworks)
        self.phases = Phases(self.profile, tree, self.lock, flush_format)
        self.flusher: flushing.Flusher | None = None  # deuteron run --flush-every
        self.open_scope, self.close_scope = tree.open_scope, tree.close_scope  # the scopes' hot path
        self.abandon_scope, self.record_kernel = tree.abandon_scope, tree.record_kernel
        self.file_kernels, self.file_samples = tree.file_kernels, tree.file_samples
        self.context_ids, self.set_state, self.settle = tree.context_ids, tree.set_state, tree.settle

    # --- lifecycle -------------------------------------------------------------------------------

    def start_frameworks(self) -> None:
        """Start the framework sources (before the backend, which may ask them for a probe)."""
        tree = self.tree
        on_gpu = "cupti" in self.backend.name.split(",")
        if tree.native is not None and not on_gpu:
            raise SessionError(
                "-c native takes the C/C++ frames at each CUDA launch: it needs the cupti backend "
                f"(a machine with an NVIDIA GPU), not {self.backend.name}"
            )
        if tree.torch is not None:
            inductor.watch()  # torch.compile's kernels: placed under their modules when written
            if inductor.place not in output.finishers:
                output.finishers.append(inductor.place)
            spans = "chrome_trace" in self.outputs  # module/op/backward spans on the thread lanes
            tree.torch.start(tree.contexts.id_of(tree.shadow.current()), on_gpu=on_gpu, spans=spans)
        if tree.jax is not None:
            tree.jax.start()

    def stop_frameworks(self) -> None:
        if self.tree.torch is not None:
            self.tree.torch.stop()
        if self.tree.jax is not None:
            self.tree.jax.stop()

    def state(self) -> str | None:
        """The state the calling thread is in (see ``deuteron.state``)."""
        return self.tree.states.current()

    # --- the rest of the recorder port (backends.port.Recorder) ----------------------------------

    def subscribe(self, listener: ContextListener | None) -> None:
        self.tree.listener = listener

    def name_context(
        self, context_id: int, path: Sequence[str] = (), python_frames: PythonFrames | None = None
    ) -> None:
        if python_frames is not None:
            self.tree.contexts.add_python_path(context_id, python_frames)
        else:
            self.tree.contexts.name(context_id, path)

    def recorded(self) -> dict[str, RecordedTable]:
        tables: dict[str, RecordedTable] = {
            "contexts": ContextTable(self.tree.contexts),
            "states": StateTable(self.tree.contexts),
        }
        return {**tables, **self.setup.frameworks.recorded()}

    def add_device(self, device_type: str, device_id: str, row: dict[str, object]) -> None:
        """One row of the device table (what ``util`` and the roofline need)."""
        self.profile.devices.setdefault(device_type, {})[device_id] = row

    def note(self, **metadata: Any) -> None:
        """Facts about the run that travel in the file's metadata."""
        self.profile.metadata.update(metadata)

    # --- phases and output -----------------------------------------------------------------------

    def trace_events(self) -> tuple[list[TraceEvent], dict[int, str]]:
        return self.trace.trace_events(self.profile, self.tree.torch)

    def advance_phase(self) -> int:
        """Close the current phase (what the GPU has recorded is filed first) and start the next:
        its values start from zero on the same frames, so open scopes stay open."""
        if not self.finalized:
            self.backend.flush(self)
        self.settle()
        with self.lock:
            return self.phases.advance(self.base, self.trace, self.trace_events)

    def write(self, output_format: str = "hatchet", path: str | os.PathLike[str] | None = None) -> list[Path]:
        try:
            formats = output.parse_formats(output_format)
        except ValueError as exc:
            raise SessionError(str(exc)) from None
        base = Path(path) if path is not None else self.base
        self.settle()
        phases = self.phases
        if phases.stream is not None and path is None:  # the whole run, from what was flushed
            return [self._as_named(p) for p in flushing.write_whole(self, formats, base)]
        if phases.flush_format is not None and path is None:  # the last phase, as one more part
            with self.lock:
                if not phases.parts_written or any(n.metrics for n in self.profile.root.walk()):
                    phases.write_part(
                        formats[0] if formats else phases.flush_format, base, self.trace, self.trace_events
                    )
            return [self._as_named(p) for p in phases.parts_written]
        with self.lock:
            ended = {"end_time": time.time(), "dropped_trace_events": self.trace.dropped}
            # the GPU's idle share (for --advise), and a rank's calls as torch recorded them
            self.profile.metadata.update({**ended, **self.trace.gpu_metadata(), **collectives.read()})
            written = output.write(phases.whole(), formats, base, self.trace_events)
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
