"""Load a learner's file and find its kernel; every way that can fail is one line.

The file is compiled and run here, not imported: no ``__pycache__`` next to it (whose timestamp
check could hand back the previous version of a file edited twice in one second), and a fresh
module at each check, so a notebook that checks again after an edit sees the edit.
"""

from __future__ import annotations

import itertools
import linecache
import os
import sys
import traceback
import types
from pathlib import Path
from typing import Any

from deuteron.learn.errors import LearnError
from deuteron.process.terminal import printable, short_path

_LOADS = itertools.count()
MAX_SOURCE = 1 << 20  # a kernel file is a few kilobytes; this is a wrong file


def load_kernel(path: str | os.PathLike[str], name: str) -> Any:
    """The ``@triton.jit`` function ``name`` of the file at ``path``; LearnError if the file is
    missing, unreadable, not Python, raises while it runs, or lacks that kernel."""
    file = Path(path)
    shown = short_path(file)
    if not file.exists():
        raise LearnError(f"{shown}: no such file ('deuteron learn start N' writes the starter)")
    if not file.is_file():
        raise LearnError(f"{shown} is not a file")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise LearnError(f"{shown}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_SOURCE:
        raise LearnError(f"{shown}: {len(data):,} bytes is not a kernel file")
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LearnError(f"{shown}: not UTF-8 text") from None
    full = str(file.resolve())
    try:
        code = compile(source, full, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise LearnError(f"{shown}:{exc.lineno}: syntax error: {printable(exc.msg)}") from None
    except ValueError as exc:  # NUL bytes
        raise LearnError(f"{shown}: not Python source ({exc})") from None
    linecache.checkcache(full)  # Triton and the checker read the kernel's lines through linecache
    module = types.ModuleType(f"deuteron_learn_{next(_LOADS)}_{file.stem.replace('-', '_')}")
    module.__file__ = full
    sys.modules[module.__name__] = module  # inspect.getsource (Triton's) looks the module up
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as exc:
        raise LearnError(f"{describe(exc, full)} (while loading the file)") from None
    kernel = getattr(module, name, None)
    if kernel is None:
        raise LearnError(
            f"{shown} has no function {name}: the exercise checks the @triton.jit kernel of that name"
        )
    if not (hasattr(kernel, "fn") and hasattr(kernel, "__getitem__")):
        raise LearnError(f"{name} in {shown} is not a @triton.jit kernel (decorate it with @triton.jit)")
    return kernel


def describe(exc: BaseException, file: str) -> str:
    """One line for an exception raised by the learner's code: the innermost line of their file
    that it passed through, the exception's type and the first line of its message. Triton's
    interpreter wraps a kernel's exception (``InterpreterError(repr(e)) from e``): the cause is
    the one told."""
    while exc.__cause__ is not None and type(exc).__name__ == "InterpreterError":
        exc = exc.__cause__
    where = ""
    target = os.path.realpath(file)
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if os.path.realpath(frame.filename) == target:
            where = f"{short_path(file)}:{frame.lineno}: "
            break
    message = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    if len(message) > 300:
        message = message[:297] + "..."
    return printable(f"{where}{type(exc).__name__}" + (f": {message}" if message else ""))
