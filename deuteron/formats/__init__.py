"""File formats. Every reader treats its input as hostile: JSON only, shapes checked, no pickle."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from ..model.errors import DeuteronError

# Each tree level is two JSON levels (node object, children list); Python's default limit of
# 1000 would stop at a few hundred frames deep, so json gets more room while it works.
_JSON_RECURSION_LIMIT = 20000


@contextlib.contextmanager
def deep_json() -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, _JSON_RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


class FormatError(DeuteronError, ValueError):
    """A file that is not what it claims to be; the message names the file and the problem."""


def load_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file; orjson (several times faster on large profiles) first, json for the rest.

    json handles what orjson refuses (NaN literals, integers beyond 64 bits, nesting beyond
    orjson's fixed limit) and gives the line and column of a syntax error.
    """
    try:
        with open(path, "rb") as fb:
            raw = fb.read()
    except FileNotFoundError:
        raise FormatError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise FormatError(f"{path}: is a directory, not a profile") from None
    except PermissionError:
        raise FormatError(f"{path}: permission denied") from None
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency, this is a fallback
        pass
    else:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not a text file (expected JSON)") from None
    try:
        with deep_json():
            return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise FormatError(f"{path}: JSON nested too deeply to read") from None
