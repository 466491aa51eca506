"""The explain view's data: an explain report (``deuteron explain --json``) as the page reads it.

Each kernel gets every field the page reads, with a neutral default where the report lacks it (an
older report, a kernel that failed to compile), so the view never meets a missing key.
"""

from __future__ import annotations

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
            kernels.append(k)
    return {
        "name": os.path.basename(source),
        "source": source,
        "device": document.get("device"),
        "errors": [str(e) for e in document.get("errors", [])],
        "kernels": kernels,
    }
