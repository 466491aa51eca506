"""Which exercises a learner has done, tried, and how many hints they have seen, kept in the
user's data directory: ``$DEUTERON_DATA_DIR/learn/progress.json`` when that is set, else
``$XDG_DATA_HOME/deuteron/learn/progress.json``, else ``~/.local/share/deuteron/learn/progress.json``.

Format ``deuteron-learn-progress`` version 1: ``{"format", "version", "exercises": {"03_outer_add":
{"status": "done" | "tried" | "new", "checks": int, "hints": int, "last_check": ISO time,
"done_at": ISO time}}}`` ("new": hints seen, never checked). Written atomically (a crash leaves the
old file). A file that is not one (not UTF-8, not JSON, not this format) is kept beside it as
``progress.json.corrupt`` with a one-line warning, and progress starts afresh; a file that cannot
be read at all (no permission) is left as it is and progress is not kept for that run, with a
one-line warning.
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
    to show when the file on disk could not be used (or not written); the command line shows it
    and clears it (:meth:`take_warning`), so a run says it once. ``read_only``: the file on disk
    must not be replaced (it could not be read, or not be kept aside), so nothing is saved."""

    path: Path
    exercises: dict[str, dict[str, Any]] = field(default_factory=dict)
    warning: str = ""
    read_only: bool = False

    @classmethod
    def load(cls, path: Path | None = None) -> Progress:
        path = progress_path() if path is None else path
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # no file there to keep (saving tells the rest)
            return cls(path)
        except OSError as exc:
            why = exc.strerror or str(exc)
            warning = f"cannot read {path} ({why}); progress is not kept this time"
            return cls(path, warning=warning, read_only=True)
        try:
            return cls(path, _parse(data))
        except ValueError as why:
            backup = path.with_name(path.name + ".corrupt")
            try:
                os.replace(path, backup)
            except OSError as exc:
                reason = exc.strerror or str(exc)
                warning = (
                    f"{path} is not a progress file ({why}) and cannot be kept aside as {backup.name} "
                    f"({reason}); progress is not kept this time"
                )
                return cls(path, warning=warning, read_only=True)
            kept = f"kept it as {backup.name} and started afresh"
            return cls(path, warning=f"{path} is not a progress file ({why}); {kept}")

    def take_warning(self) -> str:
        """The pending warning, once: cleared as it is taken."""
        warning, self.warning = self.warning, ""
        return warning

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
        elif entry.get("status") == "new":  # hints seen before, now checked
            entry["status"] = "tried"
        self.save()

    def hints_seen(self, name: str) -> int:
        return int(self.exercises.get(name, {}).get("hints", 0))

    def see_hints(self, name: str, count: int) -> None:
        """Keeps the count of hints seen; the status stays what checks made it (a hint is no check)."""
        entry = self.exercises.setdefault(name, {"status": "new", "checks": 0, "hints": 0})
        if count > int(entry.get("hints", 0)):
            entry["hints"] = count
            self.save()

    def save(self) -> None:
        """Atomically; a folder that cannot be written is a warning (once), never a failed check.
        Nothing is written when the file on disk could not be read: it is never replaced."""
        if self.read_only:
            return
        document = {"format": FORMAT, "version": VERSION, "exercises": self.exercises}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, json.dumps(document, indent=1, sort_keys=True) + "\n")
        except (OSError, OutputError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            note = f"cannot save progress to {self.path} ({why}); progress is not kept this time"
            self.warning = f"{self.warning}; {note}" if self.warning else note
            self.read_only = True


def _parse(data: bytes) -> dict[str, dict[str, Any]]:
    """The exercises' entries; ValueError (saying what is wrong) for anything else."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: byte {exc.start}") from None
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
        if not isinstance(entry, dict) or entry.get("status") not in STATUSES:
            raise ValueError(f"exercise {name!r} has no valid status")
        for key in ("checks", "hints"):
            if not isinstance(entry.get(key, 0), int) or entry.get(key, 0) < 0:
                raise ValueError(f"exercise {name!r}: {key} is not a count")
    return exercises
