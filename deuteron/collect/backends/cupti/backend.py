"""GPU timing through CUPTI: every kernel, timed by the GPU, filed under its launch's context.

The native shim (``shim.c``) records launches and kernel records without the GIL; this
module hands them to the session in bulk at flush time, grouped and by context id (the session
turns ids into tree nodes): a background thread drains them when they pile up (bounded memory
on long runs), and ``stop`` drains the rest after synchronising the devices.

Contexts: with ``context="shadow"`` each thread's innermost scope is mirrored into a C thread
slot whenever it changes; a thread that never opened a scope (autograd's backward threads, a
library's worker) inherits the starting thread's scope, under a ``<other threads>`` frame.
With ``context="python"`` the shim walks the launching thread's Python frames (cached by
code object and instruction), and launches from threads running no Python land under
``<no Python context>``. Kernels replayed from a CUDA graph go under the graph launch's
context, then ``<captured_at>`` and the context they were captured in.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from deuteron.collect.backends.cupti import others, records
from deuteron.collect.backends.cupti.filing import NO_PYTHON_CTX, ROOT_CTX, file_batch
from deuteron.collect.backends.cupti.join import UNMATCHED, Join
from deuteron.collect.backends.cupti.late import late_placement
from deuteron.collect.backends.cupti.library import (
    CONFLICT_FIX,
    CuptiConflictError,
    conflict_message,
    loaded_library,
    shim,
    unavailable_reason,
)
from deuteron.collect.backends.cupti.recording import name_pointers, save_drain
from deuteron.collect.backends.cupti.run_notes import report, write_devices
from deuteron.collect.backends.cupti.sampled_lines import SampleCollector
from deuteron.collect.backends.cupti.sampling import SampleConfig
from deuteron.collect.backends.cupti.sharing import SharedContexts
from deuteron.collect.backends.port import BackendError, Recorder, benchmark_scope
from deuteron.collect.deferred import (
    DeferredValue,
    reserve_replay_buffer,
)
from deuteron.collect.launch_hook import LaunchHook
from deuteron.collect.placement import NO_LAUNCH, NO_PYTHON
from deuteron.model.intra import ScopeRow
from deuteron.triton.runtime import autotune

FLUSH_PERIOD_S = float(os.environ.get("DEUTERON_FLUSH_PERIOD", "2.0"))
# Drain once this many kernel records or launch entries wait (about 16 MB each).
DRAIN_KERNELS = int(os.environ.get("DEUTERON_DRAIN_KERNELS", "100000"))
DRAIN_ENTRIES = int(os.environ.get("DEUTERON_DRAIN_ENTRIES", "400000"))
RECORD_ENV = "DEUTERON_CUPTI_RECORD"  # a folder: raw drains are saved there as fixtures


def _api_flags() -> int:
    """Which callbacks to enable: driver launches, their runtime twins, graph-node resources.

    A runtime launch (cudaLaunchKernel) calls the driver's (cuLaunchKernel) with the same
    correlation id, so the driver callbacks alone see every launch, once; measured on an H200
    (CUDA 13 driver), every runtime launch also raised the driver callback. The runtime twins
    can be added with DEUTERON_CUPTI_APIS=driver,runtime (the shim keeps one entry per id).
    """
    names = os.environ.get("DEUTERON_CUPTI_APIS", "driver").lower().split(",")
    flags = 4  # graph nodes: always, for <captured_at>
    for name in names:
        flags |= {"driver": 1, "runtime": 2}.get(name.strip(), 0)
    if os.environ.get("DEUTERON_CUPTI_APIS", "").strip().lower() == "none":
        flags = 0  # benchmarks only: activity records without any callback
    return flags


class CuptiBackend:
    """Kernels timed by the GPU through CUPTI, for one session or several sharing one subscription.

    CUPTI serves one subscriber per process, so the first session's backend is the ``engine`` that
    holds it; a later session's backend attaches to it (``attached``) and ``sharing`` gives each
    thread's slot one id per combination of the sessions' contexts. The C shim does the per-launch
    work without the GIL; this class drains its buffers in bulk (a background thread when they pile
    up, and at ``flush``/``stop``), joins kernels to launches (``join``) and hands each session its
    groups by context id. ``live`` is False when replaying a recorded drain without a GPU."""

    name = "cupti"
    _active: CuptiBackend | None = None

    def __init__(self, sampling: SampleConfig | None = None) -> None:
        self.sampling = SampleCollector(sampling) if sampling is not None else None
        self.join = Join()
        self.names: dict[int, str] = {}
        self.metas: dict[tuple[Any, ...], int] = {}
        self.meta_table: dict[int, tuple[str | None, dict[str, Any]]] = {}
        self._meta_ids = 0
        self.threads: dict[int, int] = {}  # shim thread index -> threading ident
        self.devices: set[int] = set()
        self.clock_offset = 0  # session clock = CUPTI clock - offset
        self.counters: dict[str, int] = {}
        self.drain_seconds = 0.0
        self.drains = 0
        self.finalize_seconds = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
        self._unfile: Callable[[], None] | None = None
        self._record_dir: Path | None = None
        self._record_index = 0
        self.live = True  # False when replaying recorded drains: pointers are from another process
        self.engine = self  # the backend holding the subscription (another session's, when shared)
        self.attached: list[Recorder] = []  # the sessions filed into, in the order they started
        self.sharing = SharedContexts()
        self.told_graphs: set[int] = set()

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self, session: Recorder) -> None:
        """Subscribe to CUPTI for ``session``, or attach it to the subscription another session
        holds. A refusal (another CUPTI client, missing privileges) is one line naming the likely
        other profiler; the replay buffer is reserved first, so its zeroing kernel is not filed."""
        reason = unavailable_reason()
        if reason is not None:
            raise BackendError(f"the cupti backend is unavailable: {reason}")
        engine = CuptiBackend._active
        if engine is not None:  # another session records: share its subscription
            if (engine.sampling is None) != (self.sampling is None):  # Proton's words, so its tests match
                raise BackendError(
                    "Cannot add a session with the same profiler but a different mode than existing "
                    "sessions: one samples PCs (mode='pcsampling') and the other does not; finalize "
                    "the open sessions first"
                )
            engine._attach(session)
            self.engine = engine
            return
        conflict = conflict_message()
        if conflict:
            raise CuptiConflictError(f"{conflict}. {CONFLICT_FIX}")
        python = session.setup.context == "python"
        self._reserve(session)
        record = os.environ.get(RECORD_ENV)
        if record:
            self._record_dir = Path(record)
            self._record_dir.mkdir(parents=True, exist_ok=True)
        mode = 1 if python else 0
        reserve_replay_buffer()  # before CUPTI starts: its zeroing kernel is not the program's
        try:
            shim.start(mode, ROOT_CTX, _api_flags())
        except shim.CuptiError as exc:
            what, code, text = exc.args[0], exc.args[1], exc.args[2]
            if code in (39, 15, 35):  # multiple subscribers, not initialised, insufficient privileges
                other = (
                    conflict_message() or "another CUPTI client (torch.profiler, Proton, Nsight) is active"
                )
                raise CuptiConflictError(
                    f"{what} failed: {text} (CUPTI error {code}): {other}. {CONFLICT_FIX}"
                ) from None
            raise BackendError(
                f"the cupti backend could not start: {what} failed: {text} (CUPTI error {code})"
            ) from None
        CuptiBackend._active = self
        others.watch(lambda: CuptiBackend._active is not None)  # a torch.profiler started now is told
        if self.sampling is not None:
            self._start_sampling()
        torch_context, native_context = session.setup.frameworks.torch, session.setup.frameworks.native
        shim.set_op_probe(torch_context.probe_address() if torch_context is not None else 0)
        if native_context is not None:
            native_context.reader = shim.native_paths
        shim.set_native(native_context is not None)
        self._calibrate_clock()
        self._listen(session)
        self._unfile = autotune.file_benchmarks_under(self._benchmark_scope)
        self._stop.clear()
        self._flusher = threading.Thread(target=self._flush_loop, name="deuteron-cupti-flush", daemon=True)
        self._flusher.start()

    def stop(self, session: Recorder) -> None:
        engine = self.engine
        if CuptiBackend._active is not engine or session not in engine.attached:
            return
        if len(engine.attached) > 1:  # others go on recording: file everything so far, then leave
            began = time.perf_counter()
            engine.flush(session)
            if engine.sampling is not None:
                session.note(pc_sampling=engine.sampling.metadata())
            write_devices(engine.devices, session)
            engine._leave(session)
            engine.finalize_seconds = time.perf_counter() - began
            report(session, engine)
            return
        engine._stop_all(session)

    def _stop_all(self, session: Recorder) -> None:
        began = time.perf_counter()
        self._stop.set()
        if self._flusher is not None:
            self._flusher.join()
        failures = shim.synchronize()
        if failures:
            warnings.warn(
                f"deuteron: {failures} device(s) failed to synchronise; their last kernels may be missing",
                stacklevel=2,
            )
        samples = None
        try:
            samples = self._collect_samples(final=True)  # before cuptiFinalize (in shim.stop) ends it
            shim.stop()
        finally:  # whatever was recorded is filed, even when stopping CUPTI failed
            self._teardown()
            self._drain()
            self._file_samples(samples, final=True)
            write_devices(self.devices, session)
            self.finalize_seconds = time.perf_counter() - began
            report(session, self)

    def flush(self, session: Recorder) -> None:
        """Everything the GPU has recorded so far, filed now (``deactivate(flushing=True)``, a
        phase boundary): wait for the devices, force CUPTI's buffers out, drain them (into every
        session sharing the subscription)."""
        engine = self.engine
        if CuptiBackend._active is not engine:
            return
        shim.synchronize()
        shim.flush(True)
        engine._drain()
        engine._file_samples(engine._collect_samples(final=False), final=False)

    def _start_sampling(self) -> None:
        assert self.sampling is not None
        source = loaded_library()
        try:
            if source is None:
                raise BackendError("PC sampling needs libcupti, which is not loaded")
            if self._record_dir is not None:
                self.sampling.record_dir = self._record_dir
            visible = shim.cuda_devices()
            self.sampling.start(str(source[1]), visible if isinstance(visible, int) else 1)
        except BackendError:
            self._teardown()
            shim.stop()
            raise

    def _collect_samples(self, final: bool) -> dict[str, list[ScopeRow]] | None:
        return self.sampling.collect(final) if self.sampling is not None else None

    def _file_samples(self, rows: dict[str, list[ScopeRow]] | None, final: bool) -> None:
        """PC samples collected since the last drain, under the kernels' nodes in every session
        (after the kernels of the same period were filed, so each kernel's nodes are known)."""
        if self.sampling is None:
            return
        for session in self.attached:
            if rows is not None:
                session.file_samples(rows)
            if final:  # also when the last drain failed: what was filed before, and the error
                session.note(pc_sampling=self.sampling.metadata())
        lost = self.sampling.lost() if final else None
        if lost:
            warnings.warn(f"deuteron: {lost}", stacklevel=3)

    def set_active(self, session: Recorder, active: bool) -> None:
        """The shim pauses only when no session records; a session paused while others record
        keeps the times it was paused, and its kernels launched then are left out when filed."""
        engine = self.engine
        if CuptiBackend._active is not engine:
            return
        engine.sharing.set_active(session.setup.session_id, active, shim.timestamp())
        shim.set_paused(not any(s.active for s in engine.attached))

    # --- sessions sharing the subscription ---------------------------------------------------------

    def _reserve(self, session: Recorder) -> None:
        """The shim's fixed ids, named in the session: its root, and the frames of kernels with
        no launch record (and, under ``python``, of launches from threads running no Python)."""
        session.name_context(ROOT_CTX)
        session.name_context(UNMATCHED, (NO_LAUNCH,))
        if session.setup.context == "python":
            session.name_context(NO_PYTHON_CTX, (NO_PYTHON,))

    def _listen(self, session: Recorder) -> None:
        """Start filing for ``session``: its context changes set the thread slots directly, as when
        it records alone (:meth:`_attach` switches every session to shared ids when one joins)."""
        if session not in self.attached:
            self.attached.append(session)
        self.sharing.join(session.setup.session_id, ROOT_CTX, session.context_ids)
        session.subscribe(shim.set_context)
        if session.setup.hook == "triton":
            LaunchHook().subscribe(self)

    def _shared_listener(self, session: Recorder) -> Callable[[int, int], None]:
        sharing, session_id, set_context = self.sharing, session.setup.session_id, shim.set_context

        def on_context(context_id: int, state_id: int) -> None:
            slot, slot_state = sharing.slot_for(session_id, context_id, state_id)
            set_context(slot, slot_state)

        return on_context

    def _attach(self, session: Recorder) -> None:
        if session.setup.context == "python" or any(s.setup.context == "python" for s in self.attached):
            raise BackendError(
                "a context='python' CUPTI session cannot share the GPU with another session; "
                "use context='shadow' for concurrent sessions, or finalize the open one first"
            )
        self._reserve(session)
        self._listen(session)
        for member in self.attached:  # from now on every session's changes go through shared ids
            member.subscribe(self._shared_listener(member))
        self._shared_listener(session)(
            ROOT_CTX, 0
        )  # this thread's slot now stands for every session's context
        shim.set_paused(False)

    def _leave(self, session: Recorder) -> None:
        session.subscribe(None)
        if session in self.attached:
            self.attached.remove(session)
        self.sharing.leave(session.setup.session_id)
        if not any(s.setup.hook == "triton" for s in self.attached):
            LaunchHook().unsubscribe(self)

    def _teardown(self) -> None:
        shim.set_op_probe(0)
        shim.set_native(False)
        if self._unfile is not None:
            self._unfile()
            self._unfile = None
        LaunchHook().unsubscribe(self)
        for session in self.attached:
            session.subscribe(None)
        CuptiBackend._active = None

    def _calibrate_clock(self) -> None:
        best = None
        for _ in range(5):
            a = time.perf_counter_ns()
            c = shim.timestamp()
            b = time.perf_counter_ns()
            if best is None or b - a < best[0]:
                best = (b - a, c - (a + b) // 2)
        assert best is not None
        self.clock_offset = best[1]

    def _benchmark_scope(self) -> AbstractContextManager[None]:
        return benchmark_scope(list(self.attached))

    def launch_entered(self, name: str, metrics: dict[str, Any]) -> None:
        """The launch hook's reading of the next launch on this thread: its name and metrics
        travel with the kernel's record as a small id. Device-tensor metrics are read when the
        record is filed, so each such launch has its own id."""
        if any(isinstance(v, DeferredValue) for v in metrics.values()):
            mid = self._next_meta()
            self.meta_table[mid] = (name, metrics)
        else:
            interned = (name, tuple(sorted(metrics.items())))
            found = self.metas.get(interned)
            if found is None:
                found = self.metas[interned] = self._next_meta()
                self.meta_table[found] = (name, metrics)
            mid = found
        shim.set_pending(mid)

    def launch_exited(self) -> None:
        return None  # the shim attaches the id to the thread's next launch and then forgets it

    def _next_meta(self) -> int:
        self._meta_ids += 1
        return self._meta_ids

    # --- draining ----------------------------------------------------------------------------------

    def _flush_loop(self) -> None:
        while not self._stop.wait(FLUSH_PERIOD_S):
            try:
                shim.flush(False)
                kernels, entries = shim.pending()
                if kernels >= DRAIN_KERNELS or entries >= DRAIN_ENTRIES:
                    self._drain()
            except Exception as exc:  # keep the run going; the final drain reports the rest
                warnings.warn(f"deuteron: periodic CUPTI flush failed: {exc}", stacklevel=1)

    def _drain(self) -> None:
        with self._lock:
            began = time.perf_counter()
            raw_entries, raw_kernels, threads, paths, counters = shim.drain()
            self.counters = counters
            for index, ident in threads:
                self.threads[index] = ident
            for context_id, frames in paths:  # Python call paths, by the ids the shim gave them
                described = [(code.co_filename, line, code.co_name) for code, line in frames]
                for session in self.attached:
                    session.name_context(context_id, python_frames=described)
            if self._record_dir is not None:
                names = {ptr: self.kernel_name(ptr) for ptr in name_pointers(raw_kernels)}
                tables = self.attached[0].recorded()  # recording is for one session (a fixture)
                stem = self._record_dir / f"drain{self._record_index:03d}"
                self._record_index += 1
                save_drain(stem, raw_entries, raw_kernels, names, tables, self)
            self.ingest(raw_entries, raw_kernels)
            self.drain_seconds += time.perf_counter() - began
            self.drains += 1

    def ingest(self, raw_entries: bytes, raw_kernels: bytes) -> None:
        self.join.add_entries(records.entries(raw_entries))
        batch = self.join.match(records.kernels(raw_kernels), late_placement(self))
        self.join.expire()
        file_batch(self, batch)

    def kernel_name(self, ptr: int) -> str:
        """A kernel's name from its record's name pointer (read once per pointer: CUPTI's strings
        live in this process; a replayed drain has its names in the drain's table)."""
        name = self.names.get(ptr)
        if name is None:
            if ptr and self.live:  # CUPTI's name strings live in this process
                name = ctypes.string_at(ptr).decode("utf-8", "replace")
            else:
                name = f"<kernel {ptr:#x}>" if ptr else "<unnamed kernel>"
            self.names[ptr] = name
        return name
