"""Backends say what a kernel cost; they hand (context, kernel, metrics) to the session.

``auto`` picks CUPTI where an NVIDIA GPU and the native shim are usable, else the Triton
interpreter, which needs no GPU. A backend sees the session only through :class:`SessionPort`
and never builds tree nodes: the interpreter reports each launch from the launching thread
(``record_kernel``); a GPU backend reports batches of :class:`KernelGroup` by context id.
"""

from __future__ import annotations

from deuteron.collect.backends.port import (
    AUTOTUNE_SCOPE,
    Backend,
    BackendError,
    KernelGroup,
    SessionPort,
    benchmark_scope,
)

NAMES = ("auto", "interpreter", "cupti")

__all__ = [
    "AUTOTUNE_SCOPE",
    "NAMES",
    "Backend",
    "BackendError",
    "KernelGroup",
    "SessionPort",
    "benchmark_scope",
    "cupti_unavailable_reason",
    "resolve",
]


def cupti_unavailable_reason() -> str | None:
    """Why the CUPTI backend cannot run here, or None if it can."""
    from deuteron.collect.backends.cupti import unavailable_reason

    return unavailable_reason()


def resolve(name: str) -> Backend:
    """The backend called ``name`` (``auto``: CUPTI where it can run, else the interpreter); one
    line saying why, when it cannot run here."""
    if name not in NAMES:
        raise BackendError(f"unknown backend {name!r}; choose one of: {', '.join(NAMES)}")
    if name == "auto":
        name = "cupti" if cupti_unavailable_reason() is None else "interpreter"
    if name == "cupti":
        reason = cupti_unavailable_reason()
        if reason is not None:
            raise BackendError(f"the cupti backend is unavailable: {reason}; use --backend interpreter")
        from deuteron.collect.backends.cupti import CuptiBackend

        return CuptiBackend()
    from deuteron.collect.backends.interpreter import InterpreterBackend

    return InterpreterBackend()
