"""Proton's ``context`` module: how deep the calling thread is in a session's scopes."""

from __future__ import annotations

from . import api


def depth(session: int | None = 0) -> int | None:
    """The number of scopes the calling thread has open in ``session`` (None while no session
    records, as in Proton)."""
    if not api._active:
        return None
    for s in api._active:
        if session is None or s.id == session:
            return len(s.shadow.stack()) - 1
    return None
