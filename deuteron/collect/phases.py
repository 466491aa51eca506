"""Proton's ``data`` module: a session's profile while it runs, phase by phase.

``advance_phase`` closes the current phase (what the GPU has recorded so far is filed first) and
starts the next on the same frames; ``get`` gives a phase as the hatchet document (the list
``[tree, device table]`` a file would hold), ``get_msgpack`` the same in msgpack; ``clear`` drops
a phase (or all up to it); ``is_phase_complete`` says whether a phase can still change.
``finalize`` writes every phase not cleared, as one tree.
"""

from __future__ import annotations

from typing import Any

from deuteron.collect import api
from deuteron.collect.session import Session, SessionError
from deuteron.formats import hatchet, jsonio
from deuteron.model.tree import Profile


def _session(session: int | None) -> Session | None:
    if session is None:
        return None
    found = api.find(session)
    if found is None:
        raise SessionError(f"Session has not been initialized: {session}")
    return found


def _phase(s: Session, phase: int) -> Profile:
    """The phase's tree: the frames entered or given values in it, as Proton's phase holds them
    (a scope with no kernel under it too; frames of earlier or cleared phases, which the live tree
    keeps empty, are not in it). The caller holds the session's lock."""
    profile = s.phase_profile(phase)
    if profile is None:
        raise SessionError(f"Session {s.id} has no data for phase {phase} (cleared, or not reached)")
    return profile


def get(session: int | None = 0, phase: int = 0) -> Any:
    """The phase's profile as the hatchet document (None when ``session`` is None)."""
    s = _session(session)
    if s is None:
        return None
    s.settle()
    with s.lock:
        return jsonio.loads("".join(hatchet.chunks(_phase(s, phase))))  # any depth


def get_msgpack(session: int | None = 0, phase: int = 0) -> bytes | None:
    """The same document in msgpack."""
    s = _session(session)
    if s is None:
        return None
    s.settle()
    with s.lock:
        return hatchet.to_msgpack(_phase(s, phase))


def advance_phase(session: int | None = 0) -> int | None:
    """Close the current phase and start the next; returns the new phase's number."""
    s = _session(session)
    return None if s is None else s.advance_phase()


def is_phase_complete(session: int | None = 0, phase: int = 0) -> bool:
    """Whether a phase will receive nothing more: it was closed by ``advance_phase``, or it is the
    current phase of a session that is not recording and was flushed."""
    s = _session(session)
    if s is None:
        return False
    return phase < s.phase


def clear(session: int | None = 0, phase: int = 0, clear_up_to_phase: bool = False) -> None:
    """Drop a phase's data (with ``clear_up_to_phase``, every phase up to it too)."""
    s = _session(session)
    if s is not None:
        s.clear_phase(phase, clear_up_to_phase)
