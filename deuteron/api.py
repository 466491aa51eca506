"""The public profiling API, shaped like Proton's so switching takes minutes.

Everything here is a cheap no-op while no session is active (and always, under
``DEUTERON_DISABLE=1``): the hot path is a check of one list.
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .collect.session import Session, SessionError, disabled
from .model.tree import Profile
from .render.text import printable, say

F = TypeVar("F", bound=Callable[..., Any])

_sessions: dict[int, Session] = {}
_active: list[Session] = []  # mutated in place; the hot path reads it
_lock = threading.Lock()
_next_id = 0
_now = time.perf_counter_ns
_open_scopes = threading.local()  # enter_scope/exit_scope bookkeeping: [(name, start_ns)]


def start(
    name: str | None = None,
    *,
    backend: str = "auto",
    context: str = "shadow",
    hook: str | None = None,
    command: list[str] | None = None,
) -> int:
    """Start a session and make it active; returns its id (-1 when Deuteron is disabled).

    ``NAME.hatchet`` is checked now (the folder exists and takes a file), and its path is fixed:
    a later ``chdir`` does not move it."""
    return _start(name, backend=backend, context=context, hook=hook, command=command, outputs=("hatchet",))


def _start(
    name: str | None,
    *,
    backend: str = "auto",
    context: str = "shadow",
    hook: str | None = None,
    command: list[str] | None = None,
    outputs: tuple[str, ...] = (),
) -> int:
    global _next_id
    if disabled():
        return -1
    with _lock:
        sid = _next_id
        session = Session(
            sid,
            name or "deuteron",
            backend=backend,
            context=context,
            hook=hook,
            command=command,
            outputs=outputs,
        )
        _next_id += 1
        _sessions[sid] = session
    try:
        session.backend.start(session)
    except BaseException:
        with _lock:
            _sessions.pop(sid, None)
        raise
    activate(sid)
    return sid


def _select(session: int | None) -> list[Session]:
    if session is None:
        return list(_sessions.values())
    if session == -1:
        return []
    try:
        return [_sessions[session]]
    except KeyError:
        raise SessionError(f"no session {session}; open sessions: {sorted(_sessions) or 'none'}") from None


def activate(session: int | None = None) -> None:
    for s in _select(session):
        if not s.active:
            s.active = True
            _active.append(s)
            _tell_backend(s, True)


def deactivate(session: int | None = None) -> None:
    for s in _select(session):
        if s.active:
            s.active = False
            _active.remove(s)
            _tell_backend(s, False)


def _tell_backend(s: Session, active: bool) -> None:
    """Backends that record outside Python (CUPTI) must know when a session is paused."""
    set_active = getattr(s.backend, "set_active", None)
    if set_active is not None and not s.finalized:
        set_active(s, active)


def finalize(session: int | None = None, output_format: str | None = "hatchet") -> list[Path]:
    """Stop the session(s) and write their profiles; returns the files written.

    ``output_format`` is ``"hatchet"``, ``"chrome_trace"``, both comma-separated, or None to
    write nothing (the tree stays available through ``profile``). A session is closed even when
    its file cannot be written (OutputError then says why, once)."""
    written: list[Path] = []
    for s in _select(session):
        deactivate(s.id)
        try:
            s.backend.stop(s)
        finally:  # whatever the backend collected is written even when stopping it failed
            s.finalized = True
            with _lock:
                _sessions.pop(s.id, None)
            if output_format:
                written.extend(s.write(output_format))
    return written


def current_profile(session: int) -> Profile | None:
    s = _sessions.get(session)
    return s.profile if s else None


class _Scope:
    """An open-able scope; ``scope()`` hands these out (see there)."""

    __slots__ = ("name", "metrics", "_start", "_sessions")

    def __init__(self, name: str, metrics: dict[str, Any] | None = None) -> None:
        self.name = name
        self.metrics = metrics
        self._sessions: tuple[Session, ...] = ()

    def __enter__(self) -> _Scope:
        if _active:
            self._sessions = sessions = tuple(_active)
            self._start = _now()
            for s in sessions:
                s.open_scope(self.name, self.metrics)
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        sessions = self._sessions
        if sessions:
            end = _now()
            for s in sessions:
                if not s.finalized:
                    s.close_scope(self.name, self._start, end, None)
            self._sessions = ()

    def __call__(self, func: F) -> F:
        name, metrics = self.name, self.metrics

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not _active:
                return func(*args, **kwargs)
            with _Scope(name, metrics):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class _IdleScope(_Scope):
    """What ``scope()`` returns while no session is active: entering and leaving do nothing.

    Shared per name (it holds no per-use state), so the idle path allocates nothing; as a
    decorator it still checks for a session at each call.
    """

    __slots__ = ()

    def __enter__(self) -> _Scope:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        return None


_idle: dict[str, _IdleScope] = {}
_IDLE_CACHE_LIMIT = 4096


def scope(name: str, metrics: dict[str, Any] | None = None) -> _Scope:
    """A named region, as a context manager or a decorator; ``metrics`` are added to its node.

    ``with deuteron.scope("train", metrics={"flops": 2 * M * N * K}): ...``
    """
    if _active:
        return _Scope(name, metrics)
    if metrics is None:
        try:
            return _idle[name]
        except KeyError:
            idle = _IdleScope(name)
            if len(_idle) < _IDLE_CACHE_LIMIT:
                _idle[name] = idle
            return idle
    return _IdleScope(name, metrics)


def enter_scope(name: str, *, metrics: dict[str, Any] | None = None) -> None:
    """Open a scope without a ``with`` block; close it with ``exit_scope`` on the same thread."""
    if not _active:
        return
    start_ns = _now()
    stack = _open_scopes.__dict__.setdefault("stack", [])
    stack.append((name, start_ns, tuple(_active)))
    for s in _active:
        s.open_scope(name, metrics)


def exit_scope(name: str | None = None, *, metrics: dict[str, Any] | None = None) -> None:
    stack = _open_scopes.__dict__.get("stack")
    if not stack:
        if _active:
            raise SessionError(f"exit_scope({name!r}) without a matching enter_scope on this thread")
        return
    opened, start_ns, sessions = stack[-1]
    if name is not None and name != opened:
        raise SessionError(f"exit_scope({name!r}) but the innermost open scope is {opened!r}")
    stack.pop()
    end = _now()
    for s in sessions:
        if not s.finalized:
            s.close_scope(opened, start_ns, end, metrics)


class state:
    """Tag kernels launched inside with a state; it shows as a frame below each kernel."""

    __slots__ = ("name", "_previous")

    def __init__(self, name: str) -> None:
        self.name = name
        self._previous: list[tuple[Session, str | None]] = []

    def __enter__(self) -> state:
        self._previous = []
        for s in _active:
            self._previous.append((s, s.state()))
            s.set_state(self.name)
        return self

    def __exit__(self, *exc: object) -> None:
        for s, prev in self._previous:
            s.set_state(prev)
        self._previous = []

    def __call__(self, func: F) -> F:
        name = self.name

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with state(name):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class profile:
    """Profile a block or a function and keep the tree in memory (for notebooks).

    ``with deuteron.profile() as p: ...`` then ``p.result`` is the Profile and ``p.show()``
    prints it. Pass ``output_format="hatchet"`` to also write ``<name>.hatchet``.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        backend: str = "auto",
        context: str = "shadow",
        hook: str | None = None,
        output_format: str | None = None,
    ) -> None:
        self.name = name
        self.options = {"backend": backend, "context": context, "hook": hook}
        self.output_format = output_format
        self.session = -1
        self.result: Profile | None = None
        self.files: list[Path] = []

    def __enter__(self) -> profile:
        outputs = tuple(f.strip() for f in (self.output_format or "").split(",") if f.strip())
        self.session = _start(self.name, outputs=outputs, **self.options)  # type: ignore[arg-type]
        self.result = current_profile(self.session)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.session != -1:
            self.files = finalize(self.session, self.output_format)

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def show(self, metrics: str = "time/ms", device: str | None = None, file: Any = None) -> None:
        """Print the tree as ``deuteron view -m METRICS [--device DEVICE]`` would."""
        if self.result is None:
            raise SessionError("nothing profiled yet (Deuteron disabled, or the block has not run)")
        from .render.console import render_profile
        from .viewer import columns_of

        view = columns_of(self.result, [m for m in metrics.split(",") if m.strip()], device=device)
        render_profile(view.tree, view.columns, file=file)


def _detach_in_child() -> None:
    """A forked child (``os.fork``, a multiprocessing worker) inherits the parent's sessions; it must
    never write over the parent's profile nor add to a copy nobody reads. So in the child every
    session is closed without writing, and scopes there cost nothing, as outside any session."""
    for s in list(_sessions.values()):
        s.active = False
        s.finalized = True
    _sessions.clear()
    _active.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_detach_in_child)


@atexit.register
def _finalize_forgotten() -> None:
    """A session left open at exit is written anyway: a profile is never lost silently."""
    for s in list(_sessions.values()):
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
