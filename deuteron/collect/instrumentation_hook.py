"""Proton's instrumentation hook: the object Triton calls around instrumented kernels.

It has Proton's name, constructor and class attributes (``enable_host_buffer``, ``host_buffer``,
``profile_buffer_size``, ``profile_buffer_alignment``, ``active_count``) so code written against
``triton.profiler.hooks.InstrumentationHook`` runs. What it does is the instrumentation backend's:
the backend gives it a *runtime* (``attach``) that switches the compiler passes on and off, learns
each loaded kernel's scopes, and keeps each launch's buffer until it is read back. A hook nobody
attached (one a program built itself) does nothing, and ``start(hook=...)`` refuses it in one line.
"""

from __future__ import annotations

from typing import Any, Protocol

from deuteron.collect.hook_manager import Hook
from deuteron.collect.modes import InstrumentationMode, instrumentation_mode


class Runtime(Protocol):
    """What the hook hands on to (the instrumentation backend's engine)."""

    def activate(self, mode: InstrumentationMode) -> None: ...

    def deactivate(self) -> None: ...

    def loaded(self, function: Any, name: str, metadata_group: dict[str, str]) -> None: ...

    def entered(self, metadata: Any) -> None: ...

    def exited(self, metadata: Any, host_buffer: bool) -> Any: ...


class InstrumentationHook(Hook):
    """Proton's hook, driving the runtime attached to it (see the module's text)."""

    priority = 0
    active_count = 0  # Proton's: at most one instrumentation hook is active at a time
    enable_host_buffer = False  # Proton's: copy each launch's buffer to the host, after it ends
    host_buffer: Any = None  # ... into this CPU uint8 tensor, in Proton's layout
    profile_buffer_size = 1
    profile_buffer_alignment = 128

    def __init__(self, mode: str | InstrumentationMode | None = "") -> None:
        self.mode = instrumentation_mode(mode)
        self.runtime: Runtime | None = None

    def attach(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def activate(self) -> None:
        if self.runtime is None:
            return
        if InstrumentationHook.active_count > 0:
            raise RuntimeError("Only one instance of the instrumentation hook can be active at a time.")
        self.runtime.activate(self.mode)
        InstrumentationHook.active_count += 1

    def deactivate(self) -> None:
        if self.runtime is None or InstrumentationHook.active_count == 0:
            return
        InstrumentationHook.active_count -= 1
        self.runtime.deactivate()

    def init_handle(
        self, module: Any, function: Any, name: str, metadata_group: dict[str, str], hash: str
    ) -> None:
        if self.runtime is not None and function:
            self.runtime.loaded(function, name, metadata_group)

    def enter(self, metadata: Any) -> None:
        if self.runtime is not None:
            self.runtime.entered(metadata)
            if InstrumentationHook.enable_host_buffer:
                InstrumentationHook.host_buffer = None

    def exit(self, metadata: Any) -> None:
        if self.runtime is not None:
            host = self.runtime.exited(metadata, InstrumentationHook.enable_host_buffer)
            if InstrumentationHook.enable_host_buffer and host is not None:
                InstrumentationHook.host_buffer = host
