"""Triton's real compiler, for one kernel specialization and one target (no GPU needed).

Touches (triton 3.6 to 3.9): ``triton.compile(ASTSource(fn, signature, constexprs, attrs),
target=GPUTarget, options=...)`` and the ``asm`` dict of the result (``ttir``, ``ttgir``, ``llir``,
``ptx``, ``cubin`` on CUDA; ``amdgcn``, ``hsaco`` on AMD). With ``passes=True`` the MLIR pass
manager prints the IR before every pass (``MLIR_ENABLE_DUMP=1``) to the C++ stderr, which is
caught on file descriptor 2.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from deuteron.triton import quiet_compile_notice


@dataclass
class CompileResult:
    """One compile's output in plain types: the ``asm`` dict by stage, the metadata as a dict
    (Triton gives a namedtuple or an object, by version) and the pass log ("" unless asked), so
    :mod:`deuteron.explain` never holds Triton's own objects."""

    asm: dict[str, Any]
    metadata: dict[str, Any]
    pass_log: str  # the IR dumps, when passes were asked for


class CompileFailure(Exception):  # noqa: N818 - carries the compiler's facts to the caller
    """Triton rejected the kernel: its message, and the line within the kernel's source it names
    (1-based from the ``def``'s decorator-less source, None when unknown)."""

    def __init__(self, message: str, line_in_source: int | None, source: str) -> None:
        super().__init__(message)
        self.message = message
        self.line_in_source = line_in_source
        self.source = source


@contextmanager
def stderr_to(path: str) -> Iterator[None]:
    """The process's own stderr (fd 2, where MLIR prints its diagnostics) into ``path`` meanwhile."""
    with _stderr_to(path):
        yield


@contextmanager
def _stderr_to(path: str) -> Iterator[None]:
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


@contextmanager
def _env(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def compile_kernel(
    fn: Any,
    signature: dict[str, Any],
    constexprs: dict[Any, Any],
    attrs: dict[Any, Any],
    target: Any,
    options: dict[str, Any],
    source_file: str,
    passes: bool = False,
) -> CompileResult:
    """Compile; raises :class:`CompileFailure` with the compiler's own words when Triton refuses."""
    import triton
    from triton.compiler import ASTSource

    quiet_compile_notice()
    src = ASTSource(fn, signature, constexprs, attrs)
    dump_text = ""
    try:
        if passes:
            # A private cache: the pass log only appears when the passes really run, and a compile
            # made with dumping on must not replace the user's cached kernel.
            with tempfile.TemporaryDirectory() as tmp:
                log = os.path.join(tmp, "passes.txt")
                env = {"MLIR_ENABLE_DUMP": "1", "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": tmp}
                with _env(**env), _stderr_to(log):
                    kernel = triton.compile(src, target=target, options=options)
                with open(log, encoding="utf-8", errors="replace") as f:
                    dump_text = f.read()
        else:
            kernel = triton.compile(src, target=target, options=options)
            if not _located_in(kernel.asm.get("ttir"), source_file):
                # Triton's cache is keyed on the source text, not its file: a kernel cached from a
                # copy in another file, or built without line info, would map nothing here.
                with (
                    tempfile.TemporaryDirectory() as tmp,
                    _env(TRITON_CACHE_DIR=tmp, TRITON_ALWAYS_COMPILE="1"),
                ):
                    kernel = triton.compile(src, target=target, options=options)
    except Exception as exc:
        raise _failure(exc) from None
    meta = kernel.metadata
    metadata = meta._asdict() if hasattr(meta, "_asdict") else dict(vars(meta))
    return CompileResult(dict(kernel.asm), metadata, dump_text)


_FILE_LOC_RE = re.compile(r'^#loc\d* = loc\("([^"]+)":\d+:\d+\)', re.M)


def _located_in(ttir: object, file: str) -> bool:
    """Whether the TTIR's operations carry source locations, in this very file."""
    if not isinstance(ttir, str) or re.search(r"^\s+%\S+ = .* loc\(", ttir, re.M) is None:
        return False
    want = os.path.realpath(file)  # the same file reached through a link counts as this one
    return any(os.path.realpath(f) == want for f in _FILE_LOC_RE.findall(ttir))


def _failure(exc: Exception) -> CompileFailure:
    """The compiler's own message and the line within the kernel's source it names."""
    from triton.compiler.errors import CompilationError

    if not isinstance(exc, CompilationError):
        first = str(exc).strip().splitlines()
        return CompileFailure(first[-1] if first else type(exc).__name__, None, "")
    src = getattr(exc, "src", None) or ""
    node = getattr(exc, "node", None)
    rel = getattr(node, "lineno", None)
    message = (getattr(exc, "error_message", None) or "").strip()
    if not message:
        cause = exc.__cause__
        message = f"{type(cause).__name__}: {cause}" if cause else str(exc).splitlines()[-1]
    message = message.splitlines()[-1] if message else "compilation failed"
    return CompileFailure(message, rel, src)
