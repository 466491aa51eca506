"""The CPU backend: kernels run in Triton's interpreter and carry exact bytes and flops.

``time (ns)`` is the interpreter's wall time for the launch (a CPU time, not a GPU one);
``bytes`` counts global loads and stores of active lanes (masked-off lanes excluded; an
atomic counts its read and its write); ``flops`` counts ``tl.dot`` only, 2*M*N*K per dot
(batch included), also split by operand width as ``flops8|16|32|64`` so util can use the
matching peak. Elementwise arithmetic, reductions and ``tl.dot_scaled`` are not counted.
The events come from :mod:`deuteron.triton.interpreter.adapter`.

A kernel's ``pl.scope``s (timed per program by :mod:`deuteron.triton.interpreter.scopes`) become
its children, nested as in the kernel: each with its *own* interpreter time, bytes and flops (its
nested scopes' taken out) summed over programs, and the kernel keeps only what no scope covered,
so its inclusive values stay the launch's totals. Each scope instance is also a span of the trace,
on a lane per program.
"""

from __future__ import annotations

import numbers
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

import numpy as np

from deuteron.collect.backends.port import InterpretedKernel, Recorder, benchmark_scope
from deuteron.collect.launch_hook import LaunchHook
from deuteron.model.intra import INSTANCES, IntraSpans, ScopeRow
from deuteron.model.metrics import BYTES, COUNT, FLOPS, TIME
from deuteron.triton import enable_interpreter_mode
from deuteron.triton.interpreter import adapter
from deuteron.triton.runtime import autotune

_sessions: list[Recorder] = []


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


Scoped = tuple[list[ScopeRow], IntraSpans, dict[str, int]]


def scope_records(record: adapter.LaunchRecord, kernel: str) -> Scoped:
    """A launch's scopes as the session takes them: one row per scope path (see the module), the
    spans of every instance, and the totals the rows carry (what the kernel's own metrics lose)."""
    inst = record.scopes
    assert inst is not None
    dur = inst.end - inst.start
    own: dict[str, np.ndarray] = {TIME: inst.own(dur), "bytes_loaded": inst.own(inst.loaded)}
    own["bytes_stored"] = inst.own(inst.stored)
    own[BYTES] = own["bytes_loaded"] + own["bytes_stored"]
    own[FLOPS] = np.zeros(len(inst), np.int64)
    for width, values in inst.flops.items():
        own[f"{FLOPS}{width}"] = inst.own(values)
        own[FLOPS] += own[f"{FLOPS}{width}"]
    paths = inst.paths()
    order = {path: at for at, path in enumerate(dict.fromkeys(paths))}  # each path once, as first started
    which = np.array([order[p] for p in paths], np.int64)
    rows: list[ScopeRow] = []
    for path, at in order.items():
        mine = which == at
        programs, inverse = np.unique(inst.program[mine], return_inverse=True)
        per_program = np.zeros(len(programs), np.int64)  # each program's time in it, nested scopes too
        np.add.at(per_program, inverse, dur[mine])
        median = float(np.median(per_program))
        metrics: dict[str, Any] = {key: int(values[mine].sum()) for key, values in own.items()}
        metrics.update(
            {
                INSTANCES: int(mine.sum()),
                "scope programs (exc)": len(programs),
                "time min (pty)": int(per_program.min()),
                "time median (pty)": median,
                "time max (pty)": int(per_program.max()),
                "imbalance (pty)": round(float(per_program.max()) / median, 3) if median > 0 else 1.0,
                "measured (pty)": "interpreter",
            }
        )
        rows.append(ScopeRow(path, metrics))
    n = len(inst)
    spans = IntraSpans(
        kernel,
        list(inst.names),
        inst.program.copy(),
        np.full(n, -1, np.int64),
        np.zeros(n, np.int64),
        inst.name.copy(),
        inst.start.copy(),
        inst.end.copy(),
        unit_label="program",
    )
    totals = {key: int(values.sum()) for key, values in own.items()}
    return rows, spans, totals


