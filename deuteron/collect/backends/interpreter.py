"""The CPU backend: kernels run in Triton's interpreter and carry exact bytes and flops.

``time (ns)`` is the interpreter's wall time for the launch (a CPU time, not a GPU one);
``bytes`` counts global loads and stores of active lanes (masked-off lanes excluded; an
atomic counts its read and its write); ``flops`` counts ``tl.dot`` only, 2*M*N*K per dot
(batch included), also split by operand width as ``flops8|16|32|64`` so util can use the
matching peak. Elementwise arithmetic, reductions and ``tl.dot_scaled`` are not counted.
The events come from :mod:`deuteron.triton.interpreter.adapter`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from deuteron.collect.backends.port import SessionPort, benchmark_scope
from deuteron.collect.launch_hook import LaunchHook
from deuteron.model.metrics import BYTES, COUNT, FLOPS, TIME
from deuteron.triton import enable_interpreter_mode
from deuteron.triton.interpreter import adapter
from deuteron.triton.runtime import autotune

_sessions: list[SessionPort] = []


def launch_metrics(record: adapter.LaunchRecord) -> dict[str, Any]:
    metrics: dict[str, Any] = {
        COUNT: 1,
        TIME: record.end_ns - record.start_ns,
        BYTES: record.bytes_loaded + record.bytes_stored,
        "bytes_loaded": record.bytes_loaded,
        "bytes_stored": record.bytes_stored,
        FLOPS: sum(record.flops.values()),
        "programs": record.programs,
        "grid (pty)": "x".join(str(g) for g in record.grid),
        "device_id (pty)": "0",
        "device_type (pty)": "CPU",
    }
    for width, n in record.flops.items():
        metrics[f"{FLOPS}{width}"] = n
    return metrics


class _Hooked(threading.local):
    """The launch metadata Proton's launch hook read for this thread's launch in progress."""

    metadata: tuple[str, dict[str, Any]] | None = None


_hooked = _Hooked()


class _Listener:
    """Told by the launch hook (``hook="triton"``) the kernel's name and metrics just before an
    interpreted launch runs, and when it is over."""

    def launch_entered(self, name: str, metrics: dict[str, Any]) -> None:
        _hooked.metadata = (name, metrics)

    def launch_exited(self) -> None:
        _hooked.metadata = None


_LISTENER = _Listener()


def _dispatch(record: adapter.LaunchRecord) -> None:
    sessions = [s for s in _sessions if s.active]
    if not sessions:
        return
    name, metrics = record.kernel, launch_metrics(record)
    hooked = _hooked.metadata
    if hooked is not None:  # the launch hook's reading applies to every session, as in Proton (and CUPTI)
        name, metrics = hooked[0], {**metrics, **hooked[1]}
    for session in sessions:
        session.record_kernel(name, metrics, record.start_ns, record.end_ns)


_unfile: list[Callable[[], None]] = []  # undoes filing the autotuner's benchmarks under a scope


def _benchmark_scope() -> AbstractContextManager[None]:
    return benchmark_scope(_sessions)


class InterpreterBackend:
    """Triton's interpreter as a backend: each launch is reported, with its bytes and flops, from
    the launching thread as it runs; so nothing is ever pending (``flush``) and pausing a session
    needs no word to the backend (``set_active``): a paused session is simply not reported to."""

    name = "interpreter"

    def start(self, session: SessionPort) -> None:
        enable_interpreter_mode()
        adapter.install(_dispatch)
        if not _sessions:
            _unfile.append(autotune.file_benchmarks_under(_benchmark_scope))
        if session not in _sessions:
            _sessions.append(session)
        if session.hook == "triton":
            LaunchHook().subscribe(_LISTENER)

    def stop(self, session: SessionPort) -> None:
        if session in _sessions:
            _sessions.remove(session)
        if not any(s.hook == "triton" for s in _sessions):
            LaunchHook().unsubscribe(_LISTENER)
        if not _sessions:
            while _unfile:
                _unfile.pop()()
            adapter.uninstall()

    def flush(self, session: SessionPort) -> None:
        return None

    def set_active(self, session: SessionPort, active: bool) -> None:
        return None
