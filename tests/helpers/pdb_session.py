"""``deuteron check --pdb`` (and ``breakpoint()`` under the check) driven through stdin, in a
fresh process: what the pdb and --program tests share."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

DEBUG_ME = str(REPO / "examples" / "debug_me.py")


def check(*args: str, stdin: str = "", cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m deuteron check ARGS`` in a fresh process, its stdin the given pdb commands."""
    return run_cli("check", *args, cwd=cwd, stdin=stdin, timeout=timeout)


def answers(out: str) -> list[str]:
    """What pdb printed after each prompt, in order (the prompt's line, without the prompt)."""
    return [part.split("\n", 1)[0].strip() for part in out.split("(Pdb) ")[1:]]
