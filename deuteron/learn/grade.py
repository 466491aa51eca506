"""Check a learner's kernel against an exercise: every case under ``deuteron.check``, the outputs
against the torch reference, each case passing only with right outputs and no finding at
warning or worse.

Everything runs in this process (torch and triton are imported once, and the interpreter is the
only cost left): a case is a few launches on shapes of tens to hundreds of elements. A kernel
that spins on a lock is stopped by the checker's lock finding; one that never ends otherwise is
stopped by a timer (``timeout`` seconds per case, on the main thread).
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deuteron.learn.catalog import Case, Exercise, Tensors
from deuteron.learn.errors import LearnError
from deuteron.learn.loader import describe, load_kernel
from deuteron.model.finding import Finding
from deuteron.process.terminal import short_path

DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 86400.0  # a day: more is no limit, and the timer refuses what it cannot hold
TIMED_OUT = "stopped after"


class KernelTimeout(BaseException):  # noqa: N818 - a control-flow signal; BaseException so no except Exception in Triton's interpreter swallows it
    """Raised by the timer inside a launch that ran past its time."""


@dataclass
class CaseResult:
    """One shape's verdict: ``wrong`` has a line per output that differs from the reference,
    ``error`` one line when the launch raised or was stopped, ``findings`` the checker's."""

    case: Case
    findings: list[Finding] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    timed_out: bool = False

    @property
    def failing(self) -> list[Finding]:
        return [f for f in self.findings if f.severity in ("error", "warning")]

    @property
    def passed(self) -> bool:
        return not self.wrong and not self.error and not self.failing


@dataclass
class Grade:
    """A whole check of one exercise: every case, the file checked, what was written."""

    exercise: Exercise
    path: str
    cases: list[CaseResult]
    seconds: float
    solution: bool = False  # the reference solution was checked, not a learner's file
    written: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # lines to show after the verdict

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases)

    def __repr__(self) -> str:
        good = sum(c.passed for c in self.cases)
        return f"<deuteron.learn Grade {self.exercise.name}: {good} of {len(self.cases)} shapes pass>"


def prepare() -> None:
    """Kernels loaded from now on run in Triton's interpreter (the learner's and the reference)."""
    from deuteron.triton import enable_interpreter_mode

    with warnings.catch_warnings():
        # "triton was imported before": true in a notebook, and harmless here, since every kernel
        # checked is defined after this point, from its file.
        warnings.simplefilter("ignore")
        enable_interpreter_mode()


