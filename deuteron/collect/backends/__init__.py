"""Backends say what a kernel cost; they hand (context, kernel, metrics) to the session.

``auto`` picks CUPTI where an NVIDIA GPU and the native shim are usable, else the Triton
interpreter, which needs no GPU. A backend sees the session only through :class:`SessionPort`
and never builds tree nodes: the interpreter reports each launch from the launching thread
(``record_kernel``); a GPU backend reports batches of :class:`KernelGroup` by context id.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from ...model.errors import DeuteronError
from ...model.trace import KernelSpans
from ..placement import LaunchContexts

NAMES = ("auto", "interpreter", "cupti")


class BackendError(DeuteronError, RuntimeError):
    """The asked-for backend cannot run here; the message says why and what to do."""


@dataclass
class KernelGroup:
    """Kernels of one batch that share a context, a kernel name and a device, summed."""

    context: int  # the launch's context id (LaunchContexts)
    other_thread: bool  # launched by a thread with no context of its own
    capture: int  # context id where a CUDA graph captured it; 0 when not replayed from a graph
    state: int  # state id; 0 for none
    name: str
    metrics: dict[str, Any]
    op: int = 0  # the torch context's place of the launch (a trie id); 0 for none


class SessionPort(Protocol):
    """What a backend may ask of the session it records for."""

    id: int
    active: bool
    hook: str | None
    context: str
    contexts: LaunchContexts
    context_listener: Callable[[int, int], None] | None

    def record_kernel(self, name: str, metrics: dict[str, Any], start_ns: int, end_ns: int) -> None: ...

    def context_ids(self) -> tuple[int, int]: ...

    def open_scope(self, name: str, metrics: dict[str, Any] | None) -> None: ...

    def close_scope(
        self, name: str | None, start_ns: int, end_ns: int, metrics: dict[str, Any] | None
    ) -> None: ...

    def file_gpu_kernels(self, groups: list[KernelGroup | None], spans: KernelSpans) -> None: ...

    def add_device(self, device_type: str, device_id: str, row: dict[str, object]) -> None: ...

    def note(self, **metadata: Any) -> None: ...


class Backend(Protocol):
    name: str

    def start(self, session: SessionPort) -> None: ...

    def stop(self, session: SessionPort) -> None: ...


AUTOTUNE_SCOPE = "<autotune>"  # where @triton.autotune's benchmark launches are filed (Proton's recipe)


@contextmanager
def benchmark_scope(sessions: Sequence[SessionPort]) -> Iterator[None]:
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


def cupti_unavailable_reason() -> str | None:
    """Why the CUPTI backend cannot run here, or None if it can."""
    from .cupti import unavailable_reason

    return unavailable_reason()


def resolve(name: str) -> Backend:
    if name not in NAMES:
        raise BackendError(f"unknown backend {name!r}; choose one of: {', '.join(NAMES)}")
    if name == "auto":
        name = "cupti" if cupti_unavailable_reason() is None else "interpreter"
    if name == "cupti":
        reason = cupti_unavailable_reason()
        if reason is not None:
            raise BackendError(f"the cupti backend is unavailable: {reason}; use --backend interpreter")
        from .cupti import CuptiBackend

        return CuptiBackend()
    from .interpreter import InterpreterBackend

    return InterpreterBackend()
