"""What a backend and its session know of each other: the session as a backend sees it
(:class:`Recorder`), the backend as a session drives it (:class:`Backend`), and the records they
pass (:class:`KernelGroup`). A module of its own so that backends and the package that picks one
(``resolve``) do not import each other.

The recorder port is narrow and speaks in ids: a backend opens and closes scopes, files kernels by
*context id* (``file_kernels``; the interpreter's launches with ``record_kernel``), adds a device
row or a note, asks for the calling thread's ids, names the ids it made itself (``name_context``),
and subscribes to context changes. It never reads or writes the session's parts: the tree and the
translation of ids into nodes are the session's (:mod:`deuteron.collect.tree_builder`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from deuteron.model.errors import DeuteronError
from deuteron.model.intra import IntraSpans, ScopeRow
from deuteron.model.trace import KernelSpans


class BackendError(DeuteronError, RuntimeError):
    """The asked-for backend cannot run here; the message says why and what to do."""


@dataclass
class InterpretedKernel:
    """A kernel the calling thread just ran in the interpreter, as the interpreter backend files
    it: one record, so that the recorder's call and the tree builder's share one shape."""

    name: str
    metrics: dict[str, Any]
    start_ns: int
    end_ns: int
    scopes: list[ScopeRow] | None = None  # its pl.scopes, filed under it
    intra: IntraSpans | None = None  # their spans per program, for the trace


@dataclass
class KernelGroup:
    """Kernels of one batch that share a context, a kernel name and a device, summed."""

    context_id: int  # the launch's context (LaunchContexts)
    other_thread: bool  # launched by a thread with no context of its own
    captured_context_id: int  # where a CUDA graph captured it; 0 when not replayed from a graph
    state_id: int  # 0 for none
    name: str
    metrics: dict[str, Any]
    place_id: int = (
        0  # a framework's place of the launch (torch's trie id, a JAX or native place); 0 for none
    )
    scopes: list[ScopeRow] = field(default_factory=list)  # the kernel's pl.scopes, filed under it
    intra: IntraSpans | None = None  # their spans per CTA and unit, for the trace
    symbol: str = ""  # the kernel function's own name, when PC samples are to find its nodes


class RecordedTable(Protocol):
    """A framework context whose tables travel with a recorded drain (``table``), so that a replay
    without the framework (``replay``) files kernels where the live run did."""

    def table(self) -> Any: ...

    def replay(self, table: Any) -> None: ...


class OpProbe(RecordedTable, Protocol):
    """The torch context, as the CUPTI shim needs it: the C function it asks for each launch's place."""

    def probe_address(self) -> int: ...


class NativeFrames(RecordedTable, Protocol):
    """The native context: it reads the C/C++ call paths the shim unwound, through ``reader``."""

    reader: Callable[[int], list[tuple[int, ...]]] | None


class LatePlaces(RecordedTable, Protocol):
    """The JAX context: it places kernels when their records arrive (matched to an executable's
    schedule), not at launch."""

    def assign(
        self,
        names: list[str],
        graph_ids: Any,
        correlations: Any,
        starts: Any,
        launch_ts: Any,
        thread: Any,
        context_ids: Any,
    ) -> Any: ...


@dataclass(frozen=True)
class Frameworks:
    """The framework contexts of one session, the one way a backend reaches them (a backend never
    imports a framework: these are protocols of what it needs of each)."""

    torch: OpProbe | None = None
    jax: LatePlaces | None = None
    native: NativeFrames | None = None

    def recorded(self) -> dict[str, RecordedTable]:
        """The contexts present, by the key their table has in a recorded drain's metadata."""
        found: dict[str, RecordedTable | None] = {"torch": self.torch, "jax": self.jax, "native": self.native}
        return {name: context for name, context in found.items() if context is not None}


PythonFrames = Sequence[tuple[str, int, str]]  # (file, line, function), innermost first
ContextListener = Callable[[int, int], None]  # told (context id, state id) of the calling thread


@dataclass(frozen=True)
class RecorderSetup:
    """What a recorder was started with, as a backend needs it: ``context`` is ``"shadow"`` or
    ``"python"`` (how launches find their place), ``hook`` Proton's launch hook (``"triton"``)."""

    session_id: int
    context: str
    hook: str | None
    frameworks: Frameworks


class Recorder(Protocol):
    """What a backend may ask of the session it records for: 13 members, all by id.

    ``active``: whether the session records now (a paused one is filed nothing). ``context_ids``:
    the calling thread's innermost scope and state (``launch=True``: its whole launch context, with
    Python frames, module and op), what a GPU backend records per launch. ``subscribe``: the
    listener is told those ids whenever they change on a thread (None: stop telling).
    ``name_context``: a backend's own ids (fixed frames, a recorded drain's contexts, the Python
    call paths its shim captured). ``recorded``: the tables a recorded drain keeps, so that a
    replay files kernels where the live run did."""

    setup: RecorderSetup
    active: bool

    def open_scope(self, name: str, metrics: dict[str, Any] | None) -> None: ...

    def close_scope(
        self, name: str | None, start_ns: int, end_ns: int, metrics: dict[str, Any] | None
    ) -> None: ...

    def record_kernel(self, kernel: InterpretedKernel) -> None: ...

    def file_kernels(self, groups: list[KernelGroup | None], spans: KernelSpans) -> None: ...

    def file_samples(self, rows_by_symbol: dict[str, list[ScopeRow]]) -> None: ...

    def add_device(self, device_type: str, device_id: str, row: dict[str, object]) -> None: ...

    def note(self, **metadata: Any) -> None: ...

    def context_ids(self, launch: bool = False) -> tuple[int, int]: ...

    def subscribe(self, listener: ContextListener | None) -> None: ...

    def name_context(
        self, context_id: int, path: Sequence[str] = (), python_frames: PythonFrames | None = None
    ) -> None: ...

    def recorded(self) -> dict[str, RecordedTable]: ...


class Backend(Protocol):
    """What a session asks of its backend: begin and end recording for it, file what is pending
    (``flush``: a GPU backend drains its buffers; the interpreter files at launch, so has nothing
    to do), and follow ``activate``/``deactivate`` (``set_active``)."""

    name: str

    def start(self, session: Recorder) -> None: ...

    def stop(self, session: Recorder) -> None: ...

    def flush(self, session: Recorder) -> None: ...

    def set_active(self, session: Recorder, active: bool) -> None: ...


AUTOTUNE_SCOPE = "<autotune>"  # where @triton.autotune's benchmark launches are filed (Proton's recipe)


@contextmanager
def benchmark_scope(sessions: Sequence[Recorder]) -> Iterator[None]:
    """``@triton.autotune``'s benchmark launches under ``<autotune>`` in each active session, apart
    from the launches the script asked for; the scope closes only where the session still records."""
    sessions = [s for s in sessions if s.active]
    start = time.perf_counter_ns()
    for session in sessions:
        session.open_scope(AUTOTUNE_SCOPE, None)
    try:
        yield
    finally:
        end = time.perf_counter_ns()
        for session in reversed(sessions):
            if session.active:
                session.close_scope(AUTOTUNE_SCOPE, start, end, None)
