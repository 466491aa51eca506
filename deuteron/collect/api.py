"""The public profiling API, shaped like Proton's so switching takes minutes.

Everything here is a cheap no-op while no session is active (and always, under
``DEUTERON_DISABLE=1``): the hot path is a check of one list.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from deuteron.collect import registry
from deuteron.collect.context import nvtx
from deuteron.collect.flags import flags
from deuteron.collect.hook_manager import Hook, HookManager
from deuteron.collect.instrumentation_hook import InstrumentationHook
from deuteron.collect.launch_hook import LaunchHook
from deuteron.collect.modes import MODE_NAMES as INSTRUMENTATION_MODES
from deuteron.collect.modes import InstrumentationMode, sampling_interval
from deuteron.collect.output import OUTPUT_FORMATS
from deuteron.collect.scope_metrics import open_in
from deuteron.collect.session import Session, SessionError, disabled
from deuteron.model.tree import Profile
from deuteron.process.terminal import printable, say

F = TypeVar("F", bound=Callable[..., Any])

# The registry holds these sessions typed by a protocol (it must not import Session): they are ours.
_sessions = cast("dict[int, Session]", registry.sessions)
_active = cast("list[Session]", registry.active)  # mutated in place; the hot path reads it
_lock = registry.lock
_command_sessions = registry.command_sessions
_next_id = 0
# `deuteron run`'s own session takes an id from a range of its own, so a program's sessions are
# numbered 0, 1, ... exactly as when it runs without Deuteron's command (Triton's tutorial 09 calls
# `activate(0)` meaning the session it started itself).
_command_ids = itertools.count(1 << 30)
_now = time.perf_counter_ns
_open_scopes = threading.local()  # enter_scope/exit_scope bookkeeping: [(name, start_ns)]
_nvtx_sessions: set[int] = set()  # sessions that turned NVTX ranges into scopes


DEFAULT_PROFILE_NAME = "proton"  # Proton's default, so `import deuteron as proton` code finds its file
DATA_FORMATS = {"tree": "hatchet", "trace": "chrome_trace"}  # what finalize() writes by default


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
    fmt = _data_format(data)
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


def _data_format(data: str | None) -> str:
    fmt = DATA_FORMATS.get(data or "tree")
    if fmt is None:
        raise SessionError(f"unknown data {data!r}; choose one of: {', '.join(DATA_FORMATS)}")
    return fmt


PERIODIC_FLUSHING = "periodic_flushing"


def check_mode(mode: Any, backend: str = "auto") -> str | None:
    """The mode's flush format for ``periodic_flushing`` (each completed phase written to
    ``NAME.part_<phase>.<format>`` and dropped from memory), None for the default mode. The
    instrumentation backend checks its own modes, the CUPTI backend PC sampling's; any other mode
    is refused: a clear refusal beats a profile that silently lacks what was asked for."""
    if mode is None or mode == "":
        return None
    if "instrumentation" in str(backend):
        return None
    try:
        if sampling_interval(mode) is not None:
            return None  # PC sampling: the CUPTI backend takes it (backends.resolve)
    except ValueError as exc:
        raise SessionError(str(exc)) from None
    if isinstance(mode, InstrumentationMode) or (
        isinstance(mode, str) and mode.split(":", 1)[0] in INSTRUMENTATION_MODES
    ):
        raise SessionError(
            f"mode {str(mode).split(':', 1)[0]!r} instruments kernels: start with backend='instrumentation'"
            " (or 'cupti,instrumentation' for kernel times too)"
        )
    if isinstance(mode, str) and mode.split(":", 1)[0] == PERIODIC_FLUSHING:
        options = dict(_mode_option(part) for part in mode.split(":")[1:])
        unknown = set(options) - {"format"}
        if unknown:
            raise SessionError(f"unknown {PERIODIC_FLUSHING} option {sorted(unknown)[0]!r}; it takes format=")
        fmt = options.get("format", "hatchet")
        if fmt not in OUTPUT_FORMATS:
            choices = ", ".join(OUTPUT_FORMATS)
            raise SessionError(f"unknown {PERIODIC_FLUSHING} format {fmt!r}; choose one of: {choices}")
        return fmt
    text = str(mode).split(":", 1)[0] if isinstance(mode, str) else type(mode).__name__
    raise SessionError(
        f"mode {text!r} is not supported by Deuteron (the default mode, pcsampling and {PERIODIC_FLUSHING}); "
        "start without mode="
    )


def _mode_option(part: str) -> tuple[str, str]:
    key, sep, value = part.partition("=")
    if not sep:
        raise SessionError(f"malformed mode option {part!r}; write it as key=value")
    return key.strip(), value.strip()


def _hooks(hook: Any) -> tuple[str | None, Hook | None]:
    """A ``hook=`` argument as (the session's hook word, a program's own Hook to register).

    ``"triton"`` or a ``LaunchHook`` (ours or Proton's): launch metadata. Any other
    :class:`deuteron.hooks.Hook` is the program's own and is called around every launch. An
    instrumentation hook is refused in one line: Deuteron has no instrumentation yet."""
    if hook is None or hook == "":
        return None, None
    kind = type(hook).__name__
    if hook == "triton" or isinstance(hook, LaunchHook) or kind == "LaunchHook":
        return "triton", None
    if isinstance(hook, InstrumentationHook) or kind == "InstrumentationHook":
        raise SessionError(
            "an InstrumentationHook is made by the backend: "
            "start with backend='instrumentation' and mode=, not hook="
        )
    if isinstance(hook, Hook):
        return None, hook
    raise SessionError(f"unknown hook {hook!r}; choose None, 'triton' or a deuteron.hooks.Hook object")


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
) -> int | None:
    """Open a session and make it active; the engine behind ``start()``, ``profile`` and
    ``deuteron run`` (``for_command``: the session is the command's own, numbered apart from the
    program's, so a program's ``activate(0)`` still means its first session)."""
    global _next_id
    if disabled():
        return None
    word, own_hook = _hooks(hook)
    with _lock:
        sid = next(_command_ids) if for_command else _next_id
        session = Session(
            sid,
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
        _sessions[sid] = session
        if for_command:
            _command_sessions.add(sid)
            session.value_types.enforced = False  # it merges the program's sessions (scope_metrics)
    try:
        session.start_frameworks()
        session.backend.start(session)
    except BaseException:
        session.stop_frameworks()
        with _lock:
            _sessions.pop(sid, None)
        raise
    if word == "triton":
        HookManager.register(LaunchHook(), sid)
    if own_hook is not None:
        HookManager.register(own_hook, sid)
    flags.profiling_on = True
    if nvtx.enabled():
        nvtx.acquire(enter_scope, exit_scope)
        _nvtx_sessions.add(sid)
    activate(sid)
    return sid


def _select(session: int | None) -> list[Session]:
    """The sessions a call names; None: all the program's own (not one ``deuteron run`` opened
    around it, which a program's bare ``deactivate()``/``finalize()`` must not end)."""
    if session is None:
        return [s for s in _sessions.values() if s.id not in _command_sessions]
    if session == -1:  # what start() returned before it returned None when disabled
        return []
    try:
        return [_sessions[session]]
    except KeyError:
        raise SessionError(
            f"Session has not been initialized: {session} (no session {session}; "
            f"open sessions: {sorted(_sessions) or 'none'})"
        ) from None


def activate(session: int | None = None) -> None:
    for s in _select(session):
        HookManager.activate(s.id)
        if not s.active:
            s.active = True
            _active.append(s)
            _tell_backend(s, True)


def deactivate(session: int | None = None, flushing: bool = False) -> None:
    """Stop recording into the session(s); their data stays until ``finalize``. ``flushing``: also
    gather what the GPU has recorded so far now (Proton's flag)."""
    for s in _select(session):
        HookManager.deactivate(s.id)
        if s.active:
            s.active = False
            _active.remove(s)
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
        _command_sessions.discard(s.id)
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
                with _lock:
                    _sessions.pop(s.id, None)
                if output_format is not None:
                    written.extend(s.write(output_format or s.flush_format or s.default_format))
        except Exception as exc:  # every chosen session is still closed and written; then the first error
            failure = failure or exc
    flags.profiling_on = bool(_sessions)
    if failure is not None:
        raise failure
    return written


def find(session: int) -> Session | None:
    """The open session with this id (Proton's ``data`` functions name sessions by id)."""
    return _sessions.get(session)


def depth(session: int | None = 0) -> int | None:
    """The number of scopes the calling thread has open in ``session`` (None while no session
    records, as in Proton's ``context.depth``)."""
    if not _active:
        return None
    for s in _active:
        if session is None or s.id == session:
            return len(s.shadow.stack()) - 1
    return None


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


def enter_scope(name: str, *, metrics: dict[str, Any] | None = None) -> int | None:
    """Open a scope without a ``with`` block; close it with ``exit_scope`` on the same thread.
    Returns the scope's id, or None while no session records (as Proton does)."""
    if not _active:
        return None
    sid = next(_scope_ids)
    start_ns = _now()
    sessions = tuple(_active)
    open_in(sessions, name, metrics)  # refused: nothing was opened, so nothing is left to close
    _open_scopes.__dict__.setdefault("stack", []).append((name, start_ns, sessions, sid))
    return sid


def exit_scope(name: str | None = None, *, metrics: dict[str, Any] | None = None) -> int | None:
    """Close the innermost scope ``enter_scope`` opened on this thread; returns its id."""
    stack = _open_scopes.__dict__.get("stack")
    if not stack:
        if _active:
            raise SessionError(f"exit_scope({name!r}) without a matching enter_scope on this thread")
        return None
    opened, start_ns, sessions, sid = stack[-1]
    if name and name != opened:
        raise SessionError(f"exit_scope({name!r}) but the innermost open scope is {opened!r}")
    stack.pop()
    end = _now()
    for s in sessions:
        if not s.finalized:
            s.close_scope(opened, start_ns, end, metrics)
    return int(sid)


def cpu_timed_scope(name: str, metrics: dict[str, Any] | None = None) -> _Scope:
    """Proton's scope that also records its CPU time on its node (``cpu_time (ns)``, exclusive);
    a plain scope's time is only in the trace, as in Proton."""
    if metrics and "cpu_time" in metrics:
        raise SessionError("the metric name 'cpu_time' is reserved")
    return _TimedScope(name, metrics)  # entering it outside a session does nothing


class profile:
    """Profile a block or a function.

    As a context manager (for notebooks): ``with deuteron.profile() as p: ...`` then ``p.result``
    is the Profile and ``p.show()`` prints it; ``output_format="hatchet"`` also writes the file.

    As Proton's decorator, bare (``@deuteron.profile``) or with Proton's options
    (``@deuteron.profile(name="run", context="python")``): each call starts a session (once) and
    deactivates it when the function returns; ``finalize()`` writes it, as in Proton.
    """

    def __init__(
        self,
        func: Any = None,
        *,
        name: str | None = None,
        backend: str | None = "auto",
        context: str | None = "shadow",
        data: str | None = "tree",
        mode: Any = None,
        hook: Any = None,
        output_format: str | None = None,
    ) -> None:
        if isinstance(func, str):  # deuteron.profile("name", ...): the name, given by position
            func, name = None, func
        self.name = name
        _hooks(hook)  # a bad hook is refused where it is written, not at the first call
        self.options = {
            "backend": backend or "auto",
            "context": context or "shadow",
            "hook": hook,
        }
        self.data, self.mode = data, mode
        self.output_format = output_format
        self.session: int | None = None
        self.result: Profile | None = None
        self.files: list[Path] = []
        self._func: Callable[..., Any] | None = None
        if func is not None:
            self._wrap(func)

    def __enter__(self) -> profile:
        flush_format = check_mode(self.mode, str(self.options["backend"]))
        _data_format(self.data)
        outputs = tuple(f.strip() for f in (self.output_format or "").split(",") if f.strip())
        self.session = start_session(
            self.name, outputs=outputs, flush_format=flush_format, mode=self.mode, **self.options  # type: ignore[arg-type]
        )  # type: ignore[arg-type]
        self.result = current_profile(self.session) if self.session is not None else None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.session is not None:
            self.files = finalize(self.session, self.output_format)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._func is not None:  # the bare decorator's wrapped function, being called
            return self._call(*args, **kwargs)
        (func,) = args
        return profile(
            func,
            name=self.name,
            data=self.data,
            mode=self.mode,
            output_format=self.output_format,
            **self.options,
        )

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        """A decorated method binds to its instance, as a function would."""
        return self if obj is None or self._func is None else types.MethodType(self, obj)

    def _wrap(self, func: Callable[..., Any]) -> None:
        self._func = func
        functools.update_wrapper(self, func)  # type: ignore[arg-type]

    def _call(self, *args: Any, **kwargs: Any) -> Any:
        """Proton's decorator: the session starts with the first call and is made active for each
        call; it is written by ``finalize()`` (or at exit), not when the function returns."""
        if self.session is None or self.session not in _sessions:
            self.session = start(self.name, data=self.data, mode=self.mode, **self.options)  # type: ignore[arg-type]
            self.result = current_profile(self.session) if self.session is not None else None
        else:
            activate(self.session)
        assert self._func is not None
        try:
            return self._func(*args, **kwargs)
        finally:
            if self.session is not None and self.session in _sessions:
                deactivate(self.session)

    def _repr_html_(self) -> str | None:
        """In a notebook: the profile as the web UI's flame graph and tree table, inline."""
        if self.result is None:
            return None
        from deuteron.render.notebook import profile_html

        return profile_html(self.result, self.name or "profile")

    def show(self, metrics: str = "time/ms", device: str | None = None, file: Any = None) -> None:
        """Print the tree as ``deuteron view -m METRICS [--device DEVICE]`` would."""
        if self.result is None:
            raise SessionError("nothing profiled yet (Deuteron disabled, or the block has not run)")
        from deuteron.render.console import render_profile
        from deuteron.view.build import columns_of

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
