"""The explain view's data: an explain report (``deuteron explain --json``) as the page reads it.

Each kernel gets every field the page reads, with a neutral default where the report lacks it (an
older report, a kernel that failed to compile), so the view never meets a missing key. A sampled
kernel's ``heat`` and ``hot_lines`` (``deuteron explain --profile``) reach the page only in the
shapes it draws: a part of another shape is left out, a stage's samples that do not line up with
its text are dropped, so a damaged report shows less heat instead of breaking the view.
"""

from __future__ import annotations

import math
import os
from typing import Any

# What the page reads of an explain report's kernel, for reports that lack some of it.
EXPLAIN_DEFAULTS: dict[str, Any] = {
    "name": "?",
    "target": "?",
    "file": "",
    "line": 0,
    "num_warps": None,
    "num_stages": None,
    "num_ctas": None,
    "args": [],
    "launches": 0,
    "grids": [],
    "registers": None,
    "spills": None,
    "shared_bytes": None,
    "occupancy": None,
    "sass": None,
    "findings": [],
    "source_text": None,
    "stage_text": {},
    "hot_lines": [],
    "heat": None,
}


def explain_data(document: dict[str, Any], source: str) -> dict[str, Any]:
    """One explain report for the page: its kernels (objects only, defaults filled in), device and
    errors, named after the file it came from."""
    kernels = []
    for k in document.get("kernels", []):
        if isinstance(k, dict):
            k = {**EXPLAIN_DEFAULTS, **k}
            if not isinstance(k["stage_text"], dict):
                k["stage_text"] = {}
            k["heat"] = _heat(k["heat"], k["stage_text"])
            k["hot_lines"] = _hot_lines(k["hot_lines"])
            kernels.append(k)
    return {
        "name": os.path.basename(source),
        "source": source,
        "device": document.get("device"),
        "errors": [str(e) for e in document.get("errors", [])],
        "kernels": kernels,
    }


def _count(value: Any) -> int | None:
    """A sample count: a whole number at least 0 (bools are not counts), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if math.isfinite(value) and value >= 0 else None


def _share(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value) if math.isfinite(value) else 0.0


def _dict(record: dict[str, Any], key: str) -> dict[Any, Any]:
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def _list(record: dict[str, Any], key: str) -> list[Any]:
    value = record.get(key)
    return value if isinstance(value, list) else []


def _line_samples(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict) or (samples := _count(value.get("samples"))) is None:
        return None
    return {
        "samples": samples,
        "not_issued": _count(value.get("not_issued")) or 0,
        "stalls": {str(k): n for k, v in _dict(value, "stalls").items() if (n := _count(v))},
    }


def _heat(value: Any, stage_text: dict[str, Any]) -> dict[str, Any] | None:
    """A kernel's heat as the page draws it, or None when there is none to draw."""
    if not isinstance(value, dict) or not (samples := _count(value.get("samples"))):
        return None
    lines = {}
    for key, row in _dict(value, "lines").items():
        if str(key).isdigit() and (line := _line_samples(row)) is not None:
            lines[str(key)] = line
    stages: dict[str, list[int]] = {}
    for name, counts in _dict(value, "stages").items():
        text = stage_text.get(name)
        ir_lines = _list(text, "lines") if isinstance(text, dict) else []
        if isinstance(counts, list) and len(counts) == len(ir_lines):
            stages[str(name)] = [_count(c) or 0 for c in counts]
    note = value.get("note")
    return {
        "samples": samples,
        "lines": lines,
        "stages": stages,
        "by": {str(k): v for k, v in _dict(value, "by").items() if isinstance(v, str)},
        "note": note if isinstance(note, str) else "",
    }


def _hot_lines(value: Any) -> list[dict[str, Any]]:
    """The hot lines' advice as the page lists it; rows of another shape are left out."""
    out = []
    for row in value if isinstance(value, list) else []:
        line = row.get("line") if isinstance(row, dict) else None
        if isinstance(line, bool) or not isinstance(line, int):
            continue
        stall = row.get("stall")
        out.append(
            {
                "kernel": str(row.get("kernel", "")),
                "file": str(row.get("file", "")),
                "line": line,
                "samples": _count(row.get("samples")) or 0,
                "share": _share(row.get("share")),
                "stall": stall if isinstance(stall, str) else None,
                "stall_share": _share(row.get("stall_share")),
                "meaning": str(row.get("meaning", "")),
                "change": str(row.get("change", "")),
                "lints": [str(x) for x in _list(row, "lints")],
            }
        )
    return out
