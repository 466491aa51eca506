"""One check around any number of launches (``with deuteron.check() as c: ...``, or start()/finish()),
or around a whole program (``deuteron.check.run("script.py")``)."""

from __future__ import annotations

import bdb
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from deuteron.check.at_size import AtSize, parse_scale, parse_sizes
from deuteron.check.checker import Checker
from deuteron.check.debugger import Debugger
from deuteron.check.errors import CheckError
from deuteron.check.findings import KINDS, FindingLimitReached, Findings
from deuteron.check.grid_programs import Selection
from deuteron.check.guard import GUARD
from deuteron.check.locks import LockWaitsForever
from deuteron.check.recorder import DEFAULT_LIMIT, AccessRecorder
from deuteron.formats.files import OutputError, check_writable
from deuteron.model.finding import SEVERITIES, CheckReport
from deuteron.process.program import Program, run_to_end
from deuteron.triton import enable_interpreter_mode

FAIL_FAST_STOP = "stopped at the first error (--fail-fast)"
PDB_STOP = "stopped: quit in pdb"
LOCK_STOP = "stopped: a program would wait forever on an atomic (see the lock finding)"


class CheckFailed(AssertionError):
    """Findings at or above the chosen severity; ``.report`` holds them all."""

    def __init__(self, report: CheckReport, severity: str) -> None:
        worst = report.at_least(severity)
        lines = [f"deuteron check: {report.summary()}"]
        lines += [
            f"  {f.severity} {f.kind} in {f.kernel} at {f.file}:{f.line}: {f.message}" for f in worst[:10]
        ]
        super().__init__("\n".join(lines))
        self.report = report


@dataclass
class CheckRun:
    """A checked program: what was found, its own exit code, why it ended early ("" if not), the
    outputs that could not be written (one line each; the findings are kept regardless), and what
    ``programs`` left unrun."""

    report: CheckReport
    exit_code: int
    ended_by: str
    errors: list[str] = field(default_factory=list)
    # What --program skipped, one line per launch (and per selection that matched nothing)
    skipped: list[str] = field(default_factory=list)

    def _repr_html_(self) -> str:
        """In a notebook: the findings as the web UI shows them."""
        from deuteron.render.notebook import check_html

        return check_html(self.report)


