"""Proton's scopes, on the hot path: ``scope``, ``cpu_timed_scope``, ``enter_scope``/``exit_scope``.

Everything here is a cheap no-op while no session is active (and always, under
``DEUTERON_DISABLE=1``): the check is of one list (:data:`deuteron.collect.registry.active`), and
``scope()`` outside a session hands out a shared idle scope per name, so the idle path allocates
nothing. Inside a session a scope costs a few attribute reads and one call into each active
session's tree builder (``benchmarks/scope_overhead.py`` measures it).
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from deuteron.collect import registry
from deuteron.collect.registry import SessionError
from deuteron.collect.scope_metrics import merged, open_in
from deuteron.collect.session import Session

F = TypeVar("F", bound=Callable[..., Any])

_active = cast("list[Session]", registry.active)  # mutated in place, never rebound: read here on every scope
_now = time.perf_counter_ns
_open_scopes = threading.local()  # enter_scope/exit_scope bookkeeping: [(name, start_ns, sessions, scope id)]


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
            if len(sessions) == 1:  # the common case, without open_in's rollback to arrange
                sessions[0].open_scope(self.name, self.metrics)
            else:
                open_in(sessions, self.name, self.metrics)
        return self

    timed = False  # a cpu_timed_scope records its CPU time on its node

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        sessions = self._sessions
        if sessions:
            end = _now()
            for s in sessions:
                if not s.finalized:
                    s.close_scope(self.name, self._start, end, None, self.timed)
            self._sessions = ()

    def __call__(self, func: F) -> F:
        name, metrics = self.name, self.metrics

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not _active:
                return func(*args, **kwargs)
            with (_TimedScope if self.timed else _Scope)(name, metrics):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class _TimedScope(_Scope):
    """Proton's ``cpu_timed_scope``: a scope that also records its own CPU time as a metric."""

    __slots__ = ()
    timed = True


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


_scope_ids = itertools.count()  # Proton hands each entered scope an id (next() is atomic in CPython)


def new_scope_id() -> int:
    """A fresh scope id, one more than the last (Proton's ``libproton.record_scope``)."""
    return next(_scope_ids)


def enter_scope(name: str, *, metrics: dict[str, Any] | None = None) -> int | None:
    """Open a scope without a ``with`` block; close it with ``exit_scope`` on the same thread.
    Returns the scope's id, or None while no session records (as Proton does)."""
    if not _active:
        return None
    scope_id = next(_scope_ids)
    enter_scope_with_id(scope_id, name, metrics)
    return scope_id


def enter_scope_with_id(scope_id: int, name: str, metrics: dict[str, Any] | None = None) -> None:
    """``enter_scope`` with an id the caller took (``new_scope_id``): Proton's
    ``libproton.enter_scope(id, name)``. Nothing happens while no session records."""
    if not _active:
        return
    start_ns = _now()
    sessions = tuple(_active)
    open_in(sessions, name, metrics)  # refused: nothing was opened, so nothing is left to close
    _open_scopes.__dict__.setdefault("stack", []).append((name, start_ns, sessions, scope_id))


def add_scope_metrics(scope_id: int, metrics: dict[str, Any]) -> None:
    """Metrics for a scope this thread has open (Proton's ``libproton.add_metrics``): checked
    now, added to its node when it closes, with those ``exit_scope`` is given. A scope not open
    here (none is while no session records) is left alone, as in Proton."""
    stack = _open_scopes.__dict__.get("stack") or ()
    entry = next((e for e in stack if e[3] == scope_id), None)
    if entry is None:
        return
    for s in entry[2]:
        s.value_types.check(metrics)  # refused now, in Proton's words, not at the close
    pending = _open_scopes.__dict__.setdefault("pending", {})
    pending[scope_id] = merged(pending.get(scope_id), metrics)


def exit_scope(name: str | None = None, *, metrics: dict[str, Any] | None = None) -> int | None:
    """Close the innermost scope ``enter_scope`` opened on this thread; returns its id."""
    stack = _open_scopes.__dict__.get("stack")
    if not stack:
        if _active:
            raise SessionError(f"exit_scope({name!r}) without a matching enter_scope on this thread")
        return None
    opened, start_ns, sessions, scope_id = stack[-1]
    if name and name != opened:
        raise SessionError(f"exit_scope({name!r}) but the innermost open scope is {opened!r}")
    stack.pop()
    pending = _open_scopes.__dict__.get("pending")
    if pending and scope_id in pending:
        metrics = merged(pending.pop(scope_id), metrics or {})
    end = _now()
    for s in sessions:
        if not s.finalized:
            s.close_scope(opened, start_ns, end, metrics)
    return int(scope_id)


def exit_scope_with_id(scope_id: int, name: str) -> None:
    """Proton's ``libproton.exit_scope(id, name)``: close the scope ``enter_scope_with_id`` opened
    (the innermost one this thread has open); nothing while none is open."""
    stack = _open_scopes.__dict__.get("stack")
    if not stack:
        return
    if stack[-1][3] != scope_id:
        raise SessionError(f"exit_scope({scope_id}, {name!r}) but the innermost open scope is {stack[-1][3]}")
    exit_scope(name)


def cpu_timed_scope(name: str, metrics: dict[str, Any] | None = None) -> _Scope:
    """Proton's scope that also records its CPU time on its node (``cpu_time (ns)``, exclusive);
    a plain scope's time is only in the trace, as in Proton."""
    if metrics and "cpu_time" in metrics:
        raise SessionError("the metric name 'cpu_time' is reserved")
    return _TimedScope(name, metrics)  # entering it outside a session does nothing
