"""Proton's instrumentation hook, as an object code can build and hand to the hook manager.

Deuteron has no instrumentation mode yet (``start(backend="instrumentation")`` and
``mode=InstrumentationMode(...)`` are refused in one line). This class keeps Proton's shape so
code that constructs and registers it runs; it instruments nothing, and says so if asked to.
"""

from __future__ import annotations

from typing import Any

from deuteron.collect.hook_manager import Hook
from deuteron.collect.modes import InstrumentationMode


class InstrumentationHook(Hook):
    """Proton's constructor and methods, all doing nothing (see the module's text).

    Handing one to ``start(hook=...)`` is refused in one line; here it only needs to exist, so a
    program that builds one before choosing a backend still imports and runs.
    """

    priority = 0

    def __init__(self, mode: str | InstrumentationMode | None = "") -> None:
        self.mode = mode
        self.active = False

    def init_handle(
        self, module: Any, function: Any, name: str, metadata_group: dict[str, str], hash: str
    ) -> None:
        return None

    def activate(self) -> None:
        self.active = True

    def deactivate(self) -> None:
        self.active = False

    def enter(self, metadata: Any) -> None:
        return None

    def exit(self, metadata: Any) -> None:
        return None
