"""The open profiling sessions, in one place every public module reads.

``api`` (start/activate/finalize), ``state``, ``context`` and ``data`` all need to know which
sessions exist and which record; keeping the lists here (and nothing else) lets each of those
modules stand alone without importing the others. ``active`` is mutated in place, never rebound:
the scope hot path holds a reference to it and checks only its truth.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .collect.session import Session

sessions: dict[int, Session] = {}
active: list[Session] = []
lock = threading.Lock()
# Sessions `deuteron run` opened around the program: a bare finalize() in the program ends the
# program's own sessions, not these (the whole-program profile goes on and is written at its end).
command_sessions: set[int] = set()
