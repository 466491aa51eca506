"""``deuteron bisect``: the first bad version between a good and a bad one, git commits of a local
repository or Triton releases, and the IR stage where the kernel's code changed.

api (the entry: ``run``) over versions (what a version is and where it runs) · commits (git
worktrees) · releases (Triton's releases, installed into a cache) · judge (run a version: --wrong,
--check, --slower) · outputs (the good output compared) · timing (--slower's rounds and verdict) ·
search (the bisection) · stages (the first IR stage that differs)
"""

from __future__ import annotations

from deuteron.bisect.api import BisectResult, run
from deuteron.bisect.errors import BisectError

__all__ = ["BisectError", "BisectResult", "run"]
