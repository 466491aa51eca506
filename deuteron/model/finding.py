"""One finding type for every analysis: the sanitizer's (``deuteron check``) and the compiler
explainer's (``deuteron explain``), on one severity scale.

A finding is a problem (or a fact worth knowing) at one place in the user's source. The
sanitizer groups many programs' hits into one finding with a worked example (``program``,
``tensor``, ``details``); the explainer's findings name a source line and the fix. Fields one
side does not use keep their defaults. The JSON of a finding is written from this class in one
function, :func:`deuteron.formats.check_json.finding_json` (explain's findings are a subset of its
keys); the web page's TypeScript ``Finding`` (``frontend/src/types.ts``) is checked against both by
``tests/render/test_finding_schema.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# Most severe first. error: wrong results or a crash; warning: worth changing; info: worth knowing.
SEVERITIES = ("error", "warning", "info")


@dataclass
class Finding:
    """One grouped problem at one place in the user's source, with one worked example: the
    program, tensor, lane index and launch it was first seen in. Mutable because the sanitizer
    keeps counting into it (``programs``, ``launches``, ``tests``) as more hits arrive."""

    kind: str
    severity: str
    message: str
    file: str = ""
    line: int | None = None
    kernel: str = ""
    column: int | None = None  # 0-based, None where unknown
    end_column: int | None = None  # where the caret ends (not written: only a terminal draws it)
    program: tuple[int, int, int] | None = None
    tensor: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    programs: int = 1  # (launch, program) pairs that hit it
    launches: int = 1
    index: list[int] | None = None  # the example lane as an index into ``tensor`` (its view's shape)
    tests: list[str] = field(default_factory=list)  # pytest ids of the tests that hit it (first few)
    # The launch of the example (LaunchInfo.index, as the access record numbers launches); None where
    # unknown (explain's findings, a check report written before deuteron-check v2).
    launch: int | None = None


def severity_rank(severity: str) -> int:
    """0 for the most severe; raises ValueError for a name not on the scale."""
    return SEVERITIES.index(severity)


def at_least(findings: Iterable[Finding], severity: str) -> list[Finding]:
    """Findings of this severity or worse ("error" < "warning" < "info")."""
    rank = severity_rank(severity)
    return [f for f in findings if severity_rank(f.severity) <= rank]


@dataclass
class CheckReport:
    """What one sanitizer run found: the grouped findings and how much was checked."""

    findings: list[Finding] = field(default_factory=list)
    launches: int = 0
    programs: int = 0
    failed_launches: int = 0
    kernels: dict[str, int] = field(default_factory=dict)  # kernel name -> launches checked
    # What ``--program`` left out: one line per launch with skipped programs (and per selection
    # that matched nothing); empty when every program of every launch ran
    skipped: list[str] = field(default_factory=list)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def at_least(self, severity: str) -> list[Finding]:
        """Findings of this severity or worse ("error" < "warning" < "info")."""
        return at_least(self.findings, severity)

    def summary(self) -> str:
        parts = [
            f"{self.count(s)} {s}{'s' if self.count(s) != 1 and s != 'info' else ''}" for s in SEVERITIES
        ]
        failed = f" ({self.failed_launches} raised)" if self.failed_launches else ""
        return (
            f"{self.launches} launch{'es' if self.launches != 1 else ''}{failed} and "
            f"{self.programs} program{'s' if self.programs != 1 else ''} checked: {', '.join(parts)}"
        )
