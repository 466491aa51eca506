"""One captured specialization compiled for its target (by :mod:`deuteron.triton.compiler.compile`), and
what came out: the stages, the binary, the metadata and, when asked, the MLIR passes run."""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass, field
from typing import Any

from deuteron.explain.capture import Specialization
from deuteron.explain.errors import KernelCompileError
from deuteron.triton.compiler import compile as compiler

STAGES = ("ttir", "ttgir", "llir", "ptx", "amdgcn")
_AT_RE = re.compile(r"^at (\d+):(\d+):")


@dataclass
class PassDump:
    """One pass run, as MLIR's ``IR Dump Before`` log shows it: the IR the pass was given, on its
    scope. The IR after is not stored: it is the next dump's (:func:`ir_after`), so a long pass
    log is kept once, not twice."""

    index: int
    name: str  # "TritonGPURemoveLayoutConversions"
    scope: str  # "builtin.module" or "tt.func @name"
    ir_before: str


@dataclass
class Compiled:
    """One specialization compiled: Triton's ``asm`` by stage, its metadata and, if asked, the passes.

    ``asm`` mixes text stages (str) with binaries (cubin, hsaco: bytes); :meth:`text` and
    :meth:`binary` do the type check so no caller reads one as the other.
    """

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


def compile_spec(spec: Specialization, passes: bool = False) -> Compiled:
    try:
        result = compiler.compile_kernel(
            spec.fn,
            spec.signature,
            spec.constexprs,
            spec.attrs,
            spec.target.gpu_target(),
            dict(spec.options.__dict__),
            spec.file,
            passes=passes,
        )
    except compiler.CompileFailure as failure:
        raise _compile_error(spec, failure) from None
    dumps = parse_pass_dump(result.pass_log) if passes else []
    return Compiled(spec, result.asm, result.metadata, dumps)


def _compile_error(spec: Specialization, failure: compiler.CompileFailure) -> KernelCompileError:
    """The compiler's own message, placed at the file line it names."""
    def_line = _def_line(spec.file, failure.source) if failure.source else None
    rel = failure.line_in_source
    line = def_line + rel - 1 if def_line and rel else None
    return KernelCompileError(spec.name, failure.message, spec.file, line)


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
