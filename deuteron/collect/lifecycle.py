"""The sessions' lifecycle, the engine of Proton's API: ``start`` opens a session and makes it
active, ``activate``/``deactivate`` pause and resume it, ``finalize`` stops its backend and writes
its profile. The open sessions are :mod:`.registry`'s table; a session forgotten at exit is written
anyway, and a forked child leaves its parent's sessions alone.
"""

from __future__ import annotations

import atexit
import itertools
import os
import sys
from pathlib import Path
from typing import Any, cast

from deuteron.collect import registry
from deuteron.collect.context import nvtx
from deuteron.collect.flags import flags
from deuteron.collect.flushing import FlushEvery, begin_flushing
from deuteron.collect.hook_manager import HookManager
from deuteron.collect.launch_hook import LaunchHook
from deuteron.collect.registry import SessionError
from deuteron.collect.scopes import enter_scope, exit_scope
from deuteron.collect.session import Session
from deuteron.collect.start_options import check_mode, data_format, disabled, hook_choice
from deuteron.model.tree import Profile
from deuteron.process.terminal import printable, say

# The registry holds these sessions typed by a protocol (it must not import Session): they are ours.
sessions = cast("dict[int, Session]", registry.sessions)
active = cast("list[Session]", registry.active)  # mutated in place; the scopes' hot path reads it
_next_id = 0
# `deuteron run`'s own session takes an id from a range of its own, so a program's sessions are
# numbered 0, 1, ... exactly as when it runs without Deuteron's command (Triton's tutorial 09 calls
# `activate(0)` meaning the session it started itself).
_command_ids = itertools.count(1 << 30)
_nvtx_sessions: set[int] = set()  # sessions that turned NVTX ranges into scopes

DEFAULT_PROFILE_NAME = "proton"  # Proton's default, so `import deuteron as proton` code finds its file


def start(
    name: str | None = None,
    *,
    context: str | None = "shadow",
    data: str | None = "tree",
    backend: str | None = None,
    mode: Any = None,
    hook: Any = None,
    command: list[str] | None = None,
) -> int | None:
    """Start a session and make it active; returns its id (None when profiling is disabled).

    Proton's signature and defaults: ``name`` (default ``proton``) is the file's path without its
    suffix; ``data="tree"`` writes ``NAME.hatchet`` at ``finalize()``, ``data="trace"``
    ``NAME.chrome_trace``; ``backend=None`` picks CUPTI on a usable NVIDIA GPU, else Triton's
    interpreter. The output file is checked now and its path fixed: a later ``chdir`` does not
    move it. Modes and hook objects Deuteron does not have yet are refused here, in one line."""
    fmt = data_format(data)
    flush_format = check_mode(mode, backend or "auto")
    return start_session(
        DEFAULT_PROFILE_NAME if name is None else name,
        backend=backend or "auto",
        mode=mode,
        context=context or "shadow",
        hook=hook,
        command=command,
        outputs=(fmt,),
        default_format=fmt,
        flush_format=flush_format,
        trace_shape="proton" if data == "trace" else "deuteron",
    )


def start_session(
    name: str | None,
    *,
    backend: str = "auto",
    context: str = "shadow",
    hook: Any = None,
    command: list[str] | None = None,
    outputs: tuple[str, ...] = (),
    for_command: bool = False,
    default_format: str = "hatchet",
    flush_format: str | None = None,
    trace_shape: str = "deuteron",
    mode: Any = None,
    flush_every: FlushEvery | None = None,
) -> int | None:
    """Open a session and make it active; the engine behind ``start()``, ``profile`` and
    ``deuteron run`` (``for_command``: the session is the command's own, numbered apart from the
    program's, so a program's ``activate(0)`` still means its first session; ``flush_every``:
    ``deuteron run --flush-every``, its stream opened before the program runs)."""
    global _next_id
    if disabled():
        return None
    word, own_hook = hook_choice(hook)
    with registry.lock:
        session_id = next(_command_ids) if for_command else _next_id
        session = Session(
            session_id,
            name or "deuteron",
            backend=backend,
            context=context,
            hook=word,
            command=command,
            outputs=outputs,
            default_format=default_format,
            flush_format=flush_format,
            trace_shape=trace_shape,
            mode=None if flush_format else mode,
        )
        if not for_command:
            _next_id += 1
        sessions[session_id] = session
        if for_command:
            registry.command_sessions.add(session_id)
            session.value_types.enforced = False  # it merges the program's sessions (scope_metrics)
    try:
        if flush_every is not None:
            if flush_format is not None:
                raise SessionError("--flush-every and periodic_flushing both flush: choose one")
            begin_flushing(session, flush_every)
        session.start_frameworks()
        session.backend.start(session)
    except BaseException:
        if session.flusher is not None:
            session.flusher.stop()
        if session.phases.stream is not None:
            session.phases.stream.close(remove=True)  # nothing ran: no stream left behind
        session.stop_frameworks()
        with registry.lock:
            sessions.pop(session_id, None)
        raise
    if word == "triton":
        HookManager.register(LaunchHook(), session_id)
    if own_hook is not None:
        HookManager.register(own_hook, session_id)
    flags.profiling_on = True
    if nvtx.enabled():
        nvtx.acquire(enter_scope, exit_scope)
        _nvtx_sessions.add(session_id)
    activate(session_id)
    return session_id


