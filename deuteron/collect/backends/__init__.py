"""Backends say what a kernel cost; they hand (context, kernel, metrics) to the session.

``auto`` picks CUPTI where an NVIDIA GPU and the native shim are usable, else the Triton
interpreter, which needs no GPU. A backend sees the session only through :class:`Recorder`
and never builds tree nodes: the interpreter reports each launch from the launching thread
(``record_kernel``); a GPU backend reports batches of :class:`~.port.KernelGroup` by context id.
"""

from __future__ import annotations

import os

from deuteron.collect.backends.port import Backend, BackendError, Recorder
from deuteron.collect.modes import sampling_interval

NAMES = ("auto", "interpreter", "cupti", "instrumentation", "cupti,instrumentation")

__all__ = [
    "NAMES",
    "Backend",
    "BackendError",
    "Recorder",
    "auto_backend",
    "cupti_unavailable_reason",
    "resolve",
]


def cupti_unavailable_reason() -> str | None:
    """Why the CUPTI backend cannot run here, or None if it can."""
    from deuteron.collect.backends.cupti import unavailable_reason

    return unavailable_reason()


def auto_backend() -> str:
    """The backend ``auto`` picks here, without starting it: ``cupti`` where CUPTI can run, else
    ``interpreter``."""
    return "cupti" if cupti_unavailable_reason() is None else "interpreter"


class Together:
    """Two backends recording the same sessions (``cupti,instrumentation``: kernel times from CUPTI,
    their scopes from instrumented code, filed under the same kernel nodes)."""

    def __init__(self, parts: list[Backend]) -> None:
        self.parts = parts
        self.name = ",".join(p.name for p in parts)

    def start(self, session: Recorder) -> None:
        started: list[Backend] = []
        try:
            for part in self.parts:
                part.start(session)
                started.append(part)
        except BaseException:
            for part in reversed(started):
                part.stop(session)
            raise

    def stop(self, session: Recorder) -> None:
        for part in reversed(self.parts):  # scopes first, then the kernel times they sit in
            part.stop(session)

    def flush(self, session: Recorder) -> None:
        for part in self.parts:
            part.flush(session)

    def set_active(self, session: Recorder, active: bool) -> None:
        for part in self.parts:
            part.set_active(session, active)


def resolve(name: str, mode: object = None) -> Backend:
    """The backend called ``name`` (``auto``: CUPTI where it can run, else the interpreter; the
    instrumentation backend takes Proton's ``mode``); one line saying why, when it cannot run here."""
    name = ",".join(part.strip() for part in name.split(","))
    if name == "instrumentation,cupti":
        name = "cupti,instrumentation"
    if name not in NAMES:
        raise BackendError(f"unknown backend {name!r}; choose one of: {', '.join(NAMES)}")
    if "instrumentation" in name:
        from deuteron.collect.backends.instrumentation import InstrumentationBackend

        if name == "instrumentation":
            return InstrumentationBackend(mode)
        return Together([resolve("cupti"), InstrumentationBackend(mode, combined=True)])
    interval = _sampling(mode)
    if interval is not None and name not in ("auto", "cupti"):
        raise BackendError(
            f"PC sampling (mode='pcsampling') runs on the cupti backend, not {name!r}: "
            "it samples the GPU's own instructions"
        )
    if name == "auto":
        reason = cupti_unavailable_reason()
        name = "cupti" if reason is None or interval is not None else "interpreter"
        if reason is not None and name == "interpreter" and not reason.startswith("no NVIDIA GPU"):
            _say_why_not_cupti(reason)
    if name == "cupti":
        reason = cupti_unavailable_reason()
        if reason is not None and interval is not None:
            raise BackendError(
                f"PC sampling cannot run here: {reason}. Without a GPU, deuteron explain shows each "
                "kernel's SASS, PTX and IR by source line, and -b interpreter its exact bytes and flops"
            )
        if reason is not None:
            raise BackendError(f"the cupti backend is unavailable: {reason}; use --backend interpreter")
        from deuteron.collect.backends.cupti import CuptiBackend, SampleConfig

        return CuptiBackend(SampleConfig(interval) if interval is not None else None)
    from deuteron.collect.backends.interpreter import InterpreterBackend

    return InterpreterBackend()


NVIDIA_DRIVER = "/proc/driver/nvidia/version"  # there while NVIDIA's kernel driver is loaded


def _say_why_not_cupti(reason: str) -> None:
    """On a machine with an NVIDIA driver, ``auto`` falling back to the interpreter (the shim not
    built, CUPTI not found) would leave the user's GPU kernels out without a word: one line says
    why, once per process."""
    global _said
    if _said or not os.path.exists(NVIDIA_DRIVER):
        return
    _said = True
    from deuteron.process.terminal import say

    say(
        f"deuteron: an NVIDIA driver is here but the cupti backend cannot run ({reason}); "
        "profiling Triton kernels in the interpreter instead, GPU kernels left out"
    )


_said = False


def _sampling(mode: object) -> int | None:
    try:
        return sampling_interval(mode)
    except ValueError as exc:
        raise BackendError(str(exc)) from None
