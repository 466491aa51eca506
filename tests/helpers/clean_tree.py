"""What is in the checkout besides its committed files, so that a test run can say what it left
there: every test writes under its own temporary folder, never into the repository."""

from __future__ import annotations

import subprocess

from tests.helpers.paths import REPO

# Caches that tools (not tests) keep in the checkout, and that a first run creates.
CACHES = ("__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache")


def uncommitted_entries() -> set[str] | None:
    """``git status --porcelain --ignored`` lines (changed, untracked and ignored paths) outside
    the tools' caches; None where this is not a git checkout (an unpacked sdist)."""
    try:
        proc = subprocess.run(
            ["git", "status", "--porcelain", "--ignored"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return {
        line
        for line in proc.stdout.splitlines()
        if not any(part in CACHES for part in line[3:].rstrip("/").split("/"))
    }