def _take_scopes(
    metrics: dict[str, Any], hooked: dict[str, Any], rows: list[ScopeRow], totals: dict[str, int]
) -> None:
    """Leave the kernel what no scope covered, so its inclusive values stay the launch's. A metric
    the launch hook set is the hook's: a number loses the scopes' share like the counted ones; a
    value known later (a device tensor) cannot, so the rows leave that metric out instead."""
    for key, total in totals.items():
        value = metrics.get(key)
        if key in hooked and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
            for row in rows:
                row.metrics.pop(key, None)
        elif value is not None:
            metrics[key] = value - total


class _Tally:
    """What a session's interpreted scopes came to, for the file's metadata: how many instances
    were recorded, and the edges that did not pair (counted, never raised)."""

    def __init__(self) -> None:
        self.instances = 0
        self.unmatched_enters = 0
        self.unmatched_exits = 0
        self.kernels: list[str] = []  # the first kernels with unmatched edges

    def add(self, record: adapter.LaunchRecord, kernel: str) -> None:
        inst = record.scopes
        if inst is None:
            return
        self.instances += len(inst)
        self.unmatched_enters += inst.unmatched_enters
        self.unmatched_exits += inst.unmatched_exits
        unmatched = inst.unmatched_enters or inst.unmatched_exits
        if unmatched and kernel not in self.kernels and len(self.kernels) < 5:
            self.kernels.append(kernel)

    def summary(self) -> dict[str, Any]:
        return {
            "instances": self.instances,
            "unmatched_enters": self.unmatched_enters,
            "unmatched_exits": self.unmatched_exits,
            "kernels_with_unmatched": list(self.kernels),
            "time_from": "time.perf_counter_ns in Triton's interpreter (CPU time per program, not GPU time)",
        }


_tallies: dict[int, _Tally] = {}  # session id -> its scopes' tally, once a launch used a scope


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
    if record.scopes is None:
        for session in sessions:
            session.record_kernel(InterpretedKernel(name, metrics, record.start_ns, record.end_ns))
        return
    rows, spans, totals = scope_records(record, name) if len(record.scopes) else ([], None, {})
    _take_scopes(metrics, hooked[1] if hooked is not None else {}, rows, totals)
    for session in sessions:
        _tallies.setdefault(session.setup.session_id, _Tally()).add(record, name)
        intra = replace(spans) if spans is not None else None  # each session's spans name its own node
        session.record_kernel(InterpretedKernel(name, metrics, record.start_ns, record.end_ns, rows, intra))


_unfile: list[Callable[[], None]] = []  # undoes filing the autotuner's benchmarks under a scope


def _benchmark_scope() -> AbstractContextManager[None]:
    return benchmark_scope(_sessions)


class InterpreterBackend:
    """Triton's interpreter as a backend: each launch is reported, with its bytes and flops, from
    the launching thread as it runs; so nothing is ever pending (``flush``) and pausing a session
    needs no word to the backend (``set_active``): a paused session is simply not reported to."""

    name = "interpreter"

    def start(self, session: Recorder) -> None:
        enable_interpreter_mode()
        adapter.install(_dispatch)
        if not _sessions:
            _unfile.append(autotune.file_benchmarks_under(_benchmark_scope))
        if session not in _sessions:
            _sessions.append(session)
        if session.setup.hook == "triton":
            LaunchHook().subscribe(_LISTENER)

    def stop(self, session: Recorder) -> None:
        tally = _tallies.pop(session.setup.session_id, None)
        if tally is not None:
            session.note(interpreter_scopes=tally.summary())
        if session in _sessions:
            _sessions.remove(session)
        if not any(s.setup.hook == "triton" for s in _sessions):
            LaunchHook().unsubscribe(_LISTENER)
        if not _sessions:
            while _unfile:
                _unfile.pop()()
            adapter.uninstall()

    def flush(self, session: Recorder) -> None:
        return None

    def set_active(self, session: Recorder, active: bool) -> None:
        return None
