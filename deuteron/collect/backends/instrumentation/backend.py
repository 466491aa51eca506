"""The instrumentation backend: kernels compiled with Triton's Proton passes, their buffers read
back in bulk, each launch's ``pl.scope``s filed under the kernel in its context.

One :class:`Engine` per process (Triton has one compiler and one profile allocator) serves every
session that uses the backend; it owns Proton's :class:`InstrumentationHook`, registered with the
hook manager for each session, so the hook's ``activate``/``deactivate`` follow the sessions'.
At each launch the hook tells the engine, from the launching thread, which slot of the arena the
launch got and where each active session's context is; at a drain the engine reads every slot in
one copy, decodes it and files it. A backend never builds nodes: it hands :class:`KernelGroup`s
carrying the scope rows and spans to the session.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from copy import copy
from typing import Any

import numpy as np

from deuteron.collect.backends.instrumentation import aggregate
from deuteron.collect.backends.instrumentation.decode import BufferError, Layout, decode, host_buffer
from deuteron.collect.backends.instrumentation.runtime import Arena, Launch
from deuteron.collect.backends.port import BackendError, KernelGroup, Recorder
from deuteron.collect.hook_manager import HookManager
from deuteron.collect.instrumentation_hook import InstrumentationHook
from deuteron.collect.launch_hook import LaunchHook
from deuteron.collect.modes import InstrumentationMode, instrumentation_mode
from deuteron.explain.scope_order import scope_notes
from deuteron.model.metrics import TIME
from deuteron.model.trace import KernelSpans

FLUSH_EACH_LAUNCH = os.environ.get("DEUTERON_INSTRUMENTATION_FLUSH", "") == "launch"
SPAN_BUDGET = 500_000  # scope spans kept for traces, per process; the tree gets every launch regardless


def unavailable_reason() -> str | None:
    """Why instrumented kernels cannot run here (None when they can): they need an NVIDIA GPU,
    PyTorch (for the device buffers, as Proton) and a Triton with Proton's dialect."""
    if importlib.util.find_spec("torch") is None:
        return "PyTorch is not installed (it allocates the profile buffers)"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU is visible"
    from deuteron.triton import instrument

    return instrument.unavailable_reason()


def _no_spans() -> KernelSpans:
    z = np.zeros(0, np.int64)
    return KernelSpans([], z, z, z, z, z, z, z)


def uids(mode: InstrumentationMode, num_warps: int) -> list[int]:
    """The units that own a segment of each CTA's buffer: the sampled warps, or all of them."""
    if mode.sampling_strategy == "selective":
        return sorted({int(w) for w in mode.sampling_options.split(",") if w.strip()})
    return list(range(num_warps))


