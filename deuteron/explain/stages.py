"""Each IR stage, line by line, with the Python source line(s) every IR line came from.

A source location is a chain of frames, innermost first: an op inlined from a helper carries the
helper's line and the kernel line that called it, so ``--line`` finds it from either.
Formats read: MLIR ``loc(...)`` (TTIR, TTGIR), LLVM ``!dbg`` + ``DILocation`` (LLVM IR), PTX
``.loc``/``.file``, and SASS through the PTX line table (see :mod:`.sass`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from deuteron.explain.sass import Instruction

Frame = tuple[str, int]  # (file, line)


@dataclass(frozen=True)
class IRLine:
    """One line of an IR stage and the source frames it came from, innermost first, so ``--line``
    finds an inlined helper's ops from the helper's line or its caller's."""

    number: int  # 1-based line in the stage's text
    text: str
    frames: tuple[Frame, ...]  # innermost first; empty when the line has no location


def same_file(a: str, b: str) -> bool:
    return a == b or os.path.basename(a) == os.path.basename(b)


def at_line(lines: list[IRLine], file: str, line: int) -> list[IRLine]:
    return [ir for ir in lines if any(same_file(f, file) and n == line for f, n in ir.frames)]


def source_line(ir: IRLine, file: str) -> int | None:
    """The line in ``file`` this IR line belongs to: the innermost frame there."""
    for f, n in ir.frames:
        if same_file(f, file):
            return n
    return None


# --- MLIR ----------------------------------------------------------------------------------------

_LOC_DEF_RE = re.compile(r"^#(loc\d*) = loc\((.*)\)\s*$")
_TRAILING_LOC_RE = re.compile(r"\sloc\((.*)\)\s*$")
_FILELOC_RE = re.compile(r'^"([^"]+)":(\d+):(\d+)$')
_NAMED_RE = re.compile(r'^"[^"]*"\((.*)\)$')
_CALLSITE_RE = re.compile(r"^callsite\((.*) at (.*)\)$")
_REF_RE = re.compile(r"^#(loc\d*)$")
_FUSED_RE = re.compile(r"^fused(?:<[^>]*>)?\[(.*)\]$")


def _split_top(text: str) -> list[str]:
    parts, depth, start, quoted = [], 0, 0, False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "([<":
            depth += 1
        elif not quoted and ch in ")]>":
            depth -= 1
        elif not quoted and ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _resolve(expr: str, defs: dict[str, str], depth: int = 0) -> tuple[Frame, ...]:
    if depth > 50:
        return ()
    expr = expr.strip()
    m = _FILELOC_RE.match(expr)
    if m:
        return ((m.group(1), int(m.group(2))),)
    m = _REF_RE.match(expr)
    if m:
        target = defs.get(m.group(1))
        return _resolve(target, defs, depth + 1) if target is not None else ()
    m = _NAMED_RE.match(expr)
    if m:
        return _resolve(m.group(1), defs, depth + 1)
    m = _CALLSITE_RE.match(expr)
    if m:
        return _resolve(m.group(1), defs, depth + 1) + _resolve(m.group(2), defs, depth + 1)
    m = _FUSED_RE.match(expr)
    if m:
        for part in _split_top(m.group(1)):
            frames = _resolve(part, defs, depth + 1)
            if frames:
                return frames
    return ()


def mlir_lines(text: str) -> list[IRLine]:
    raw = text.splitlines()
    defs = {}
    for line in raw:
        m = _LOC_DEF_RE.match(line)
        if m:
            defs[m.group(1)] = m.group(2)
    out = []
    for i, line in enumerate(raw, start=1):
        if line.startswith("#loc"):
            continue
        m = _TRAILING_LOC_RE.search(line)
        frames = _resolve(m.group(1), defs) if m else ()
        shown = line[: m.start()] if m else line
        out.append(IRLine(i, shown, frames))
    return out


# --- LLVM IR -------------------------------------------------------------------------------------

_DBG_RE = re.compile(r"!dbg !(\d+)")
# ``!7 = distinct !DILocation(line: 3, scope: !5)``: a node's number, its kind, its fields
_DI_NODE_RE = re.compile(r"^!(\d+) = (?:distinct )?!(DILocation|DISubprogram|DIFile)\((.*)\)\s*$")
_FIELD_RE = re.compile(r"(\w+): (!\d+|\d+|\"[^\"]*\")")


