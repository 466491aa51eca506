"""What the two ``.npz`` records share (:mod:`.access_record`, :mod:`.launch_record`): a zip of
NumPy arrays with a JSON header, read from files that may be hostile. The members and their
inflated size are checked before anything is inflated, arrays are loaded without pickles, and the
header is decoded and must name its format; each failure is one line (FormatError)."""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deuteron.formats import FormatError, jsonio
from deuteron.formats.files import MAX_BYTES_ENV, max_bytes


def checked_members(path: str | Path, bad: str, allowed: Callable[[set[str]], bool]) -> set[str]:
    """The zip's member names, once ``allowed`` accepts them (each once) and their inflated size
    is within the size limit."""
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except Exception as exc:  # zipfile on hostile bytes: any failure means "not a record"
        raise FormatError(f"{bad} ({type(exc).__name__}: {str(exc)[:200]})") from None
    names = {info.filename for info in infos}
    if not allowed(names) or len(infos) != len(names):
        raise FormatError(f"{bad} (members {sorted(names)[:5]})")
    total = sum(info.file_size for info in infos)
    if total > max_bytes():
        raise FormatError(
            f"{bad}: it would inflate to {total:,} bytes, more than the limit of {max_bytes():,} "
            f"(raise it with {MAX_BYTES_ENV}=BYTES)"
        )
    return names


def load_arrays(path: str | Path, bad: str, names: Sequence[str]) -> list[np.ndarray]:
    """The named arrays (no pickles)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return [data[name] for name in names]
    except Exception as exc:  # zipfile, zlib and NumPy on hostile bytes
        raise FormatError(f"{bad} ({type(exc).__name__}: {str(exc)[:200]})") from None


def json_header(raw: np.ndarray, bad: str, fmt: str) -> dict[str, Any]:
    """The header array decoded: UTF-8 JSON bytes of an object whose ``format`` is ``fmt``."""
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise FormatError(f"{bad}: its header is not UTF-8 JSON bytes")
    try:
        header = jsonio.loads(raw.tobytes())
    except jsonio.JSONError as exc:
        raise FormatError(f"{bad}: its header is not JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != fmt:
        found = header.get("format") if isinstance(header, dict) else type(header).__name__
        raise FormatError(f"{bad} (format {found!r})")
    return header
