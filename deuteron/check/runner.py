"""The sanitizer as a library: run a whole script, module or pytest with every launch checked."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..model.finding import CheckReport
from ..target import Target, run_to_end
from .findings import KINDS, FindingLimitReached
from .recorder import DEFAULT_LIMIT
from .session import CheckSession

FAIL_FAST_STOP = "stopped at the first error (--fail-fast)"


@dataclass
class CheckRun:
    """A checked run: what was found, the target's own exit code, and why it ended early ("" if not)."""

    report: CheckReport
    exit_code: int
    ended_by: str


def run(
    target: Target | str,
    *args: str,
    checks: Iterable[str] = KINDS,
    fail_fast: bool = False,
    record: str | Path | None = None,
    record_limit: int = DEFAULT_LIMIT,
) -> CheckRun:
    """Run ``target`` (a :class:`Target`, or a script path followed by its arguments) in Triton's
    interpreter and check every program of every launch; never raises for findings.

    ``deuteron.check.run("train.py", "--steps", "2").report.findings``
    """
    if isinstance(target, str):
        target = Target.script(target, *args)
    session = CheckSession(
        checks=checks, fail_fast=fail_fast, raise_on=None, record=record, record_limit=record_limit
    )
    session.start()  # sets TRITON_INTERPRET=1 before the target imports triton
    try:
        code, ended_by = run_to_end(target, stops=((FindingLimitReached, FAIL_FAST_STOP),))
    finally:
        report = session.finish()
    return CheckRun(report, code, ended_by)
