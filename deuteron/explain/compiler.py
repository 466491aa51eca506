"""Compile one captured specialization for its target with Triton's real compiler (no GPU needed).

Touches Triton's compiler internals (triton 3.6 to 3.9): ``triton.compile(ASTSource(fn,
signature, constexprs, attrs), target=GPUTarget, options=...)`` and the ``asm`` dict of the
result (``ttir``, ``ttgir``, ``llir``, ``ptx``, ``cubin`` on CUDA; ``amdgcn``, ``hsaco`` on AMD).
With ``passes=True`` the MLIR pass manager prints the IR before every pass
(``MLIR_ENABLE_DUMP=1``) to the C++ stderr, which we catch on file descriptor 2.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .capture import Specialization
from .errors import KernelCompileError

STAGES = ("ttir", "ttgir", "llir", "ptx", "amdgcn")
_AT_RE = re.compile(r"^at (\d+):(\d+):")


@dataclass
class PassDump:
    index: int
    name: str  # "TritonGPURemoveLayoutConversions"
    scope: str  # "builtin.module" or "tt.func @name"
    ir_before: str


@dataclass
class Compiled:
    spec: Specialization
    asm: dict[str, Any]
    metadata: dict[str, Any]
    passes: list[PassDump] = field(default_factory=list)

    def text(self, stage: str) -> str | None:
        value = self.asm.get(stage)
        return value if isinstance(value, str) else None

    def binary(self) -> bytes | None:
        for key in ("cubin", "hsaco"):
            value = self.asm.get(key)
            if isinstance(value, bytes):
                return value
        return None


@contextmanager
def _stderr_to(path: str) -> Any:
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
def _env(**values: str) -> Any:
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


def compile_spec(spec: Specialization, passes: bool = False) -> Compiled:
    import triton
    from triton.compiler import ASTSource

    src = ASTSource(spec.fn, spec.signature, spec.constexprs, spec.attrs)
    options = dict(spec.options.__dict__)
    dump_text = ""
    try:
        if passes:
            # A private cache: the pass log only appears when the passes really run, and a compile
            # made with dumping on must not replace the user's cached kernel.
            with tempfile.TemporaryDirectory() as tmp:
                log = os.path.join(tmp, "passes.txt")
                env = {"MLIR_ENABLE_DUMP": "1", "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": tmp}
                with _env(**env), _stderr_to(log):
                    kernel = triton.compile(src, target=spec.target.gpu_target(), options=options)
                with open(log, encoding="utf-8", errors="replace") as f:
                    dump_text = f.read()
        else:
            kernel = triton.compile(src, target=spec.target.gpu_target(), options=options)
            if not _located_in(kernel.asm.get("ttir"), spec.file):
                # Triton's cache is keyed on the source text, not its file: a kernel cached from a
                # copy in another file, or built without line info, would map nothing here.
                with (
                    tempfile.TemporaryDirectory() as tmp,
                    _env(TRITON_CACHE_DIR=tmp, TRITON_ALWAYS_COMPILE="1"),
                ):
                    kernel = triton.compile(src, target=spec.target.gpu_target(), options=options)
    except Exception as exc:
        raise _compile_error(spec, exc) from None
    meta = kernel.metadata
    metadata = meta._asdict() if hasattr(meta, "_asdict") else dict(vars(meta))
    return Compiled(spec, dict(kernel.asm), metadata, parse_pass_dump(dump_text) if passes else [])


_FILE_LOC_RE = re.compile(r'^#loc\d* = loc\("([^"]+)":\d+:\d+\)', re.M)


def _located_in(ttir: object, file: str) -> bool:
    """Whether the TTIR's operations carry source locations, in this very file."""
    if not isinstance(ttir, str) or re.search(r"^\s+%\S+ = .* loc\(", ttir, re.M) is None:
        return False
    want = os.path.abspath(file)
    return any(os.path.abspath(f) == want for f in _FILE_LOC_RE.findall(ttir))


def _compile_error(spec: Specialization, exc: Exception) -> KernelCompileError:
    """The compiler's own message, placed at the file line it names."""
    from triton.compiler.errors import CompilationError

    if not isinstance(exc, CompilationError):
        first = str(exc).strip().splitlines()
        return KernelCompileError(spec.name, first[-1] if first else type(exc).__name__, spec.file, None)
    src = getattr(exc, "src", None) or ""
    node = getattr(exc, "node", None)
    rel = getattr(node, "lineno", None)
    message = (getattr(exc, "error_message", None) or "").strip()
    if not message:
        cause = exc.__cause__
        message = f"{type(cause).__name__}: {cause}" if cause else str(exc).splitlines()[-1]
    message = message.splitlines()[-1] if message else "compilation failed"
    def_line = _def_line(spec.file, src)
    line = def_line + rel - 1 if def_line and rel else None
    return KernelCompileError(spec.name, message, spec.file, line)


def _def_line(path: str, src: str) -> int | None:
    first = next((s.strip() for s in src.splitlines() if s.strip().startswith("def ")), None)
    if first is None:
        return None
    for i, text in enumerate(linecache.getlines(path), start=1):
        if text.strip() == first:
            return i
    return None


_DUMP_RE = re.compile(
    r"^// -----// IR Dump Before (\S+?):?(?: .*?)? \('([^']+)' operation(?:: @([^)]*))?\) //----- //$"
)


def parse_pass_dump(text: str) -> list[PassDump]:
    """Split MLIR's ``IR Dump Before`` log into one entry per pass run."""
    out: list[PassDump] = []
    name = scope = None
    body: list[str] = []
    for raw in text.splitlines():
        m = _DUMP_RE.match(raw)
        if m:
            if name is not None and scope is not None:
                out.append(PassDump(len(out), name, scope, "\n".join(body).strip() + "\n"))
            name = m.group(1)
            scope = m.group(2) + (f" @{m.group(3)}" if m.group(3) else "")
            body = []
        elif name is not None:
            body.append(raw)
    if name is not None and scope is not None:
        out.append(PassDump(len(out), name, scope, "\n".join(body).strip() + "\n"))
    return out


def ir_after(compiled: Compiled, index: int) -> str:
    """The IR a pass left: the next dump of the same scope, else of the module, else the last stage."""
    dumps = compiled.passes
    scope = dumps[index].scope
    for d in dumps[index + 1 :]:
        if d.scope == scope:
            return d.ir_before
    for d in dumps[index + 1 :]:
        if d.scope == "builtin.module":
            return d.ir_before
    return compiled.text("llir") or compiled.text("ttgir") or ""
