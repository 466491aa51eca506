"""The check of every profile and trace a test writes (issue 39), for ``tests/conftest.py``'s hook.

After a test that used ``tmp_path``, the files it left there that are profiles or traces
(``*.hatchet``, ``*.hatchet_msgpack``, ``*.chrome_trace``, ``*.json`` that holds one) are checked
with ``deuteron view --check``'s own checker (:mod:`deuteron.view.doctor`). A file that is none
of them, or cannot be read (the readers' tests damage files on purpose), is left alone: only
files a user would read back are judged. Kept cheap, since it runs after every test: only a
file's first bytes decide whether it is read at all, and files over :data:`MAX_BYTES` are skipped.

A test that writes a broken file on purpose says so with ``@pytest.mark.broken_profile``. A copy
of a recorded fixture (the rank files, unzipped into ``tmp_path`` by many tests) is not a file
the test wrote: it is judged once, as recorded, by ``tests/view/test_doctor.py``, and skipped here
(:func:`is_recorded`, by size first, so other files cost one ``stat``). ``DEUTERON_CHECK_WRITTEN=0``
turns the check off (to measure what it costs).
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import os
import stat
from pathlib import Path

from deuteron.model.errors import DeuteronError
from deuteron.view import doctor
from tests.helpers.paths import FIXTURES_DIR

MAX_BYTES = 4 << 20  # a profile a test writes is small; a bigger file is a benchmark's, not checked
SUFFIXES = (".hatchet", ".hatchet_msgpack", ".hatchet_stream", ".chrome_trace", ".json")
SWITCH = "DEUTERON_CHECK_WRITTEN"


@functools.cache
def _recorded_sizes() -> dict[int, list[Path]]:
    """The recorded fixtures that are profiles or traces, by their size as written (a gzipped
    one's from its trailer: the size mod 2**32, enough to rule a file out)."""
    sizes: dict[int, list[Path]] = {}
    for path in FIXTURES_DIR.rglob("*"):
        name = path.name.removesuffix(".gz")
        if not path.is_file() or not name.endswith(SUFFIXES):
            continue
        if path.suffix == ".gz":
            with open(path, "rb") as f:
                f.seek(-4, os.SEEK_END)
                size = int.from_bytes(f.read(4), "little")
        else:
            size = path.stat().st_size
        sizes.setdefault(size, []).append(path)
    return sizes


@functools.cache
def _recorded_bytes(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


def is_recorded(path: Path, size: int) -> bool:
    """Whether the file is a byte-for-byte copy of a recorded fixture."""
    same_size = _recorded_sizes().get(size % (1 << 32), [])
    if not same_size:
        return False
    data = path.read_bytes()
    return any(_recorded_bytes(fixture) == data for fixture in same_size)


def checking() -> bool:
    """Whether the hook checks written files (on unless ``DEUTERON_CHECK_WRITTEN=0``)."""
    return os.environ.get(SWITCH, "1") != "0"


def written(folder: Path) -> list[Path]:
    """The candidate files under ``folder``: regular files only, symlinks (the docs test's
    ``examples/``) not followed."""
    out = []
    for top, _dirs, files in os.walk(folder):
        for name in files:
            if name.endswith(SUFFIXES):
                path = Path(top) / name
                with contextlib.suppress(OSError):
                    if stat.S_ISREG(path.lstat().st_mode):  # no link, FIFO (the hostile tests') or device
                        out.append(path)
    return sorted(out)


def broken_written_files(folder: Path) -> list[str]:
    """The report lines of every profile or trace under ``folder`` that breaks a rule; empty when
    all keep them."""
    lines: list[str] = []
    for path in written(folder):
        try:
            size = path.stat().st_size
            if size > MAX_BYTES or not doctor.is_checkable(path) or is_recorded(path, size):
                continue
            check = doctor.check_file(path)
        except (DeuteronError, OSError):
            continue  # not a profile or trace, or damaged on purpose: the readers' tests judge those
        if check.audit.violations:
            shown, _ok = doctor.report([check], limit=5)
            lines.extend(shown)
    return lines
