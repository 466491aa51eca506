"""Where the kernel's code changed between the last good and the first bad version: each is
compiled as ``deuteron explain --json`` compiles it (run, each launch captured, cross-compiled for
a GPU target without a GPU), both at once, in the version's own place, and the first stage of
``ttir``, ``ttgir``, ``llir``, ``ptx`` whose text differs is named, with a short diff.

Location info is not code: MLIR's ``loc(...)``, LLVM's ``!dbg``, PTX's ``.loc``, ``.file`` and its
debug sections (they spell the worktree's path, different for every version) are left out first.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from deuteron.bisect.versions import Place

STAGES = ("ttir", "ttgir", "llir", "ptx")
EXCERPT = 12  # diff lines shown

_MLIR_LOC = re.compile(r"\s*loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_DBG = re.compile(r",?\s*!dbg !\d+")


def normalised(stage: str, lines: list[str]) -> list[str]:
    """The stage's lines without location info, blank lines and trailing spaces."""
    out: list[str] = []
    for line in lines:
        text = line.rstrip()
        if stage in ("ttir", "ttgir"):
            if text.startswith("#loc"):
                continue
            text = _MLIR_LOC.sub("", text)
        elif stage == "llir":
            if re.match(r"^!\d+ = ", text) or text.startswith(("source_filename", "; ModuleID")):
                continue
            text = _DBG.sub("", text)
        elif stage == "ptx":
            stripped = text.strip()
            if stripped.startswith(".section") and ".debug" in stripped:
                break  # the debug sections: the line table and the file's name, no code
            if stripped.startswith((".loc", ".file", "$L__tmp")):
                continue
        if text.strip():
            out.append(text)
    return out


@dataclass
class StageChange:
    """The first stage that differs, for which kernel, the diff's first lines, and the later
    stages that differ too (``stage`` is empty when no stage differs)."""

    kernel: str
    stage: str
    excerpt: list[str] = field(default_factory=list)
    also: list[str] = field(default_factory=list)
    note: str = ""


def _explain(place: Place, args: list[str], target: str | None, kernel: str | None, out: str) -> list[str]:
    argv = [sys.executable, "-m", "deuteron", "explain", "--no-color", "--json", out]
    if target:
        argv += ["--target", target]
    if kernel:
        argv += ["--kernel", kernel]
    return [*argv, place.script, *args]


def compile_both(
    good: Place, bad: Place, args: list[str], target: str | None, kernel: str | None, limit: float
) -> tuple[dict[str, Any] | str, dict[str, Any] | str]:
    """Both versions explained at once (each in its own process): each report, or why there is none."""
    folder = tempfile.mkdtemp(prefix="deuteron-bisect-ir-")
    jobs = []
    for name, place in (("good", good), ("bad", bad)):
        path = os.path.join(folder, f"{name}.json")
        env = place.environment()
        env.pop("TRITON_INTERPRET", None)
        proc = subprocess.Popen(
            _explain(place, args, target, kernel, path),
            cwd=place.cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        jobs.append((proc, path))
    results: list[dict[str, Any] | str] = []
    for proc, path in jobs:
        try:
            _, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            results.append(f"compiling ran past {limit:g} s")
            continue
        try:
            with open(path) as f:
                results.append(json.load(f))
        except (OSError, ValueError):
            lines = [line for line in err.splitlines() if line.strip()]
            results.append(lines[-1].strip() if lines else f"deuteron explain exited {proc.returncode}")
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    os.rmdir(folder)
    return results[0], results[1]


def _kernels(report: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    """The report's kernels by name and the specialization's number among those of that name."""
    seen: dict[str, int] = {}
    out = {}
    for k in report.get("kernels", []):
        n = seen.get(k["name"], 0)
        seen[k["name"]] = n + 1
        out[(k["name"], n)] = k
    return out


def _excerpt(before: list[str], after: list[str]) -> list[str]:
    lines = [
        line
        for line in difflib.unified_diff(before, after, "last good", "first bad", n=1, lineterm="")
        if not line.startswith(("---", "+++"))
    ]
    if len(lines) > EXCERPT:
        lines = [*lines[:EXCERPT], f"... ({len(lines) - EXCERPT} more diff lines)"]
    return [line if len(line) <= 160 else line[:159] + "…" for line in lines]


def first_change(good: dict[str, Any], bad: dict[str, Any]) -> StageChange | None:
    """The first kernel whose code differs and its first differing stage; None when all are alike."""
    before, after = _kernels(good), _kernels(bad)
    for key in after:
        if key not in before:
            return StageChange(key[0], "", note=f"{key[0]} is launched by the first bad version only")
    for key, b in before.items():
        a = after.get(key)
        if a is None:
            return StageChange(key[0], "", note=f"{key[0]} is launched by the last good version only")
        changed = []
        for stage in STAGES:
            if stage not in b.get("stage_text", {}) or stage not in a.get("stage_text", {}):
                continue
            x = normalised(stage, b["stage_text"][stage]["lines"])
            y = normalised(stage, a["stage_text"][stage]["lines"])
            if x != y:
                changed.append((stage, x, y))
        if changed:
            stage, x, y = changed[0]
            return StageChange(key[0], stage, _excerpt(x, y), [s for s, _, _ in changed[1:]])
    return None