def grade(
    exercise: Exercise,
    path: str | Path | None,
    *,
    record: str | Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Grade:
    """Check the kernel in ``path`` (None: the reference solution) on every case; with ``record``
    (a folder) also write access records of it and of the reference for ``deuteron serve``; a
    kernel that did not finish a shape is not recorded (it would wait as long again on each)."""
    if not 0 < timeout <= MAX_TIMEOUT:  # also false for nan
        raise LearnError(
            f"--timeout must be more than 0 seconds and at most {MAX_TIMEOUT:g} (not {timeout!r})"
        )
    prepare()
    import torch  # noqa: F401 - imported before the clock starts: the verdict's time is the check's own

    started = time.perf_counter()
    solution = path is None
    file = str(exercise.solution_path if path is None else Path(path))
    with deadline(timeout, "loading the file"):
        kernel = load_kernel(file, exercise.kernel)
    results: list[CaseResult] = []
    for i, c in enumerate(exercise.cases):
        if any(r.timed_out for r in results):  # each would wait as long again
            results.append(CaseResult(c, error="not run: the shape before did not finish"))
        else:
            results.append(run_case(exercise, kernel, c, i, timeout, file))
    # The verdict's time is the check's own: recording runs the kernels again.
    result = Grade(exercise, file, results, time.perf_counter() - started, solution)
    if record is not None:
        stopped = next((r for r in results if r.timed_out), None)
        if stopped is not None:
            who = "the reference solution" if solution else "your kernel"
            result.notes.append(
                f"{who} is not recorded: shape {stopped.case.label} did not finish in {timeout:g} s"
            )
        if not (solution and stopped is not None):
            yours = None if solution or stopped is not None else file
            if yours is None:  # an earlier run's records of your kernel would show as this one's
                for stale in (f"{exercise.name}.yours.npz", f"{exercise.name}.yours.json"):
                    (Path(record) / stale).unlink(missing_ok=True)
            result.written = write_records(exercise, kernel, yours, Path(record), timeout)
    return result


def run_case(
    exercise: Exercise, kernel: Any, case: Case, index: int, timeout: float, file: str
) -> CaseResult:
    """One case: fresh tensors from a seeded generator, the reference from the inputs, the launch
    under a check session of its own (so findings are this case's), then the comparison."""
    import torch

    from deuteron.check.api import CheckSession

    started = time.perf_counter()
    tensors = exercise.make(case, torch.Generator().manual_seed(1000 + index))
    expected = exercise.reference({k: v.clone() for k, v in tensors.items()})
    out = CaseResult(case)
    session = CheckSession(raise_on=None).start()
    try:
        out.error = _launch(exercise, kernel, tensors, case, timeout, file)
    finally:
        report = session.finish()
    out.findings = report.findings
    out.timed_out = out.error.startswith(TIMED_OUT)
    if not out.error:
        out.wrong = compare(tensors, expected, exercise.atol, exercise.rtol)
    out.seconds = time.perf_counter() - started
    return out


def _launch(exercise: Exercise, kernel: Any, tensors: Tensors, case: Case, timeout: float, file: str) -> str:
    """Launch; the one line saying why the launch did not finish, or ""."""
    from deuteron.check.locks import LockWaitsForever

    try:
        with deadline(timeout, "the launch"):
            exercise.launch(kernel, tensors, case)
    except LockWaitsForever:
        return "stopped: a program would wait forever on a lock (see the lock finding)"
    except KernelTimeout:
        return f"{TIMED_OUT} {timeout:g} s: the kernel did not finish (a loop that never ends?)"
    except Exception as exc:
        return describe(exc, file)
    return ""


def compare(actual: Tensors, expected: Tensors, atol: float, rtol: float) -> list[str]:
    """A line per output that differs: how many elements, and the first one, as an index."""
    import torch

    lines = []
    for name, want in expected.items():
        got = actual[name]
        if want.dtype.is_floating_point:
            good = torch.isclose(got, want.to(got.dtype), atol=atol, rtol=rtol)
        else:
            good = got == want.to(got.dtype)
        bad = int((~good).sum())
        if not bad:
            continue
        first = [int(i) for i in torch.nonzero(~good)[0]]
        g, w = got[tuple(first)].item(), want[tuple(first)].item()
        note = "; nan where no program wrote" if isinstance(g, float) and math.isnan(g) else ""
        lines.append(
            f"{name}[{', '.join(map(str, first))}] is {_value(g)}, expected {_value(w)} "
            f"({bad} of {got.numel()} elements differ{note})"
        )
    return lines


def _value(v: float | int | bool) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def write_records(
    exercise: Exercise, kernel: Any, file: str | None, folder: Path, timeout: float
) -> list[str]:
    """Access records of every case for ``deuteron serve``: the learner's kernel (with its
    findings as a check report, so the page marks them) and the reference solution's. Each is a
    run of its own over all the cases, one launch per case (a launch stopped by the timer ends its
    run: the shapes after it are not run); launches are numbered across the process, so the
    findings of one run never land on the other's launches."""
    import torch

    from deuteron.check.api import CheckSession
    from deuteron.formats import check_json

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LearnError(
            f"--record {short_path(folder)}: cannot make the folder ({exc.strerror or exc})"
        ) from None
    runs = [("reference", load_kernel(exercise.solution_path, exercise.kernel))]
    if file is not None:
        runs.insert(0, ("yours", kernel))
    written = []
    for who, k in runs:
        path = folder / f"{exercise.name}.{who}.npz"
        session = CheckSession(raise_on=None, record=path).start()
        try:
            for i, c in enumerate(exercise.cases):
                tensors = exercise.make(c, torch.Generator().manual_seed(1000 + i))
                if _launch(exercise, k, tensors, c, timeout, file or "").startswith(TIMED_OUT):
                    break
        finally:
            report = session.finish()
        if session.output_error is not None:
            raise LearnError(str(session.output_error))
        written.append(str(path))
        if who == "yours":
            check_json.write(report, folder / f"{exercise.name}.yours.json")
            written.append(str(folder / f"{exercise.name}.yours.json"))
    return written


@contextlib.contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Raise KernelTimeout in this (main) thread after ``seconds``; elsewhere, no limit (a signal
    can only interrupt the main thread). The previous timer and handler are put back."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def ring(signum: int, frame: Any) -> None:
        raise KernelTimeout(what)

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except KernelTimeout:
        if what == "loading the file":
            raise LearnError(
                f"loading the file took more than {seconds:g} s (a loop at its top level?)"
            ) from None
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
