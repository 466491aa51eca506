"""The open profiling sessions, in one place every public module reads.

:mod:`.lifecycle` (start/activate/finalize) owns them; the states (``collect.context.state``),
reached from the backends a session drives, and Proton's data functions (:mod:`.phases`), which a
session's own module imports, find them here, typed by a protocol, so that neither imports the
session. ``active`` is mutated in place, never rebound: the scope hot path holds a reference to it
and checks only its truth. ``SessionError`` lives here too, for the same reason.
"""

from __future__ import annotations

import threading
from typing import Protocol

from deuteron.model.errors import DeuteronError


class SessionError(DeuteronError, ValueError):
    """Bad arguments to the session API; the message says which and what is allowed."""


class OpenSession(Protocol):
    """What the modules beside the API use of an open session: its id and its Proton state. A
    protocol, so that this module imports no session (the backends that a session drives reach
    the states through here: importing the session would close a circle)."""

    id: int

    def state(self) -> str | None: ...

    def set_state(self, name: str | None) -> None: ...


sessions: dict[int, OpenSession] = {}
active: list[OpenSession] = []
lock = threading.Lock()
# Sessions `deuteron run` opened around the program: a bare finalize() in the program ends the
# program's own sessions, not these (the whole-program profile goes on and is written at its end).
command_sessions: set[int] = set()
