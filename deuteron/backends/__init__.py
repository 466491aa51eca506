"""Backends say what a kernel cost; they hand (context, kernel, metrics) to the session.

``auto`` picks CUPTI where an NVIDIA GPU and the native shim are usable, else the Triton
interpreter, which needs no GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..session import Session

NAMES = ("auto", "interpreter", "cupti")


class BackendError(RuntimeError):
    """The asked-for backend cannot run here; the message says why and what to do."""


class Backend(Protocol):
    name: str

    def start(self, session: Session) -> None: ...

    def stop(self, session: Session) -> None: ...


def launch_metadata_metrics(meta: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Proton's ``hook="triton"`` reading of launch_metadata: its name, and its numeric values.

    Shared by both backends so a kernel's metadata means the same under the interpreter and CUPTI.
    """
    name = meta.get("name")
    extra: dict[str, Any] = {}
    for key, value in meta.items():
        if key in ("name", "function", "stream"):
            continue
        if hasattr(value, "item") and callable(value.item):
            value = value.item()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            extra[key] = value
    return (None if name is None else str(name)), extra


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
