"""Findings and their grouping: one entry per (kind, kernel, line, tensor), however many programs hit it.

A buggy kernel usually fails the same way in hundreds of programs; the user needs the line, how
many programs, and one worked example, not hundreds of copies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..backends.interpreter import adapter

KINDS = ("out-of-bounds", "race", "store-coverage", "nan")
SEVERITIES = ("error", "warning", "info")
SEVERITY_OF = {"out-of-bounds": "error", "race": "error", "nan": "warning", "store-coverage": "info"}


@dataclass
class Finding:
    """One problem at one source line; ``program`` and ``details`` are the worked example."""

    kind: str
    kernel: str
    file: str
    line: int
    message: str
    program: tuple[int, int, int] | None = None
    tensor: str | None = None
    col: int | None = None
    end_col: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    programs: int = 1  # (launch, program) pairs that hit it
    launches: int = 1

    @property
    def severity(self) -> str:
        return SEVERITY_OF[self.kind]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity,
            "kernel": self.kernel,
            "file": self.file,
            "line": self.line,
            "column": self.col,
            "program": list(self.program) if self.program is not None else None,
            "tensor": self.tensor,
            "message": self.message,
            "programs": self.programs,
            "launches": self.launches,
            "details": self.details,
        }


class FindingLimitReached(adapter.Abort):
    """Raised with --fail-fast at the first error: the run stops there."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(
            f"{finding.kind} in {finding.kernel} at {finding.file}:{finding.line}: {finding.message}"
        )
        self.finding = finding


class Findings:
    """Collects findings as the checks raise them, grouped as they arrive."""

    def __init__(self, fail_fast: bool = False, on_new: Callable[[Finding], None] | None = None) -> None:
        self.fail_fast = fail_fast
        self.on_new = on_new
        self._groups: dict[tuple[Any, ...], Finding] = {}
        self._seen: dict[tuple[Any, ...], set[tuple[int, int]]] = {}
        self._launches: dict[tuple[Any, ...], set[int]] = {}

    def add(
        self,
        kind: str,
        launch: adapter.LaunchInfo,
        site: int | adapter.Site | None,
        message: str,
        *,
        seq: int = -1,
        program: tuple[int, int, int] | None = None,
        tensor: str | None = None,
        details: dict[str, Any] | None = None,
        programs: int = 1,
    ) -> None:
        where = _resolve(site, launch)
        key = (kind, launch.kernel, where.file, where.line, tensor)
        group = self._groups.get(key)
        if group is None:
            group = Finding(
                kind=kind,
                kernel=launch.kernel,
                file=where.file,
                line=where.line,
                col=where.col,
                end_col=where.end_col,
                message=message,
                program=program,
                tensor=tensor,
                details=details or {},
                programs=0,
            )
            self._groups[key] = group
            self._seen[key] = set()
            self._launches[key] = set()
            if self.on_new is not None:
                self.on_new(group)
        seen = self._seen[key]
        if programs > 1 or seq < 0:
            group.programs += programs
        elif (launch.index, seq) not in seen:
            seen.add((launch.index, seq))
            group.programs += 1
        self._launches[key].add(launch.index)
        group.launches = len(self._launches[key])
        if self.fail_fast and group.severity == "error":
            raise FindingLimitReached(group)

    def all(self) -> list[Finding]:
        order = {s: i for i, s in enumerate(SEVERITIES)}
        return sorted(self._groups.values(), key=lambda f: (order[f.severity], f.file, f.line, f.kind))


def _resolve(site: int | adapter.Site | None, launch: adapter.LaunchInfo) -> adapter.Site:
    if isinstance(site, adapter.Site):
        return site
    if site is not None and 0 <= site < len(adapter.sites):
        return adapter.sites[site]
    return adapter.Site(file=launch.file, line=0, function=launch.kernel)
