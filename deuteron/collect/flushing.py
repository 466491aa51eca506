"""``deuteron run --flush-every``: a long run's profile appended to disk while it runs.

A training job of hours or a serving process that is killed (SIGKILL gives no chance to write)
must keep what it recorded. So every so many seconds, or at the end of every so many steps, the
session's current phase is closed and appended to ``NAME.hatchet_stream``
(:mod:`deuteron.formats.profile_stream`) and dropped from memory: memory stays that of one stretch
(the tree's frames, which repeat, plus the stretch's trace spans), and a kill loses at most the
stretch under way. A run that ends writes its ``NAME.hatchet`` from the stream as usual.

What a step is: the end of a scope named ``step`` (``deuteron.scope("step")``, Proton's scope), or,
in a program that opens none, each ``optimizer.step()`` of torch (its global post hook, put in
place once the program has imported ``torch.optim``). Step flushes happen on the program's thread
at the step's end, so each record holds whole steps; time flushes happen on a thread of their own.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from deuteron.collect import collectives, output
from deuteron.collect.phases import Phases
from deuteron.collect.registry import SessionError
from deuteron.collect.trace_buffer import TraceBuffer
from deuteron.collect.tree_builder import TreeBuilder
from deuteron.formats import profile_stream
from deuteron.formats.files import OutputError, atomic_open, check_writable
from deuteron.model.trace import TraceEvent
from deuteron.model.tree import Profile
from deuteron.process.signals import Deferred

STREAM_FORMAT = profile_stream.SUFFIX.lstrip(".")  # NAME.hatchet_stream

_SPEC = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|sec|secs|seconds?|m|min|minutes?|h|hours?|steps?)?\s*$")
_SECONDS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60}
_SECONDS.update({"minute": 60, "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600})
MIN_SECONDS = 0.1  # a flush costs a tree's size: more often than this is a mistake, not a wish
POLL_SECONDS = 0.2  # how often the flushing thread looks for torch.optim and the clock


@dataclass(frozen=True)
class FlushEvery:
    """How often to flush: every ``seconds``, or every ``steps`` steps (one of them set)."""

    seconds: float | None = None
    steps: int | None = None

    def __str__(self) -> str:
        if self.steps is not None:
            return f"{self.steps} step" + ("s" if self.steps != 1 else "")
        return f"{self.seconds:g} s"


def parse_every(text: str) -> FlushEvery:
    """``30``, ``30s``, ``5m``, ``1h`` (seconds) or ``100steps`` / ``1 step``; ValueError says what
    it takes, in one line."""
    match = _SPEC.match(text)
    if not match:
        raise ValueError(f"--flush-every takes seconds (30, 30s, 5m, 1h) or steps (100steps), not {text!r}")
    number, unit = float(match.group(1)), (match.group(2) or "s")
    if unit.startswith("step"):
        if number != int(number) or number < 1:
            raise ValueError(f"--flush-every counts whole steps, at least 1, not {text!r}")
        return FlushEvery(steps=int(number))
    seconds = number * _SECONDS[unit]
    if seconds < MIN_SECONDS:
        raise ValueError(f"--flush-every {text!r} is under {MIN_SECONDS} s; flush less often")
    return FlushEvery(seconds=seconds)


class Flusher:
    """Calls ``flush`` (the session's phase advance into its stream) as ``every`` asks, until
    :meth:`stop`. ``step_ended`` is what the tree builder calls when a ``step`` scope closes."""

    def __init__(self, every: FlushEvery, flush: Callable[[], Any]) -> None:
        self.every = every
        self._flush = flush
        self._lock = threading.Lock()  # one flush at a time: the clock's and a step's never overlap
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._scope_steps = 0
        self._optimizer_steps = 0
        self._seen_scope_step = False  # once a step scope is seen, optimizer steps no longer count
        self._hook: Any = None
        self.flushes = 0
        self.seconds_spent = 0.0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="deuteron-flush", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """No flush after this returns (the session writes its end itself)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        with self._lock:  # a step's flush under way on another thread ends first
            pass

    def step_ended(self) -> None:
        """A ``step`` scope closed (on the program's thread)."""
        self._seen_scope_step = True
        self._scope_steps += 1
        self._step_flush(self._scope_steps)

    def _optimizer_step(self, *_: Any) -> None:
        if self._seen_scope_step:
            return
        self._optimizer_steps += 1
        self._step_flush(self._optimizer_steps)

    def _step_flush(self, count: int) -> None:
        steps = self.every.steps
        if steps is not None and count % steps == 0 and not self._stop.is_set():
            self.flush()

    def flush(self) -> None:
        with self._lock:
            if self._stop.is_set() and threading.current_thread() is self._thread:
                return
            began = time.perf_counter()
            self._flush()
            self.seconds_spent += time.perf_counter() - began
            self.flushes += 1

    def _run(self) -> None:
        """The clock (seconds) or the watch for torch's optimizer (steps)."""
        every = self.every.seconds
        due = time.monotonic() + every if every is not None else None
        while not self._stop.wait(self._wait(due)):
            if due is not None:
                if time.monotonic() >= due:
                    self.flush()
                    due = time.monotonic() + every  # type: ignore[operator]
            elif self._hook is None:
                self._watch_optimizer()

    @staticmethod
    def _wait(due: float | None) -> float:
        """Seconds to sleep: a poll's, or less when the next flush is due sooner."""
        return POLL_SECONDS if due is None else max(0.0, min(POLL_SECONDS, due - time.monotonic()))

    def _watch_optimizer(self) -> None:
        """Once the program has imported torch.optim, count its optimizers' steps."""
        optim = sys.modules.get("torch.optim.optimizer")
        register = getattr(optim, "register_optimizer_step_post_hook", None)
        if register is not None:
            self._hook = register(self._optimizer_step)


class FlushingSession(Protocol):
    """What flushing uses of a session (a protocol: the session module imports this one)."""

    base: Path
    outputs: tuple[str, ...]
    profile: Profile
    phases: Phases
    tree: TreeBuilder
    lock: threading.Lock
    trace: TraceBuffer
    flusher: Flusher | None

    def advance_phase(self) -> int: ...

    def trace_events(self) -> tuple[list[TraceEvent], dict[int, str]]: ...


def begin_flushing(session: FlushingSession, every: FlushEvery) -> None:
    """Open the run's stream (checked writable first: SessionError says why not) and start
    flushing into it."""
    path = output.paths(session.base, [STREAM_FORMAT])[0]
    try:
        check_writable(path)
    except OutputError as exc:
        raise SessionError(f"cannot write the profile stream: {exc}") from None
    session.phases.stream = profile_stream.StreamWriter(path, dict(session.profile.metadata))
    if "chrome_trace" in session.outputs:
        metadata = session.profile.metadata
        session.phases.stream_trace = lambda events, names: output.trace_text(events, names, metadata)
    flusher = session.flusher = Flusher(every, session.advance_phase)
    session.tree.on_step = flusher.step_ended
    flusher.start()


def write_whole(session: FlushingSession, formats: list[str], base: Path) -> list[Path]:
    """At the run's end: the last stretch appended, the whole run read back from the stream and
    written as a run without flushing writes it, then the stream removed (kept if writing failed).
    The session's live profile becomes that whole run, as it would be without flushing."""
    stream = session.phases.stream
    assert stream is not None and session.flusher is not None
    session.flusher.stop()
    with session.lock:
        session.phases.append_to_stream(stream, session.trace, session.trace_events)
        session.phases.restart()
    stream.close()
    flushed = profile_stream.read(stream.path)
    whole = flushed.profile()
    whole.metadata = {
        **session.profile.metadata,
        "end_time": time.time(),
        "dropped_trace_events": session.trace.dropped,
        **collectives.read(),
        "flushes": {
            "every": str(session.flusher.every),
            "records": len(flushed.flushes),
            "seconds_spent": round(session.flusher.seconds_spent, 6),
        },
    }
    tree_formats = [f for f in formats if f != "chrome_trace"]
    written = output.write(whole, tree_formats, base, session.trace_events) if tree_formats else []
    if "chrome_trace" in formats:  # phase by phase from the stream: never the whole trace in memory
        target = output.paths(base, ["chrome_trace"])[0]
        with Deferred(note="finishing the profile first"), atomic_open(target, "w") as out:
            profile_stream.write_combined_trace(stream.path, out)
        written.append(target)
    stream.close(remove=True)
    session.profile.root, session.profile.kinds = whole.root, whole.kinds
    return written
