"""``deuteron view FILE... --check``: each file read as it is written and judged by the rules of
:mod:`deuteron.model.invariants` (profiles, and several rank files as one job) and
:mod:`deuteron.model.trace_invariants` (Chrome traces), then one report.

Why a module of its own: ``view`` reads profiles only and shows them summed, which hides what
the check is after (a tree's own values that contradict each other); here a file is read raw,
a trace too, and a peer's file (Proton's) is judged and reported, never rewritten. The tests'
hook (``tests/conftest.py``) checks every file a test writes through :func:`check_file`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from deuteron.formats import hatchet, msgpack_tree, parse_json, profile_stream
from deuteron.formats.files import read_bytes
from deuteron.model.invariants import Audit, audit_job, audit_profile
from deuteron.model.trace_invariants import audit_trace
from deuteron.model.tree import Profile

SHOWN = 20  # violations listed per file; the rest are counted


@dataclass
class FileCheck:
    """One file's check: what it is, what it holds (for the report), and the audit."""

    path: str
    kind: str  # "profile" or "trace"
    holds: str  # "12 frames, 3 metrics" or "40 events, 3 lanes, 2 flows"
    audit: Audit
    metadata: dict[str, Any] = field(default_factory=dict)  # a profile's (for the ranks rule)


def trace_events(document: Any) -> list[Any] | None:
    """A parsed JSON document's Chrome trace events (``{"traceEvents": [...]}`` or a bare list of
    events, as Chrome reads both), or None when it is not a trace (a hatchet profile is a list
    too, of a tree and a device table)."""
    if isinstance(document, dict):
        events = document.get("traceEvents")
        return events if isinstance(events, list) else None
    if isinstance(document, list) and document and isinstance(document[0], dict):
        first = document[0]
        return document if "ph" in first and "frame" not in first else None
    return None


def check_file(path: str | os.PathLike[str]) -> FileCheck:
    """Read one file (a hatchet profile in JSON or msgpack, a run's stream, or a Chrome trace) and check it;
    FormatError (one line) for a file that is neither, or cannot be read."""
    data = read_bytes(path, "profile or trace")
    shown = str(path)
    if profile_stream.is_stream(data):  # a run's flushes: the tree they add up to
        return _profile_check(shown, profile_stream.parse(data, shown).profile())
    if msgpack_tree.is_msgpack_array(data):
        return _profile_check(shown, hatchet.from_json(msgpack_tree.loads(data, shown), shown))
    document = parse_json(data, path)
    events = trace_events(document)
    if events is not None:
        audit = audit_trace(events)
        holds = f"{audit.events:,} events, {audit.lanes:,} lanes, {audit.flows:,} flows"
        return FileCheck(shown, "trace", holds, audit)
    return _profile_check(shown, hatchet.from_json(document, shown))


def _profile_check(path: str, profile: Profile) -> FileCheck:
    holds = f"{profile.node_count():,} frames, {len(profile.metric_names()):,} metrics"
    return FileCheck(path, "profile", holds, audit_profile(profile), dict(profile.metadata))


def check_files(paths: Sequence[str | os.PathLike[str]]) -> tuple[list[FileCheck], Audit | None]:
    """Every file checked (all read before any is reported: a bad one is the error, alone), and,
    for several profiles, the ranks rule over them as one job's files."""
    checks = [check_file(path) for path in paths]
    profiles = [c for c in checks if c.kind == "profile"]
    job = None
    if len(profiles) > 1:
        job = audit_job([(c.path, Profile(metadata=c.metadata)) for c in profiles])
    return checks, job


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def _lines(head: str, audit: Audit, limit: int) -> list[str]:
    rules = ", ".join(str(r) for r in audit.rules)
    if not audit.violations:
        return [f"ok  {head}; rules: {rules}"]
    broken = sorted({v.rule for v in audit.violations})
    out = [
        f"FAIL {head}; {_plural(len(audit.violations), 'violation')} of {', '.join(broken)}; rules: {rules}"
    ]
    out.extend(f"  {v}" for v in audit.violations[:limit])
    if len(audit.violations) > limit:
        out.append(f"  and {len(audit.violations) - limit:,} more")
    return out


def report(
    checks: Sequence[FileCheck], job: Audit | None = None, limit: int = SHOWN
) -> tuple[list[str], bool]:
    """The report's lines (one ``ok`` line per file, or the file's violations, at most ``limit``
    of them, then how many more), and whether every file keeps every rule."""
    lines: list[str] = []
    for check in checks:
        lines.extend(_lines(f"{check.path}: {check.holds}", check.audit, limit))
    if job is not None:
        files = sum(1 for c in checks if c.kind == "profile")
        lines.extend(_lines(f"{files} profiles as one job's files", job, limit))
    ok = all(not c.audit.violations for c in checks) and (job is None or not job.violations)
    return lines, ok


def is_checkable(path: str | os.PathLike[str]) -> bool:
    """Whether a file's first bytes look like a profile or a trace (JSON that holds a frame or
    trace events, or msgpack), so that the tests' hook leaves other JSON alone unread."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # a FIFO would block the read, a device never end
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    if msgpack_tree.is_msgpack_array(head):
        return True
    text = head.lstrip()
    if text[:1] == b"[":
        return b'"frame"' in head or b'"ph"' in head
    return text[:1] == b"{" and b'"traceEvents"' in head
