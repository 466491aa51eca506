"""Proton's data phases: a session's profile while it runs, phase by phase.

A session's live tree is its current phase. ``advance_phase`` closes it (what the GPU has recorded
so far is filed first) and starts the next on the same frames, values from zero, so open scopes
stay open; the closed phase is kept (:class:`Phases`), or, with Proton's periodic flushing, written
as ``NAME.part_<phase>.<format>`` and dropped from memory. ``finalize`` writes every phase not
cleared, as one tree.

Proton's ``data`` module is the functions below: ``get`` gives a phase as the hatchet document
(the list ``[tree, device table]`` a file would hold), ``get_msgpack`` the same in msgpack;
``clear`` drops a phase (or all up to it); ``is_phase_complete`` says whether a phase can still
change. They find sessions in :mod:`.registry`, so this module imports no session.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast

from deuteron.collect import output, registry
from deuteron.collect.registry import SessionError
from deuteron.collect.trace_buffer import TraceBuffer
from deuteron.formats import hatchet, jsonio, profile_stream
from deuteron.model.trace import TraceEvent
from deuteron.model.tree import Profile, on_paths_to
from deuteron.model.tree_ops import copy, merge, prune

TraceSource = Callable[[], tuple[list[TraceEvent], dict[int, str]]]


class EnteredFrames(Protocol):
    """Where the frames entered since the current phase began are counted (the tree builder's
    scope path adds to it); None until a phase ends or is cleared: until then every frame is the
    current phase's."""

    entered_frames: set[int] | None


class Phases:
    """One session's phases: the current one's number, the closed ones kept, the parts written.

    The caller holds the session's lock around every method but :meth:`clear`, which takes it."""

    def __init__(
        self, profile: Profile, frames: EnteredFrames, lock: threading.Lock, flush_format: str | None
    ) -> None:
        self.profile = profile
        self.frames = frames
        self.lock = lock
        self.current = 0
        self.completed: dict[int, Profile] = {}
        self.flush_format = flush_format  # periodic flushing: each closed phase written, not kept
        self.parts_written: list[Path] = []
        # deuteron run --flush-every: each closed phase appended to the run's stream, not kept
        self.stream: profile_stream.StreamWriter | None = None
        self.stream_trace: Callable[[list[TraceEvent], dict[int, str]], str] | None = None

    def advance(self, base: Path, trace: TraceBuffer, trace_events: TraceSource) -> int:
        """Close the current phase (kept, appended to the stream, or written as a part) and start
        the next."""
        if self.stream is not None:
            self.append_to_stream(self.stream, trace, trace_events)
        elif self.flush_format is not None:
            self.write_part(self.flush_format, base, trace, trace_events)
        else:
            self.completed[self.current] = self.tree(detached=True)
        self.restart()
        self.current += 1
        return self.current

    def restart(self) -> None:
        """The current phase starts again from nothing: values zeroed on the same frames (open
        scopes stay open), and no frame counted as entered in it yet."""
        for node in self.profile.root.walk():
            node.metrics = {}
        self.frames.entered_frames = set()

    def tree(self, detached: bool = False) -> Profile:
        """The current phase as Proton has it: the frames entered or given values since it began
        (with the paths to them), not those of earlier or cleared phases, which the live tree keeps
        empty. Before any phase ended or was cleared, the live tree itself (a copy if
        ``detached``)."""
        entered = self.frames.entered_frames
        if entered is None:
            return copy(self.profile) if detached else self.profile
        wanted = on_paths_to(self.profile.root, lambda n: bool(n.metrics) or id(n) in entered)
        return prune(self.profile, lambda n, _depth: id(n) in wanted)

    def write_part(self, fmt: str, base: Path, trace: TraceBuffer, trace_events: TraceSource) -> None:
        """Write the current phase as ``NAME.part_<phase>.<fmt>`` and drop its trace spans (the
        tree is cleared by the caller)."""
        part = self.tree(detached=True)
        part.metadata = {**self.profile.metadata, "phase": self.current, "end_time": time.time()}
        named = base.with_name(f"{base.name}.part_{self.current}")
        self.parts_written += output.write(part, [fmt], named, trace_events)
        trace.clear()

    def append_to_stream(
        self, stream: profile_stream.StreamWriter, trace: TraceBuffer, trace_events: TraceSource
    ) -> None:
        """Append the current phase to the run's stream (its trace too, when the run writes one)
        and drop its trace spans (the tree is cleared by the caller)."""
        part = self.tree(detached=True)
        now = time.time()
        part.metadata = {**self.profile.metadata, "phase": self.current, "end_time": now}
        text = None
        if self.stream_trace is not None:
            text = self.stream_trace(*trace_events()).encode()
        stream.append(self.current, now, hatchet.to_msgpack(part), text)
        trace.clear()

    def profile_of(self, phase: int) -> Profile | None:
        """The tree of one phase (see :meth:`tree` for the current one); None once cleared or not
        reached."""
        return self.tree() if phase == self.current else self.completed.get(phase)

    def clear(self, phase: int, up_to: bool = False) -> None:
        with self.lock:
            for p in [p for p in list(self.completed) if p == phase or (up_to and p < phase)]:
                del self.completed[p]
            if phase == self.current or (up_to and phase > self.current):
                self.restart()

    def whole(self) -> Profile:
        """Every phase not cleared, as one tree (what ``finalize`` writes)."""
        if not self.completed and self.frames.entered_frames is None:
            return self.profile
        whole = merge([*self.completed.values(), self.tree()])
        whole.metadata = self.profile.metadata
        return whole


# --- Proton's data module ---------------------------------------------------------------------


class PhasedSession(Protocol):
    """What the data functions use of a session (a protocol: the session module imports this one)."""

    id: int
    lock: threading.Lock
    phases: Phases

    def settle(self) -> None: ...

    def advance_phase(self) -> int: ...


def _session(session: int | None) -> PhasedSession | None:
    if session is None:
        return None
    found = registry.sessions.get(session)
    if found is None:
        raise SessionError(f"Session has not been initialized: {session}")
    return cast(PhasedSession, found)


def _phase(s: PhasedSession, phase: int) -> Profile:
    """The phase's tree: the frames entered or given values in it, as Proton's phase holds them
    (a scope with no kernel under it too; frames of earlier or cleared phases, which the live tree
    keeps empty, are not in it). The caller holds the session's lock."""
    profile = s.phases.profile_of(phase)
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
    return phase < s.phases.current


def clear(session: int | None = 0, phase: int = 0, clear_up_to_phase: bool = False) -> None:
    """Drop a phase's data (with ``clear_up_to_phase``, every phase up to it too)."""
    s = _session(session)
    if s is not None:
        s.phases.clear(phase, clear_up_to_phase)
