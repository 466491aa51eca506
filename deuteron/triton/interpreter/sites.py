"""Where in the user's kernel source the interpreter is right now: the innermost frame that is
neither Triton's nor Deuteron's, interned as a small int in a :class:`SiteTable`.

One table lives while a sanitizer is attached (``reset`` at attach), so it grows with the code
that was checked, not with how long the process runs. Columns come from the code object's
positions; the interpreter re-parses a kernel's source dedented, so columns of rewritten kernels
are shifted back.
"""

from __future__ import annotations

import linecache
import os
import sys
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from deuteron.model.access import Site, SiteTable

_table = SiteTable()
_PACKAGE_DIRS: tuple[str, ...] = ()
_user_code: dict[CodeType, bool] = {}
_positions: dict[CodeType, list[Any]] = {}
_rewritten_codes: set[CodeType] = set()
_rewritten: dict[Any, Any] = {}  # the interpreter's own cache of rewritten functions, once seen
_rewritten_seen = [0]  # its length when last read


def reset() -> SiteTable:
    """A fresh table for a newly attached sanitizer."""
    global _table
    _table = SiteTable()
    return _table


def table() -> SiteTable:
    return _table


def _is_user(filename: str) -> bool:
    global _PACKAGE_DIRS
    if not _PACKAGE_DIRS:
        import triton

        here = str(Path(__file__).resolve().parents[2])  # the deuteron package
        _PACKAGE_DIRS = (os.path.dirname(os.path.abspath(triton.__file__)) + os.sep, here + os.sep)
    return not os.path.abspath(filename).startswith(_PACKAGE_DIRS)


def current_site() -> int:
    """The innermost frame of the user's kernel (or a @jit helper it called) right now, as an id
    into the current table; -1 when no user frame is on the stack."""
    frame = _innermost_user(sys._getframe(1))
    if frame is None:
        return -1
    key = (frame.f_code, frame.f_lasti)
    sid = _table.ids.get(key)
    return sid if sid is not None else _new_site(key, frame)


def _innermost_user(frame: FrameType | None) -> FrameType | None:
    """``frame`` or the first caller of it that runs the user's code (not Triton's, not ours)."""
    while frame is not None:
        code = frame.f_code
        user = _user_code.get(code)
        if user is None:
            user = _user_code[code] = _is_user(code.co_filename)
        if user:
            return frame
        frame = frame.f_back
    return None


def _new_site(key: tuple[CodeType, int], frame: FrameType) -> int:
    code = frame.f_code
    site = _make_site(code, frame.f_lasti, frame.f_lineno or code.co_firstlineno)
    return _table.intern(key, lambda: site)


def note_rewritten(rewritten: dict[Any, Any]) -> None:
    """Learn the code objects the interpreter really runs (``InterpretedFunction.rewritten_fn``)."""
    global _rewritten
    _rewritten = rewritten
    if len(rewritten) != _rewritten_seen[0]:
        _rewritten_seen[0] = len(rewritten)
        _rewritten_codes.update(f.__code__ for f in rewritten.values() if hasattr(f, "__code__"))


def is_kernel_code(code: CodeType) -> bool:
    """Whether ``code`` is a kernel's (or a @jit helper's) as the interpreter runs it. A helper is
    rewritten when first called, mid-launch: the cache is read again when a code is not known."""
    if code in _rewritten_codes:
        return True
    if len(_rewritten) != _rewritten_seen[0]:
        note_rewritten(_rewritten)
        return code in _rewritten_codes
    return False


def user_frame() -> FrameType | None:
    """The innermost frame of the user's code on the stack now (the kernel's, while a program runs;
    the launch's caller once the programs are done), or None."""
    return _innermost_user(sys._getframe(1))


def _make_site(code: CodeType, lasti: int, line: int) -> Site:
    column = end_column = None
    if hasattr(code, "co_positions"):
        positions = _positions.get(code)
        if positions is None:
            positions = _positions[code] = list(code.co_positions())
        i = lasti // 2
        if 0 <= i < len(positions):
            first, last, c0, c1 = positions[i]
            if first == line and c0 is not None:
                # The interpreter re-parses a kernel's source dedented; put the columns back.
                shift = 0
                if code in _rewritten_codes:
                    text = linecache.getline(code.co_filename, code.co_firstlineno)
                    shift = len(text) - len(text.lstrip())
                column = c0 + shift
                end_column = c1 + shift if (last == line and c1 is not None) else None
    return Site(file=code.co_filename, line=line, function=code.co_name, column=column, end_column=end_column)
