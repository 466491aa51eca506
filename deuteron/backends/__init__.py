"""Backends say what a kernel cost; they hand (context, kernel, metrics) to the session.

``auto`` picks CUPTI where an NVIDIA GPU and the native shim are usable, else the Triton
interpreter, which needs no GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..session import Session

NAMES = ("auto", "interpreter", "cupti")


class BackendError(RuntimeError):
    """The asked-for backend cannot run here; the message says why and what to do."""


class Backend(Protocol):
    name: str

    def start(self, session: Session) -> None: ...

    def stop(self, session: Session) -> None: ...


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
