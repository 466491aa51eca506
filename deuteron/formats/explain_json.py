"""``deuteron explain --json``: format ``deuteron-explain`` version 1.

``{"format", "version", "kernels": [{name, target, file, line, num_warps, num_stages, num_ctas,
args, launches, grids, registers, spills, shared_bytes, occupancy, sass, stages, source_map,
findings: [{kind, line, message, severity}], profile?, hot_lines? (a sampled profile's: [{kernel,
file, line, samples, share, stall, stall_share, meaning, change, lints: [message]}]), heat? (its samples:
{samples, lines: {source line: {samples, not_issued, stalls}}, stages: {stage: [samples per IR line]},
by: {stage: "PC" or "source line"}, note}),
source_text (the kernel's file, or null),
stage_text: {stage: {lines: [text], src: [source line or null]}}}], "ranking": [{name, opportunity_ns,
launched}], "device", "errors"}``. The explainer builds the document; this module names and
versions it, and writes and reads it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from deuteron.formats import FormatError, load_json
from deuteron.formats.check_json import finding_json
from deuteron.formats.files import atomic_write
from deuteron.model.finding import Finding

FORMAT = "deuteron-explain"
VERSION = 1

# The keys of a finding (check_json.finding_json's) that an explain report writes, in its order.
EXPLAIN_FINDING_KEYS = ("kind", "line", "message", "severity")


def explain_finding_json(f: Finding) -> dict[str, Any]:
    """A compiler explainer's finding: the one finding JSON, narrowed to what a lint has."""
    written = finding_json(f)
    return {key: written[key] for key in EXPLAIN_FINDING_KEYS}


def document(body: dict[str, Any]) -> dict[str, Any]:
    """The body with the format's name and version first."""
    return {"format": FORMAT, "version": VERSION, **body}


def write(body: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write atomically (see :func:`deuteron.formats.files.atomic_write`)."""
    return atomic_write(path, json.dumps(document(body), indent=1, default=str) + "\n")


def read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The document back from its JSON (its shape checked at the top; the renderer reads it)."""
    data = load_json(path, "deuteron explain report")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FormatError(f"{path}: not a deuteron explain report (no format {FORMAT!r})")
    if not isinstance(data.get("kernels"), list):
        raise FormatError(f"{path}: the explain report has no kernels list")
    return data
