"""File formats. Every reader treats its input as hostile: JSON only (no pickle, no eval), a size
limit and regular files only (:mod:`.files`), any depth without recursion (:mod:`.jsonio`), shapes
and number ranges checked. Every writer writes atomically through a temporary file of its own."""

from __future__ import annotations

import os
from typing import Any

from deuteron.formats import jsonio
from deuteron.formats.files import FormatError, OutputError, read_bytes

__all__ = ["FormatError", "OutputError", "load_json", "parse_json"]


def load_json(path: str | os.PathLike[str], what: str = "profile") -> Any:
    """Parse a JSON file, checked for size and kind first; any problem is one FormatError line."""
    return parse_json(read_bytes(path, what), path)


def parse_json(data: bytes, path: str | os.PathLike[str]) -> Any:
    """JSON already read (see :func:`load_json`)."""
    try:
        return jsonio.loads(data)
    except jsonio.NotText as exc:
        raise FormatError(f"{path}: {exc}") from None
    except jsonio.JSONError as exc:
        raise FormatError(f"{path}: not valid JSON ({exc})") from None
