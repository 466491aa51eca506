"""Text from files and programs made safe to print: names, paths and messages are data, never
terminal commands.

A frame name read from a profile can hold an escape sequence (clear the screen, set the window
title, recolour), a newline (forging an extra row with a fake value), a bidirectional override
(reordering what a line appears to say) or a lone surrogate (which no terminal encoding can
write). :func:`printable` shows each such character as a visible escape (``\\x1b``, ``\\n``,
``\\u202e``, ``\\udc80``) and leaves everything else as it is. It is one ``str.translate``, cheap
enough for every row of a 100 000-node tree.
"""

from __future__ import annotations

import os
import sys

_CONTROL = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_SURROGATES = range(0xD800, 0xE000)
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _escape(code: int) -> str:
    if code in _NAMED:
        return _NAMED[code]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


ESCAPES = {code: _escape(code) for code in (*_CONTROL, *_BIDI, *_SURROGATES)}


def printable(text: object) -> str:
    """``text`` (any object, as ``str()``) with every character that could act on a terminal escaped."""
    return str(text).translate(ESCAPES)


def say(message: str) -> None:
    """One line for the user on stderr, escaped: names and paths inside it are data."""
    print(printable(message), file=sys.stderr, flush=True)


def short_path(path: str | os.PathLike[str]) -> str:
    """A path as a person typed it: relative to the working folder when below it, else as given
    (reports, the debugger's banner and ``deuteron learn`` show files this one way)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)
    return rel if not rel.startswith("..") else str(path)