class CheckSession:
    """One check around any number of launches; a context manager, or start()/finish() by hand.

    ``deuteron.check`` is this class: ``deuteron.check(raise_on=None)`` opens a check around a block,
    and ``deuteron.check.run(...)`` (see :meth:`run`) checks a whole program.

    raise_on: raise CheckFailed on exit when a finding this severe or worse exists ("error",
    "warning", "info"), or None to only collect them in ``.report``. fail_fast: stop the launch at
    the first error (raises FindingLimitReached). record: also write access records there.
    pdb: stop in pdb at each new finding of this level ("error", "warning" or "all"; see
    :mod:`.debugger`). programs: run only these grid programs (``--program`` specs, see
    :mod:`.grid_programs`). at_size / scale: after each launch, probe the kernel's int32 arithmetic
    with these integer arguments set (``{"n_elements": 3 * 10**9}`` or ``["n_elements=3e9"]``) or
    every integer argument multiplied by ``scale`` (see :mod:`.at_size`).
    """

    def __init__(
        self,
        *,
        checks: Iterable[str] = KINDS,
        fail_fast: bool = False,
        raise_on: str | None = "error",
        record: str | Path | None = None,
        record_limit: int = DEFAULT_LIMIT,
        pdb: str | None = None,
        programs: Iterable[str] | Selection | None = None,
        at_size: dict[str, int] | Iterable[str] | None = None,
        scale: float | None = None,
    ) -> None:
        if raise_on is not None and raise_on not in SEVERITIES:
            raise CheckError(f"raise_on must be one of {', '.join(SEVERITIES)} or None, not {raise_on!r}")
        self.findings = Findings(fail_fast=fail_fast)
        self.recorder = AccessRecorder(record_limit) if record is not None else None
        # Checked now and fixed as absolute, so neither a full check nor a chdir is wasted on it.
        self.record_path = check_writable(record, "--record") if record is not None else None
        self.output_error: OutputError | None = None
        self.checker = Checker(self.findings, checks, self.recorder)
        self.at_size: AtSize | None = None
        if at_size or scale is not None:
            sizes = at_size if isinstance(at_size, dict) else parse_sizes(list(at_size or []))
            scale = parse_scale(str(scale)) if scale is not None else None
            self.at_size = self.checker.at_size = AtSize(self.findings, dict(sizes), scale)
        self.debugger = Debugger(pdb, self.checker, fail_fast) if pdb is not None else None
        if self.debugger is not None:
            self.findings.on_new = self.debugger.found
        if isinstance(programs, str):
            programs = [programs]
        if programs is not None and not isinstance(programs, Selection):
            programs = Selection.parse(list(programs))
        self.selection: Selection | None = programs
        self.raise_on = raise_on
        self.active = False
        self.owner = os.getpid()  # a forked child never writes the parent's record

    @property
    def report(self) -> CheckReport:
        c = self.checker
        return CheckReport(
            findings=self.findings.all(),
            launches=c.launches,
            programs=c.programs,
            failed_launches=c.failed_launches,
            kernels=dict(c.kernels),
        )

    def start(self) -> CheckSession:
        if self.selection is not None and GUARD.selection is not None:
            raise CheckError("another check already runs only some programs (--program)")
        enable_interpreter_mode()
        GUARD.add(self.checker)
        if self.selection is not None:
            GUARD.selection = self.selection
        self.active = True
        return self

    def finish(self) -> CheckReport:
        """Stop checking; write the record if asked. Never raises, for findings or for a record that
        cannot be written (``output_error`` says why; see __exit__)."""
        if self.active:
            if self.selection is not None and GUARD.selection is self.selection:
                GUARD.selection = None
            GUARD.remove(self.checker)
            self.active = False
        if self.recorder is not None and self.record_path is not None and os.getpid() == self.owner:
            try:
                self.recorder.write(self.record_path)
            except OutputError as exc:
                self.output_error = exc
        return self.report

    def _repr_html_(self) -> str:
        """In a notebook: the findings, and every launch's accesses when a record was written."""
        from deuteron.render.notebook import check_html

        written = not self.active and self.record_path is not None and os.path.isfile(self.record_path)
        return check_html(self.report, record=str(self.record_path) if written else None)

    def __enter__(self) -> CheckSession:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        report = self.finish()
        if report.launches == 0 and exc is None:
            warnings.warn(
                "deuteron.check saw no interpreted Triton launch: kernels defined before "
                "TRITON_INTERPRET=1 was set run compiled and are not checked",
                stacklevel=2,
            )
        if exc is None and self.raise_on is not None and report.at_least(self.raise_on):
            failed = CheckFailed(report, self.raise_on)
            if self.output_error is not None:
                failed.args = (f"{failed.args[0]}\n  and {self.output_error}",)
            raise failed
        if exc is None and self.output_error is not None:
            raise self.output_error

    @staticmethod
    def run(
        program: Program | str,
        *args: str,
        checks: Iterable[str] = KINDS,
        fail_fast: bool = False,
        record: str | Path | None = None,
        record_limit: int = DEFAULT_LIMIT,
        pdb: str | None = None,
        programs: Iterable[str] | Selection | None = None,
        at_size: dict[str, int] | Iterable[str] | None = None,
        scale: float | None = None,
    ) -> CheckRun:
        """Run ``program`` (a :class:`Program`, or a script path followed by its arguments) in Triton's
        interpreter and check every grid program of every launch; never raises for findings.

        ``deuteron.check.run("train.py", "--steps", "2").report.findings``
        """
        if isinstance(program, str):
            program = Program.script(program, *args)
        session = CheckSession(
            checks=checks,
            fail_fast=fail_fast,
            raise_on=None,
            record=record,
            record_limit=record_limit,
            pdb=pdb,
            programs=programs,
            at_size=at_size,
            scale=scale,
        )
        session.start()  # sets TRITON_INTERPRET=1 before the program imports triton
        stops = (
            (FindingLimitReached, FAIL_FAST_STOP),
            (LockWaitsForever, LOCK_STOP),
            (bdb.BdbQuit, PDB_STOP),
        )
        try:
            code, ended_by = run_to_end(program, stops=stops)
        finally:
            report = session.finish()
        errors = [str(session.output_error)] if session.output_error is not None else []
        selection = session.selection
        notes = selection.summary(report.launches) if selection is not None else []
        if session.at_size is not None:
            notes = [*notes, *session.at_size.summary()]
        report.skipped = list(notes)  # the JSON report says what did not run, too
        return CheckRun(report, code, ended_by, errors, notes)