def llir_lines(text: str) -> list[IRLine]:
    raw = text.splitlines()
    locs: dict[str, dict[str, str]] = {}
    subs: dict[str, dict[str, str]] = {}
    files: dict[str, str] = {}
    for line in raw:
        if (m := _DI_NODE_RE.match(line)) is None:
            continue
        node, kind, fields = m.group(1), m.group(2), dict(_FIELD_RE.findall(m.group(3)))
        if kind == "DIFile":
            files[node] = fields.get("filename", "").strip('"')
        else:
            (locs if kind == "DILocation" else subs)[node] = fields

    def chain(node: str) -> tuple[Frame, ...]:
        frames: list[Frame] = []
        seen = set()
        while node in locs and node not in seen:
            seen.add(node)
            loc = locs[node]
            sub = subs.get(loc.get("scope", "").lstrip("!"), {})
            file = files.get(sub.get("file", "").lstrip("!"), "")
            if loc.get("line", "0") != "0":
                frames.append((file, int(loc["line"])))
            node = loc.get("inlinedAt", "").lstrip("!")
        return tuple(frames)

    out = []
    for i, line in enumerate(raw, start=1):
        if line.startswith("!"):
            continue
        m = _DBG_RE.search(line)
        out.append(IRLine(i, line, chain(m.group(1)) if m else ()))
    return out


# --- PTX -----------------------------------------------------------------------------------------

_PTX_FILE_RE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s*,.*|\s+"([^"]*)")?')
_PTX_LOC_RE = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_PTX_INLINED_RE = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
# Older PTX (Triton 3.6's LLVM) has no ``inlined_at``: the chain is only in LLVM's comment,
# ``// standard.py:263:15 @[ standard.py:293:36 @[ k.py:21:16 ] ]``, files by their base names.
_PTX_COMMENT_FRAME_RE = re.compile(r"([^\s@\[\]]+):(\d+):\d+")


def ptx_lines(text: str) -> list[IRLine]:
    """Each PTX line under the ``.loc`` before it, its ``inlined_at`` chain followed to the kernel.

    An inline-asm block (Triton's loads and stores, libdevice's ``mad.lo.cc`` carries) is one
    operation: LLVM gives each of its text lines the next source line (a ``.loc`` per line, 27, 28,
    29 for a call on line 27) and those ``.loc`` stay in force after the block, so the block and
    what follows it keep the ``.loc`` before the block (the first one inside when there is none).
    An ``inlined_at`` call site names a location, not an instance: it is the latest ``.loc`` of that
    location, which LLVM prints just before the inlined code (two ``tl.sum`` calls are two chains).
    PTX without ``inlined_at`` (before PTX 7.2's syntax was used) gives the chain in the comment.
    """
    raw = text.splitlines()
    files: dict[str, str] = {}
    for line in raw:
        if m := _PTX_FILE_RE.match(line):
            files[m.group(1)] = os.path.join(m.group(2), m.group(3)) if m.group(3) else m.group(2)
    out = []
    current: tuple[Frame, ...] = ()
    chains: dict[tuple[str, int, int], tuple[Frame, ...]] = {}
    before_asm: tuple[Frame, ...] | None = None  # the location in force where an asm block began
    for i, line in enumerate(raw, start=1):
        stripped = line.strip()
        if stripped == "// begin inline asm":
            before_asm = current
        elif stripped == "// end inline asm" and before_asm is not None:
            current, before_asm = before_asm or current, None
        m = _PTX_LOC_RE.match(line)
        if m:
            if before_asm is None or (not before_asm and current == ()):
                n = int(m.group(2))
                frames = [(files.get(m.group(1), ""), n)] if n else []
                # ``.loc 2 287 12, function_name $L..., inlined_at 2 314 12``: a helper's line, then the
                # call site, whose own chain (it may be inlined too) an earlier ``.loc`` gave.
                for f, ln, col in _PTX_INLINED_RE.findall(line):
                    site = (f, int(ln), int(col))
                    frames += list(chains.get(site, ((files.get(f, ""), int(ln)),)))
                if "inlined_at" not in line and "@[" in line:
                    frames = _comment_chain(line.split("//", 1)[-1], files)
                current = tuple(frames)
                chains[(m.group(1), n, int(m.group(3)))] = current
            continue
        out.append(IRLine(i, line, current if stripped and not stripped.startswith("//") else ()))
    return out


def _comment_chain(comment: str, files: dict[str, str]) -> list[Frame]:
    """The frames of LLVM's ``file:line:col @[ caller @[ ... ] ]`` comment, innermost first, each
    base name resolved to its ``.file`` path (kept as it is when no ``.file`` has it)."""
    by_name = {os.path.basename(path): path for path in files.values()}
    return [(by_name.get(name, name), int(n)) for name, n in _PTX_COMMENT_FRAME_RE.findall(comment) if int(n)]


def sass_lines(instrs: list[Instruction], ptx: list[IRLine]) -> list[IRLine]:
    by_ptx = {ir.number: ir.frames for ir in ptx}
    return [
        IRLine(n, f"/*{ins.offset:04x}*/ {ins.text}", by_ptx.get(ins.ptx_line or -1, ()))
        for n, ins in enumerate(instrs, start=1)
    ]
