"""What is bisected, and where each version of it runs: a :class:`Version` (a commit, a Triton
release) and a :class:`Place` (the folder to run in, the script to run, what goes first on
``PYTHONPATH``). The git commits are in :mod:`.commits`, Triton's releases in :mod:`.releases`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Version:
    """One version: ``ref`` is what the user reads (``a1b2c3d``, ``triton==3.6.0``), ``title`` a
    commit's subject (empty for a release), ``key`` what the source needs (a full hash, a version)."""

    ref: str
    key: str
    title: str = ""

    def shown(self) -> str:
        return f"{self.ref} {self.title}".rstrip()


@dataclass
class Place:
    """Where a version runs: the working folder, the script's path there, and the folders put
    first on ``PYTHONPATH`` (a worktree's root, a Triton release's folder)."""

    cwd: str
    script: str
    path_first: list[str] = field(default_factory=list)

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """This process's environment with the place's folders first on ``PYTHONPATH``."""
        env = dict(os.environ)
        parts = [*self.path_first, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
        if parts:
            env["PYTHONPATH"] = os.pathsep.join(parts)
        env.update(extra or {})
        return env


class Source(Protocol):
    """The versions between good and bad, good first and bad last, and where each runs."""

    versions: list[Version]
    what: str  # "commit", "Triton release": what one version is, for the messages

    def place(self, version: Version) -> Place: ...

    def close(self) -> None: ...