def _select(session: int | None) -> list[Session]:
    """The sessions a call names; None: all the program's own (not one ``deuteron run`` opened
    around it, which a program's bare ``deactivate()``/``finalize()`` must not end)."""
    if session is None:
        return [s for s in sessions.values() if s.id not in registry.command_sessions]
    if session == -1:  # what start() returned before it returned None when disabled
        return []
    try:
        return [sessions[session]]
    except KeyError:
        raise SessionError(
            f"Session has not been initialized: {session} (no session {session}; "
            f"open sessions: {sorted(sessions) or 'none'})"
        ) from None


def activate(session: int | None = None) -> None:
    for s in _select(session):
        HookManager.activate(s.id)
        if not s.active:
            s.active = True
            active.append(s)
            _tell_backend(s, True)


def deactivate(session: int | None = None, flushing: bool = False) -> None:
    """Stop recording into the session(s); their data stays until ``finalize``. ``flushing``: also
    gather what the GPU has recorded so far now (Proton's flag)."""
    for s in _select(session):
        HookManager.deactivate(s.id)
        if s.active:
            s.active = False
            active.remove(s)
            _tell_backend(s, False)
        if flushing and not s.finalized:
            s.backend.flush(s)


def _tell_backend(s: Session, active: bool) -> None:
    """Backends that record outside Python (CUPTI) must know when a session is paused."""
    if not s.finalized:
        s.backend.set_active(s, active)


def finalize(session: int | None = None, output_format: str | None = "") -> list[Path]:
    """Stop the session(s) and write their profiles; returns the files written.

    ``output_format`` is ``""`` (each session's own: ``hatchet`` for ``data="tree"``,
    ``chrome_trace`` for ``"trace"``), ``"hatchet"``, ``"chrome_trace"``, both comma-separated,
    or None to write nothing (the tree stays available through ``profile``). A session is closed
    even when its file cannot be written (OutputError then says why, once)."""
    written: list[Path] = []
    failure: BaseException | None = None
    for s in _select(session):
        registry.command_sessions.discard(s.id)
        if s.flusher is not None:
            s.flusher.stop()  # no flush from here on: the end is written below
        deactivate(s.id)
        HookManager.unregister(s.id)
        if s.id in _nvtx_sessions:
            _nvtx_sessions.discard(s.id)
            nvtx.release()
        try:
            try:
                try:
                    s.backend.stop(s)
                finally:
                    s.stop_frameworks()
            finally:  # whatever the backend collected is written even when stopping it failed
                s.finalized = True
                with registry.lock:
                    sessions.pop(s.id, None)
                if output_format is not None:
                    written.extend(s.write(output_format or s.phases.flush_format or s.default_format))
        except Exception as exc:  # every chosen session is still closed and written; then the first error
            failure = failure or exc
    flags.profiling_on = bool(sessions)
    if failure is not None:
        raise failure
    return written


def find(session: int) -> Session | None:
    """The open session with this id, or None."""
    return sessions.get(session)


def depth(session: int | None = 0) -> int | None:
    """The number of scopes the calling thread has open in ``session`` (None while no session
    records, as in Proton's ``context.depth``)."""
    if not active:
        return None
    for s in active:
        if session is None or s.id == session:
            return len(s.tree.shadow.stack()) - 1
    return None


def current_profile(session: int) -> Profile | None:
    s = sessions.get(session)
    return s.profile if s else None


def _detach_in_child() -> None:
    """A forked child (``os.fork``, a multiprocessing worker) inherits the parent's sessions; it must
    never write over the parent's profile nor add to a copy nobody reads. So in the child every
    session is closed without writing, and scopes there cost nothing, as outside any session."""
    for s in list(sessions.values()):
        s.active = False
        s.finalized = True
    sessions.clear()
    active.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_detach_in_child)


@atexit.register
def _finalize_forgotten() -> None:
    """A session left open at exit is written anyway: a profile is never lost silently."""
    for s in list(sessions.values()):
        try:
            files = finalize(s.id)
        except Exception as exc:  # the interpreter is shutting down; say what happened, do not raise
            say(f"deuteron: could not write session {s.name!r} at exit: {exc}")
            continue
        names = ", ".join(str(f) for f in files)
        print(
            printable(f"deuteron: session {s.name!r} was not finalized; wrote {names} at exit"),
            file=sys.stderr,
        )
