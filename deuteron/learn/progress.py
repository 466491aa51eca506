"""Which exercises a learner has done, tried, and how many hints they have seen, kept in the
user's data directory: ``$DEUTERON_DATA_DIR/learn/progress.json`` when that is set, else
``$XDG_DATA_HOME/deuteron/learn/progress.json``, else ``~/.local/share/deuteron/learn/progress.json``.

Format ``deuteron-learn-progress`` version 1: ``{"format", "version", "exercises": {"03_outer_add":
{"status": "done" | "tried", "checks": int, "hints": int, "last_check": ISO time,
"done_at": ISO time}}}``. Written atomically (a crash leaves the old file); a file that is not
one is kept beside it as ``progress.json.corrupt`` with a one-line warning, and progress starts
afresh.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deuteron.formats.files import OutputError, atomic_write

FORMAT = "deuteron-learn-progress"
VERSION = 1
ENV = "DEUTERON_DATA_DIR"
STATUSES = ("done", "tried", "new")


def data_dir() -> Path:
    """Deuteron's folder in the user's data directory (XDG), or ``$DEUTERON_DATA_DIR``."""
    override = os.environ.get(ENV)
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "deuteron"


def progress_path() -> Path:
    return data_dir() / "learn" / "progress.json"


@dataclass
class Progress:
    """The learner's progress, read once and saved after each change. ``warning``: the one line
    to show when the file on disk could not be used (or not written)."""

    path: Path
    exercises: dict[str, dict[str, Any]] = field(default_factory=dict)
    warning: str = ""

    @classmethod
    def load(cls, path: Path | None = None) -> Progress:
        path = progress_path() if path is None else path
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path)
        except (OSError, UnicodeDecodeError) as exc:
            return cls(path, warning=f"cannot read {path} ({exc}); progress is not kept this time")
        try:
            return cls(path, _parse(text))
        except ValueError as why:
            backup = path.with_name(path.name + ".corrupt")
            try:
                os.replace(path, backup)
                kept = f"kept it as {backup.name} and started afresh"
            except OSError:
                kept = "started afresh"
            return cls(path, warning=f"{path} is not a progress file ({why}); {kept}")

    def status(self, name: str) -> str:
        entry = self.exercises.get(name)
        return str(entry["status"]) if entry else "new"

    def record_check(self, name: str, passed: bool) -> None:
        entry = self.exercises.setdefault(name, {"status": "tried", "checks": 0, "hints": 0})
        entry["checks"] = int(entry.get("checks", 0)) + 1
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        entry["last_check"] = now
        if passed and entry.get("status") != "done":
            entry["status"] = "done"
            entry["done_at"] = now
        self.save()

    def hints_seen(self, name: str) -> int:
        return int(self.exercises.get(name, {}).get("hints", 0))

    def see_hints(self, name: str, count: int) -> None:
        entry = self.exercises.setdefault(name, {"status": "tried", "checks": 0, "hints": 0})
        if count > int(entry.get("hints", 0)):
            entry["hints"] = count
            self.save()

    def save(self) -> None:
        """Atomically; a folder that cannot be written is a warning, never a failed check."""
        document = {"format": FORMAT, "version": VERSION, "exercises": self.exercises}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, json.dumps(document, indent=1, sort_keys=True) + "\n")
        except (OSError, OutputError) as exc:
            self.warning = f"cannot save progress to {self.path} ({exc})"


def _parse(text: str) -> dict[str, dict[str, Any]]:
    """The exercises' entries; ValueError (saying what is wrong) for anything else."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(f'no "format": "{FORMAT}"')
    if document.get("version") != VERSION:
        raise ValueError(f"version {document.get('version')!r}, this deuteron reads {VERSION}")
    exercises = document.get("exercises")
    if not isinstance(exercises, dict):
        raise ValueError('"exercises" is not an object')
    for name, entry in exercises.items():
        if not isinstance(entry, dict) or entry.get("status") not in ("done", "tried"):
            raise ValueError(f"exercise {name!r} has no valid status")
        for key in ("checks", "hints"):
            if not isinstance(entry.get(key, 0), int) or entry.get(key, 0) < 0:
                raise ValueError(f"exercise {name!r}: {key} is not a count")
    return exercises
