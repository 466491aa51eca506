"""``deuteron check --json``: the findings and counts of one check, format ``deuteron-check`` v2.

``{"format", "version", "findings": [{"kind", "severity", "kernel", "file", "line", "column",
"program": [x, y, z] | null, "tensor", "index": [i, j, ...] | null (the example lane in the tensor's
view), "launch": n | null (the example's launch, as the access record's launches number it),
"tests": [pytest ids], "message", "programs", "launches", "details"}],
"launches", "programs", "failed_launches", "kernels": {name: launches}, "summary": {severity: n}}``

Version 1 (read too) had no ``launch``: its findings read back with ``launch`` None.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from deuteron.formats import FormatError, load_json
from deuteron.formats.files import atomic_write
from deuteron.model.finding import SEVERITIES, CheckReport, Finding

FORMAT = "deuteron-check"
VERSION = 2


def finding_json(f: Finding) -> dict[str, Any]:
    """One finding as every file and page writes it: the check report, the web UI's check data, the
    access view's findings and explain's findings (the last two a subset of these keys). Every field
    of :class:`Finding` but ``end_column`` (a terminal's caret), under its own name."""
    return {
        "kind": f.kind,
        "severity": f.severity,
        "kernel": f.kernel,
        "file": f.file,
        "line": f.line,
        "column": f.column,
        "program": list(f.program) if f.program is not None else None,
        "tensor": f.tensor,
        "index": f.index,
        "launch": f.launch,
        "tests": f.tests,
        "message": f.message,
        "programs": f.programs,
        "launches": f.launches,
        "details": f.details,
    }


def to_json(report: CheckReport) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "findings": [finding_json(f) for f in report.findings],
        "launches": report.launches,
        "programs": report.programs,
        "failed_launches": report.failed_launches,
        "kernels": report.kernels,
        "skipped": report.skipped,
        "summary": {s: report.count(s) for s in SEVERITIES},
    }


def write(report: CheckReport, path: str | os.PathLike[str]) -> Path:
    """Write atomically (see :func:`deuteron.formats.files.atomic_write`)."""
    return atomic_write(path, json.dumps(to_json(report), indent=1, default=str) + "\n")


_FINDING_FIELDS = {"kind": str, "severity": str, "kernel": str, "file": str, "message": str}


def read(path: str | os.PathLike[str]) -> CheckReport:
    """A check report back from its JSON; FormatError names the first thing that is not right."""
    data = load_json(path, "deuteron check report")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FormatError(f"{path}: not a deuteron check report (no format {FORMAT!r})")
    findings = data.get("findings")
    if not isinstance(findings, list):
        raise FormatError(f"{path}: the check report has no findings list")
    out = []
    for i, f in enumerate(findings):
        if not isinstance(f, dict) or any(not isinstance(f.get(k), t) for k, t in _FINDING_FIELDS.items()):
            raise FormatError(f"{path}: finding {i} is damaged (kind, severity, kernel, file, message)")
        if f["severity"] not in SEVERITIES:
            raise FormatError(f"{path}: finding {i} has an unknown severity {f['severity'][:20]!r}")
        program = f.get("program")
        if program is not None and not (
            isinstance(program, list) and len(program) == 3 and all(_count(x) for x in program)
        ):
            raise FormatError(f"{path}: finding {i} has a damaged program id")
        line, column = f.get("line"), f.get("column")
        if (line is not None and not _count(line)) or (column is not None and not _count(column)):
            raise FormatError(f"{path}: finding {i} has a damaged line or column")
        details = f.get("details", {})
        index, tests = f.get("index"), f.get("tests", [])
        if index is not None and not (isinstance(index, list) and all(_index(v) for v in index)):
            raise FormatError(f"{path}: finding {i} has a damaged index")
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
            raise FormatError(f"{path}: finding {i} has a damaged tests list")
        launch = f.get("launch")  # absent in version 1
        if launch is not None and not _count(launch):
            raise FormatError(f"{path}: finding {i} has a damaged launch")
        out.append(
            Finding(
                kind=f["kind"],
                severity=f["severity"],
                message=f["message"],
                file=f["file"],
                line=line,
                kernel=f["kernel"],
                column=column,
                program=(program[0], program[1], program[2]) if program is not None else None,
                tensor=f.get("tensor") if isinstance(f.get("tensor"), str) else None,
                details=details if isinstance(details, dict) else {},
                programs=int(f["programs"]) if _count(f.get("programs")) else 1,
                launches=int(f["launches"]) if _count(f.get("launches")) else 1,
                index=index,
                tests=tests,
                launch=launch,
            )
        )
    counts = [data.get(k, 0) for k in ("launches", "programs", "failed_launches")]
    if not all(_count(c) for c in counts):
        raise FormatError(f"{path}: the check report's counts are damaged")
    kernels = data.get("kernels", {})
    if not isinstance(kernels, dict) or not all(_count(v) for v in kernels.values()):
        raise FormatError(f"{path}: the check report's kernels are damaged")
    skipped = data.get("skipped", [])  # absent before --program
    if not isinstance(skipped, list) or not all(isinstance(line, str) for line in skipped):
        raise FormatError(f"{path}: the check report's skipped list is damaged")
    return CheckReport(out, counts[0], counts[1], counts[2], dict(kernels), [line[:500] for line in skipped])


def _index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -(1 << 62) < value < 1 << 62


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62
