"""Findings and their grouping: one entry per (kind, kernel, line, tensor), however many programs hit it.

A buggy kernel usually fails the same way in hundreds of programs; the user needs the line, how
many programs, and one worked example, not hundreds of copies.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from deuteron.model.access import LaunchInfo, Site
from deuteron.model.finding import Finding, severity_rank
from deuteron.triton.interpreter.sanitizer_protocol import Abort

KINDS = (
    "out-of-bounds",
    "race",
    "lock",
    "store-coverage",
    "nan",
    "assert",
    "outside-view",
    "int-overflow",
    "div-by-zero",
)
SEVERITY_OF = {
    "out-of-bounds": "error",
    "race": "error",
    "lock": "error",
    "assert": "error",
    "int-overflow": "error",
    "div-by-zero": "error",
    "outside-view": "warning",
    "nan": "warning",
    "store-coverage": "info",
}
TESTS_KEPT = 5  # pytest ids kept per finding


class FindingLimitReached(Abort):
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
        launch: LaunchInfo,
        site: int | Site | None,
        message: str,
        *,
        seq: int = -1,
        program: tuple[int, int, int] | None = None,
        tensor: str | None = None,
        details: dict[str, Any] | None = None,
        programs: int = 1,
        index: list[int] | None = None,
        severity: str | None = None,
    ) -> None:
        """One hit; ``index`` (else ``details["index"]``) is the example lane in ``tensor``'s view;
        ``severity`` overrides the kind's (a race whose order cannot be told is a warning)."""
        where = _resolve(site, launch)
        key = (kind, launch.kernel, where.file, where.line, tensor)
        group = self._groups.get(key)
        if group is None:
            group = Finding(
                kind=kind,
                severity=severity or SEVERITY_OF[kind],
                kernel=launch.kernel,
                file=where.file,
                line=where.line,
                column=where.column,
                end_column=where.end_column,
                message=message,
                program=program,
                tensor=tensor,
                details=details or {},
                programs=0,
                index=index if index is not None else _index((details or {}).get("index")),
                launch=launch.index,
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
        test = current_test()
        if test and test not in group.tests and len(group.tests) < TESTS_KEPT:
            group.tests.append(test)
        if self.fail_fast and group.severity == "error":
            raise FindingLimitReached(group)

    def all(self) -> list[Finding]:
        return sorted(
            self._groups.values(), key=lambda f: (severity_rank(f.severity), f.file, f.line or 0, f.kind)
        )


def current_test() -> str:
    """The pytest test running now (``tests/test_k.py::test_race``), or "" outside pytest."""
    running = os.environ.get("PYTEST_CURRENT_TEST", "")
    return running.rsplit(" (", 1)[0] if running else ""


def _index(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return list(value)
    return None


def _resolve(site: int | Site | None, launch: LaunchInfo) -> Site:
    if isinstance(site, Site):
        return site
    found = launch.sites.get(site) if site is not None else None
    return found if found is not None else Site(file=launch.file, line=0, function=launch.kernel)
