"""``deuteron check --json``: the findings and counts of one check, format ``deuteron-check`` v1.

``{"format", "version", "findings": [{"kind", "severity", "kernel", "file", "line", "column",
"program": [x, y, z] | null, "tensor", "message", "programs", "launches", "details"}],
"launches", "programs", "failed_launches", "kernels": {name: launches}, "summary": {severity: n}}``
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..model.finding import SEVERITIES, CheckReport, Finding

FORMAT = "deuteron-check"
VERSION = 1


def finding_json(f: Finding) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "severity": f.severity,
        "kernel": f.kernel,
        "file": f.file,
        "line": f.line,
        "column": f.col,
        "program": list(f.program) if f.program is not None else None,
        "tensor": f.tensor,
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
        "summary": {s: report.count(s) for s in SEVERITIES},
    }


def write(report: CheckReport, path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(to_json(report), indent=1) + "\n")
    os.replace(tmp, path)
    return path
