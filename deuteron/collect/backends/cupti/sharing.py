"""Several sessions on one CUPTI subscription: whose context a launch was made in, per session.

CUPTI serves one subscriber per process, and the shim keeps one context slot per thread. Proton
runs any number of sessions at once, so Deuteron shares the subscription: while one session
records, the slot holds that session's own context ids, exactly as before. From the moment a
second session joins, each thread's slot holds a *shared* id standing for "session A was in
context a, session B in context b" (interned per distinct combination), and filing a kernel
translates the id back for each session. Ids below :data:`SHARED_BASE` are the first session's
own (set before anyone joined); for any other session they mean its root.

A session that is deactivated while others record is not paused in the shim (that would pause
everyone): the times it was inactive are kept, and its kernels launched then are left out of its
tree when filed (by the launch's own timestamp).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

SHARED_BASE = 1 << 40  # shared ids start here; a session's own ids stay far below


@dataclass
class Member:
    """One session sharing the subscription."""

    session_id: int
    root: int  # the session's own id for its root context
    here: Callable[[], tuple[int, int]] | None = None  # its (context_id, state_id) on the calling thread
    inactive: list[list[int]] = field(default_factory=list)  # [from_ts, to_ts] (to 0: still inactive)

    def active_mask(self, launch_ts: np.ndarray) -> np.ndarray | None:
        """Which kernels (by launch time) were launched while the session recorded; None: all."""
        if not self.inactive:
            return None
        ts = launch_ts.astype(np.uint64)
        keep = np.ones(len(ts), dtype=bool)
        for start, end in self.inactive:
            upto = np.iinfo(np.uint64).max if end == 0 else end
            keep &= ~((ts >= start) & (ts < upto) & (ts > 0))
        return keep


class SharedContexts:
    """The shared ids of the sessions on one subscription (one per CUPTI backend), both ways.

    :meth:`slot_for` runs at every context change of a shared session (a scope's enter and exit), so
    a known combination is one dict look-up without the lock; the lock only guards making a new id.
    Each thread keeps its own view of where every session is, since slots are per thread.
    """

    def __init__(self) -> None:
        self.members: dict[int, Member] = {}
        self.owner: int | None = None  # whose own ids the slots held before sharing began
        self.shared = False
        self._ids: dict[tuple[tuple[int, int, int], ...], int] = {}
        self.table: dict[
            int, dict[int, tuple[int, int]]
        ] = {}  # shared id -> session_id -> (context_id, state_id)
        self._tls = threading.local()
        self._lock = threading.Lock()

    def join(self, session_id: int, root: int, here: Callable[[], tuple[int, int]] | None = None) -> None:
        self.members[session_id] = Member(session_id, root, here)
        if self.owner is None:
            self.owner = session_id
        elif len(self.members) > 1:
            self.shared = True

    def leave(self, session_id: int) -> None:
        self.members.pop(session_id, None)

    def current(self) -> dict[int, tuple[int, int]]:
        found: dict[int, tuple[int, int]] | None = getattr(self._tls, "current", None)
        if found is None:
            found = self._tls.current = {}
        return found

    def slot_for(self, session_id: int, context_id: int, state_id: int) -> tuple[int, int]:
        """Session ``session_id`` moved to (context_id, state_id) on this thread: what the thread's
        slot holds now."""
        current = self.current()
        current[session_id] = (context_id, state_id)
        if not self.shared:
            return context_id, state_id
        for member in self.members.values():  # a session not heard from on this thread yet
            if member.session_id not in current and member.here is not None:
                current[member.session_id] = member.here()
        key = tuple(sorted((s, c, st) for s, (c, st) in current.items() if s in self.members))
        shared_id = self._ids.get(key)
        if shared_id is None:
            with self._lock:
                shared_id = self._ids.get(key)
                if shared_id is None:
                    shared_id = SHARED_BASE + len(self._ids)
                    self.table[shared_id] = {s: (c, st) for s, c, st in key}
                    self._ids[key] = shared_id
        return shared_id, 0

    def translate(self, session_id: int, context_id: int, state_id: int) -> tuple[int, int]:
        """A recorded (context_id, state_id) as session ``session_id``'s own ids."""
        if context_id >= SHARED_BASE:
            member = self.members.get(session_id)
            return self.table.get(context_id, {}).get(session_id, (member.root if member else context_id, 0))
        if session_id == self.owner or not self.shared:
            return context_id, state_id
        member = self.members.get(session_id)
        return (member.root if member else context_id), 0

    def set_active(self, session_id: int, active: bool, now_ts: int) -> None:
        member = self.members.get(session_id)
        if member is None:
            return
        if not active and not (member.inactive and member.inactive[-1][1] == 0):
            member.inactive.append([now_ts, 0])
        elif active and member.inactive and member.inactive[-1][1] == 0:
            member.inactive[-1][1] = now_ts