class Engine:
    """The process's instrumentation: the hook, the arena, the kernels' scope tables, the launches
    waiting to be read, and the sessions to file them in."""

    def __init__(self) -> None:
        self.hook = InstrumentationHook()
        self.hook.attach(self)
        self.arena = Arena()
        self.sessions: list[Recorder] = []
        self.combined: set[int] = set()  # sessions whose kernels CUPTI also times
        self.kernels: dict[int, Any] = {}  # CUfunction handle -> deuteron.triton.instrument.KernelScopes
        self.notes: dict[int, dict[str, str]] = {}  # ... -> scope name -> what the compiler moved across it
        self.launches: list[Launch] = []
        self.lock = threading.Lock()
        self.clock_khz = 0
        self.device, self.device_row = "0", dict[str, object]()
        self.offset_ns = 0  # global timer (ns since the epoch) minus the session clock (perf_counter)
        self.stats: dict[str, Any] = dict.fromkeys(
            (
                "launches",
                "drains",
                "bytes_read",
                "dropped_entries",
                "unmatched",
                "bad_ctas",
                "unknown_kernels",
            ),
            0,
        )
        self.stats["decode_seconds"] = 0.0
        self.problems: list[str] = []
        self.stats["spans_left_out"] = 0
        self.span_budget = SPAN_BUDGET

    # --- sessions ------------------------------------------------------------------------------

    def add(self, session: Recorder, mode: InstrumentationMode, combined: bool) -> None:
        if self.sessions and str(mode) != str(self.hook.mode):
            raise BackendError(
                f"another session instruments kernels with mode {self.hook.mode}; "
                "every session at a time must use the same instrumentation mode"
            )
        if not self.sessions:
            self.hook.mode = mode
        self.sessions.append(session)
        if combined:
            self.combined.add(session.setup.session_id)
        if session.setup.hook == "triton":
            LaunchHook().subscribe(self)
        try:
            HookManager.register(self.hook, session.setup.session_id)
        except BaseException:
            HookManager.unregister(session.setup.session_id)
            self.sessions.remove(session)
            self.combined.discard(session.setup.session_id)
            raise

    def remove(self, session: Recorder) -> None:
        self.drain()
        session.note(instrumentation=self.summary())
        if self.device_row:
            session.add_device("CUDA", self.device, self.device_row)
        if session in self.sessions:
            self.sessions.remove(session)
        self.combined.discard(session.setup.session_id)
        if not any(s.setup.hook == "triton" for s in self.sessions):
            LaunchHook().unsubscribe(self)
        if not self.sessions:
            self.arena.release()

    def summary(self) -> dict[str, Any]:
        """What the file's metadata says of the instrumentation: how times were made and what was lost."""
        return {
            **self.stats,
            "mode": str(self.hook.mode),
            "sm_clock_khz": self.clock_khz,
            "time_from": "SM cycles / the SM clock rate the driver reports; spans placed by the global timer",
            # sm_clock_floor_mhz (in stats, when measured): the cycles CTAs counted per ns of the global
            # timer they lived, a floor of the clock they ran at, to hold against sm_clock_khz
            "problems": self.problems[:20],
        }

    # --- the hook's calls ------------------------------------------------------------------------

    def activate(self, mode: InstrumentationMode) -> None:
        from deuteron.triton import instrument

        options = instrument.PassOptions(
            mode.metric_type, mode.sampling_strategy, mode.sampling_options, mode.granularity,
            mode.buffer_strategy, mode.buffer_type, mode.buffer_size,
            tuple(str(o) for o in mode.optimizations), str(mode),
        )  # fmt: skip
        instrument.install(options, self.arena.allocate)
        failure = instrument.probe(options)
        if failure is not None:
            instrument.uninstall()
            raise BackendError(
                f"Triton {instrument.version()} cannot compile kernels with mode {mode}: {failure} "
                "(its own Proton fails the same way)"
            )
        self.device, self.device_row = instrument.device_row()
        self.clock_khz = int(str(self.device_row["clock_rate"]))
        self.offset_ns = time.time_ns() - time.perf_counter_ns()

    def deactivate(self) -> None:
        from deuteron.triton import instrument

        self.drain()
        instrument.uninstall()

    def loaded(self, function: Any, name: str, metadata_group: dict[str, str]) -> None:
        from deuteron.triton import instrument

        scopes = instrument.kernel_scopes(name, metadata_group)
        if scopes is not None:
            self.kernels[int(function)] = scopes
            try:
                notes = scope_notes(scopes.ttir, scopes.ttgir) if scopes.ttir else {}
            except Exception as exc:  # noqa: BLE001 - a note is a courtesy; its failure must not cost the profile
                notes = {}
                self._problem(f"{name}: could not compare its IR stages ({type(exc).__name__})")
            self.notes[int(function)] = notes
            for scope, note in notes.items():
                self._problem(f"{name} > {scope}: {note}")

    def entered(self, metadata: Any) -> None:
        slot = self.arena.claim()
        if slot is None:  # not instrumented (no scope, so no profile buffer)
            return
        data = getattr(metadata, "data", metadata)
        places = [(s, *s.context_ids(launch=True)) for s in self.sessions if s.active]
        if places:
            launch = Launch(slot, int(data.get("function") or 0), places, self.arena.pending.hooked)
            with self.lock:
                self.launches.append(launch)
                self.stats["launches"] += 1

    def launch_entered(self, name: str, metrics: dict[str, Any]) -> None:
        """The launch hook's reading (``hook="triton"``; its hook runs before ours): the thread's
        next launch is filed under that name, its scopes below it, as Proton does."""
        self.arena.pending.hooked = (name, metrics)

    def launch_exited(self) -> None:
        self.arena.pending.hooked = None

    def exited(self, metadata: Any, want_host_buffer: bool) -> Any:
        if want_host_buffer or FLUSH_EACH_LAUNCH:
            host = self.drain(keep_last=want_host_buffer)
            if want_host_buffer and host is None:  # a kernel without scopes: Proton's header, no CTAs
                import torch

                return torch.frombuffer(bytearray(host_buffer(b"", 0, Layout(0, 0, []))), dtype=torch.uint8)
            return host
        if self.arena.full():
            self.drain()
        return None

    # --- reading back ----------------------------------------------------------------------------

    def drain(self, keep_last: bool = False) -> Any:
        """Read every waiting launch's buffer (one synchronisation, one copy), decode and file it;
        with ``keep_last``, also return the last launch's buffer in Proton's host layout.

        Launches of the same kernel and grid, from the same places, are decoded together as one
        buffer of all their CTAs: a thousand launches are a handful of numpy calls."""
        with self.lock:
            launches, self.launches = self.launches, []
        if not launches:
            return None
        datas = self.arena.read([launch.slot for launch in launches])
        began = time.perf_counter()
        last = None
        batches: dict[Any, list[tuple[Launch, np.ndarray]]] = {}
        for launch, data in zip(launches, datas, strict=True):
            self.stats["bytes_read"] += int(data.nbytes)
            kernel = self.kernels.get(launch.function)
            if kernel is None:
                self.stats["unknown_kernels"] += 1
                continue
            if keep_last:
                layout = self._layout(kernel)
                last = host_buffer(data, launch.slot.size // kernel.scratch_size, layout)
            batches.setdefault(_batch_key(launch), []).append((launch, data))
        for items in batches.values():
            self._file(items)
        self.stats["drains"] += 1
        self.stats["decode_seconds"] += time.perf_counter() - began
        if last is not None:
            import torch

            return torch.frombuffer(bytearray(last), dtype=torch.uint8)
        return None

    def _layout(self, kernel: Any) -> Layout:
        return Layout(kernel.scratch_size, kernel.num_warps, uids(self.hook.mode, kernel.num_warps))

    def _file(self, items: list[tuple[Launch, np.ndarray]]) -> None:
        """Decode launches of one kernel, grid and place together and file them for each session."""
        launch = items[0][0]
        kernel = self.kernels[launch.function]
        layout = self._layout(kernel)
        per_launch = launch.slot.size // kernel.scratch_size
        payload = np.concatenate([data[: per_launch * kernel.scratch_size] for _, data in items])
        try:
            decoded = decode(payload, per_launch * len(items), layout)
        except BufferError as exc:
            self.stats["bad_ctas"] += per_launch * len(items)
            self._problem(f"{kernel.name}: {exc}")
            return
        for key in ("dropped_entries", "unmatched", "bad_ctas"):
            self.stats[key] += getattr(decoded, key)
        for problem in decoded.problems:
            self._problem(f"{kernel.name}: {problem}")
        floor = aggregate.clock_floor_mhz(decoded)
        if floor is not None:
            self.stats["sm_clock_floor_mhz"] = round(max(self.stats.get("sm_clock_floor_mhz", 0.0), floor), 1)
        rows = aggregate.rows(
            decoded, kernel.names, kernel.parents, per_launch, layout.total_units, self.clock_khz, len(items)
        )
        notes = self.notes.get(launch.function, {})
        for row in rows:
            if row.path[-1] in notes:
                row.metrics["compiler note (pty)"] = notes[row.path[-1]]
        spans = None
        if self.span_budget >= len(decoded.start_cycle):  # the trace keeps a bounded number of spans
            self.span_budget -= len(decoded.start_cycle)
            spans = aggregate.spans(decoded, kernel.name, kernel.names, self.clock_khz, self.offset_ns)
        else:
            self.stats["spans_left_out"] += len(decoded.start_cycle)
        # hook="triton": the launch-metadata name is the kernel's node, its scopes below, as in Proton
        name = launch.hooked[0] if launch.hooked is not None else kernel.name
        for session, context_id, state_id in launch.places:
            if session not in self.sessions:
                continue
            metrics: dict[str, Any] = {}
            if launch.hooked and session.setup.hook == "triton":
                metrics = {
                    k: v * len(items) if isinstance(v, (int, float)) else v
                    for k, v in launch.hooked[1].items()
                }
            # CUPTI's kernel time stays the kernel's inclusive time; with a framework context CUPTI
            # places kernels by its own probe, maybe elsewhere, so nothing is taken off there
            if session.setup.session_id in self.combined and rows and not session.setup.frameworks.recorded():
                metrics[TIME] = -sum(float(r.metrics[TIME]) for r in rows)
            group = KernelGroup(
                context_id=context_id,
                other_thread=False,
                captured_context_id=0,
                state_id=state_id,
                name=name,
                metrics=metrics,
                scopes=rows,
                intra=copy(spans),
            )
            session.file_kernels([group], _no_spans())

    def _problem(self, text: str) -> None:
        if len(self.problems) < 20 and text not in self.problems:
            self.problems.append(text)


def _batch_key(launch: Launch) -> Any:
    """Launches with equal keys are decoded and filed together."""
    places = tuple((id(session), context_id, state_id) for session, context_id, state_id in launch.places)
    hooked: Any = None
    if launch.hooked is not None:
        try:
            hooked = (launch.hooked[0], tuple(sorted(launch.hooked[1].items())))
            hash(hooked)
        except TypeError:  # unhashable metric values (device tensors): this launch alone
            hooked = (launch.hooked[0], id(launch))
    return (launch.function, launch.slot.size, places, hooked)


_engine: Engine | None = None


def engine() -> Engine:
    global _engine
    if _engine is None:
        _engine = Engine()
    return _engine


class InstrumentationBackend:
    """``backend="instrumentation"``: the kernels' ``pl.scope``s, per CTA and warp (see the module)."""

    name = "instrumentation"

    def __init__(self, mode: Any = None, combined: bool = False) -> None:
        try:
            self.mode = instrumentation_mode(mode)
        except ValueError as exc:
            raise BackendError(f"bad instrumentation mode: {exc}") from None
        self.combined = combined

    def start(self, session: Recorder) -> None:
        reason = unavailable_reason()
        if reason is not None:
            raise BackendError(
                f"the instrumentation backend is unavailable: {reason}; without a GPU, pl.scope is "
                "recorded per program by the interpreter backend (--backend interpreter)"
            )
        engine().add(session, self.mode, self.combined)

    def stop(self, session: Recorder) -> None:
        HookManager.unregister(session.setup.session_id)
        engine().remove(session)

    def flush(self, session: Recorder) -> None:
        engine().drain()

    def set_active(self, session: Recorder, active: bool) -> None:
        return None  # the hook manager follows the session; a paused session gets no launches
