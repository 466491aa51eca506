"""One check around any number of launches: ``with deuteron.check() as c: ...`` or start()/finish()."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from ..model.finding import SEVERITIES, CheckReport
from ..triton import enable_interpreter_mode
from .checker import Checker
from .errors import CheckError
from .findings import KINDS, Findings
from .guard import GUARD
from .recorder import DEFAULT_LIMIT, AccessRecorder


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


class CheckSession:
    """One check around any number of launches; a context manager, or start()/finish() by hand."""

    def __init__(
        self,
        *,
        checks: Iterable[str] = KINDS,
        fail_fast: bool = False,
        raise_on: str | None = "error",
        record: str | Path | None = None,
        record_limit: int = DEFAULT_LIMIT,
    ) -> None:
        if raise_on is not None and raise_on not in SEVERITIES:
            raise CheckError(f"raise_on must be one of {', '.join(SEVERITIES)} or None, not {raise_on!r}")
        self.findings = Findings(fail_fast=fail_fast)
        self.recorder = AccessRecorder(record_limit) if record is not None else None
        self.record_path = Path(record) if record is not None else None
        self.checker = Checker(self.findings, checks, self.recorder)
        self.raise_on = raise_on
        self.active = False

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
        enable_interpreter_mode()
        GUARD.add(self.checker)
        self.active = True
        return self

    def finish(self) -> CheckReport:
        """Stop checking; write the record if asked. Never raises for findings (see __exit__)."""
        if self.active:
            GUARD.remove(self.checker)
            self.active = False
        if self.recorder is not None and self.record_path is not None:
            self.recorder.write(self.record_path)
        return self.report

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
            raise CheckFailed(report, self.raise_on)
