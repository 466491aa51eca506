"""Sampled PCs as a person reads them: each SASS offset's instruction, PTX line and the line of the
kernel it belongs to, and the samples of a kernel summed per line (the rows ``--sample`` files
under the kernel: Proton's ``file:line@kernel`` frames, with inlined callees below them).

The map is the one ``deuteron explain`` shows, built from the cubin's own PTX line table
(``nvdisasm -c -gp``) and the PTX ``.loc`` directives (see :mod:`.sass` and :mod:`.stages`); it
needs no GPU, so a recorded drain replays into the same rows in CI. Each instruction is then
*placed* on one line of the kernel (:attr:`PcSite.placed` says how), because the debug info
alone puts many instructions where a person would not look for them:

- **inlined code** (``tl.sum``, ``tl.max``, a helper of yours) carries the callee's line first and
  the kernel's line last (``standard.py:287`` inlined at ``standard.py:314`` inlined at
  ``k.py:21``). The instruction goes on the *outermost* line in your source (the kernel's line
  ``k.py:21``), and the inlined frames go below it as child frames, outermost first, each named
  ``function (file:line)``: ``k.py:21@kernel > tl.sum (standard.py:314) > _sum_combine
  (standard.py:287)``. Triton's own package and libdevice are not your source; the kernel's
  file always is. libdevice (``tl.sin``, ``tl.exp`` through ``tl.math``/``libdevice``) has no
  debug info of its own: LLVM gives its inlined body the call's location, so those
  instructions are on the calling line already, with no child to tell them from the line's
  arithmetic.
- **no location** (PTX ``.loc`` with line 0, which LLVM writes for code merged from several
  lines, or code before the first ``.loc``): the instruction goes on the line of the nearest
  located instruction of its SASS basic block (ties: the one before), since a block runs as a
  whole; what is still unplaced keeps ``<no source line>``, and the file says its share.
"""

from __future__ import annotations

import linecache
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from deuteron.explain.errors import ExplainError
from deuteron.explain.sass import Instruction, basic_blocks, disassemble, run_tool
from deuteron.explain.stages import Frame, ptx_lines, sass_lines
from deuteron.model.intra import ScopeRow
from deuteron.model.names import source_frame

NO_LINE = "<no source line>"  # PCs of a kernel with a line table whose instruction has no line
# nvdisasm -gi's line markers, one per frame of an inlined chain, innermost first:
# ``//## File "std.py", line 287 inlined at "std.py", line 314``, ..., ``//## File "k.py", line 21``
_SOURCE_RE = re.compile(r'^\s*//## File "([^"]*)", line (\d+)')
_OFFSET_RE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/")
# Triton's own package (its language, libraries and runtime, installed or from a checkout) and
# libdevice: code there is not the user's, so a line there is a callee, never the sampled line.
_LIBRARY_RE = re.compile(
    r"(?:^|/)(?:site|dist)-packages/triton/"
    r"|(?:^|/)triton/(?:language|experimental|runtime|compiler|tools|backends|_internal_testing)/"
    r"|libdevice"
)
_DEF_RE = re.compile(r"^(\s*)def\s+(\w+)\s*\(")

# How an instruction got its line (:attr:`PcSite.placed`), in the file's ``placement`` counts.
ON_LINE = "line"  # its own location is a line of the kernel
INLINED = "inlined"  # its location is inlined code; the chain led to the kernel's line
IN_BLOCK = "block"  # no usable location: its basic block's nearest located instruction's line
UNPLACED = "none"  # neither: it stays on <no source line>
PLACEMENTS = (ON_LINE, INLINED, IN_BLOCK, UNPLACED)


@dataclass(frozen=True)
class PcSite:
    """One SASS instruction of a kernel: its offset, text, PTX line, its source frames as the
    debug info gives them (innermost first), and where it is placed: the kernel's ``line`` and
    the inlined ``callees`` between that line and the instruction (outermost first)."""

    offset: int
    sass: str
    ptx_line: int | None
    frames: tuple[Frame, ...]
    line: Frame | None = None
    callees: tuple[Frame, ...] = ()
    placed: str = UNPLACED

    @property
    def source(self) -> Frame | None:
        """The line the instruction's samples go to (None: ``<no source line>``)."""
        return self.line


def is_library_file(path: str) -> bool:
    """Whether ``path`` is Triton's own code or libdevice (an unnamed file counts as theirs)."""
    return not path or _LIBRARY_RE.search(path.replace(os.sep, "/")) is not None


def kernel_file(chains: list[tuple[Frame, ...]]) -> str:
    """The kernel's own file: the commonest outermost frame's file outside Triton's package (the
    kernel's body is the outermost function of every complete chain), or inside it when every
    chain ends there (Triton's own kernels). It counts as the user's even inside Triton's
    package, so Triton's own kernels get lines too."""
    outer = [frames[-1][0] for frames in chains if frames]
    files = Counter(f for f in outer if not is_library_file(f)) or Counter(outer)
    return files.most_common(1)[0][0] if files else ""


def split_frames(frames: tuple[Frame, ...], kernel: str) -> tuple[Frame | None, tuple[Frame, ...]]:
    """The line an instruction's chain (innermost first) is placed on and the inlined frames below
    it (outermost first): the outermost frame in the user's source, or None when the chain has
    none (a location only in Triton's code, whose call site the PTX did not give)."""
    for i in range(len(frames) - 1, -1, -1):
        file = frames[i][0]
        if file == kernel or not is_library_file(file):
            return frames[i], tuple(reversed(frames[:i]))
    return None, tuple(reversed(frames))


@lru_cache(maxsize=4096)
def callee_frame(file: str, line: int) -> str:
    """A child frame's name for an inlined callee's line: ``function (file:line)``, the function
    being the ``def`` around that line in the file (``tl.`` before a public one of Triton's
    language); ``file:line`` alone when the file cannot be read here (a replay elsewhere)."""
    where = f"{os.path.basename(file)}:{line}"
    lines = linecache.getlines(file) if file else []
    if not 0 < line <= len(lines):
        return where
    text = lines[line - 1]
    indent = len(text) - len(text.lstrip())
    for i in range(line - 1, -1, -1):
        m = _DEF_RE.match(lines[i])
        if m and (len(m.group(1)) < indent or i == line - 1):
            name = m.group(2)
            in_language = "/triton/language/" in file.replace(os.sep, "/")
            return f"{'tl.' if in_language and not name.startswith('_') else ''}{name} ({where})"
    return where


Split = tuple[Frame | None, tuple[Frame, ...]]  # an instruction's line and inlined callees


def place(instructions: list[Instruction], chains: list[tuple[Frame, ...]]) -> list[PcSite]:
    """Each instruction placed on a line of the kernel (the module's text says how)."""
    kernel = kernel_file(chains)
    split = [split_frames(frames, kernel) for frames in chains]
    near = _nearest_located(basic_blocks(instructions), [line is not None for line, _ in split])
    sites = []
    for i, ins in enumerate(instructions):
        line, callees = split[i]
        placed = (INLINED if callees else ON_LINE) if line is not None else UNPLACED
        j = near[i]
        if line is None and j is not None:
            line, placed = split[j][0], IN_BLOCK
            callees = callees or split[j][1]
        sites.append(PcSite(ins.offset, ins.text, ins.ptx_line, chains[i], line, callees, placed))
    return sites


def _nearest_located(blocks: list[int], located: list[bool]) -> list[int | None]:
    """For each instruction, the index of the nearest one of its basic block that has a line of
    its own (the earlier one on a tie; itself when it has one), None when its block has none. Two
    passes, so a kernel without line info (every block unlocated) costs no more than one with."""
    n = len(blocks)
    before: list[int | None] = [None] * n
    after: list[int | None] = [None] * n
    for i in range(n):
        if located[i]:
            before[i] = i
        elif i and blocks[i - 1] == blocks[i]:
            before[i] = before[i - 1]
    for i in range(n - 1, -1, -1):
        if located[i]:
            after[i] = i
        elif i + 1 < n and blocks[i + 1] == blocks[i]:
            after[i] = after[i + 1]
    out: list[int | None] = []
    for i in range(n):
        b, a = before[i], after[i]
        out.append(a if b is None or (a is not None and a - i < i - b) else b)
    return out


@dataclass
class LineTable:
    """Every instruction of one cubin's kernel by offset; ``why`` says why lines are missing when
    the table could not be built (then ``sites`` is empty)."""

    sites: dict[int, PcSite]
    why: str | None = None

    @classmethod
    def build(cls, cubin: bytes | None, ptx: str | None) -> LineTable:
        if not cubin:
            return cls({}, "no cubin for this kernel in the process (not a Triton kernel compiled here)")
        try:
            instructions = disassemble(cubin)
        except ExplainError as exc:
            return cls({}, str(exc))
        if ptx:
            chains = [ir.frames for ir in sass_lines(instructions, ptx_lines(ptx))]
        else:  # no PTX (a kernel found only as a cubin): the cubin's own .debug_line
            by_offset = _debug_lines(cubin)
            chains = [by_offset.get(ins.offset, ()) for ins in instructions]
            instructions = [Instruction(i.offset, i.text, None, i.label) for i in instructions]
        sites = {site.offset: site for site in place(instructions, chains)}
        why = None
        if not any(site.frames for site in sites.values()):
            why = "the cubin has no line table (compiled without line info, e.g. TRITON_DISABLE_LINE_INFO=1)"
        return cls(sites, why)

    def placement(self, pcs: np.ndarray | None = None, counts: np.ndarray | None = None) -> dict[str, int]:
        """How many instructions (or, given ``pcs`` and their ``counts``, samples) were placed each
        way (:data:`PLACEMENTS`); a PC the table lacks counts as unplaced."""
        out = dict.fromkeys(PLACEMENTS, 0)
        if pcs is None:
            for site in self.sites.values():
                out[site.placed] += 1
            return out
        weights = counts.tolist() if counts is not None else [1] * len(pcs)
        for pc, n in zip(pcs.tolist(), weights, strict=True):
            found = self.sites.get(int(pc))
            out[found.placed if found is not None else UNPLACED] += int(n)
        return out


def _debug_lines(cubin: bytes) -> dict[int, tuple[Frame, ...]]:
    """Each instruction's source line from the cubin's ``.debug_line`` (``nvdisasm -gi``), for a
    kernel whose PTX is not at hand: an inlined chain is one marker per frame. Less exact than the
    PTX route (:mod:`.sass` says why: an inline-asm block's lines), so used only then."""
    try:
        text = run_tool("nvdisasm", ["-c", "-gi"], cubin)
    except ExplainError:
        return {}
    out: dict[int, tuple[Frame, ...]] = {}
    current: tuple[Frame, ...] = ()
    chained = False  # the marker before was one too: this one is the next frame out
    for raw in text.splitlines():
        m = _SOURCE_RE.match(raw)
        if m:
            frame = (m.group(1), int(m.group(2)))
            current = (*current, frame) if chained else (frame,)
            chained = True
            continue
        chained = False
        m = _OFFSET_RE.match(raw)
        if m:
            out[int(m.group(1), 16)] = current
    return out


def site_path(kernel: str, site: PcSite | None) -> tuple[str, ...]:
    """The frames a PC's samples are filed under, below the kernel: its line in Proton's
    ``file:line@kernel`` form (or ``<no source line>``), then its inlined callees."""
    if site is None:
        return (NO_LINE,)
    callees = tuple(callee_frame(file, n) for file, n in site.callees)
    if site.line is None:
        return (NO_LINE, *callees)
    return (source_frame(site.line[0], site.line[1], kernel), *callees)  # Proton's: the kernel as function


def line_rows(
    kernel: str,
    pcs: np.ndarray,
    columns: Mapping[str, np.ndarray],
    table: LineTable,
) -> list[ScopeRow]:
    """The kernel's samples summed per placed line and inlined callee (:func:`site_path`). A
    kernel whose table has no lines gets one row on the kernel itself (path ``()``), as Proton
    files it; its samples per PC stay in the file's metadata. ``columns`` holds one array per
    metric, aligned with ``pcs``."""
    by_frame: dict[tuple[str, ...], np.ndarray] = {}
    names = list(columns)
    stacked = np.stack([np.asarray(columns[n], dtype=np.int64) for n in names], axis=1) if names else None
    for i, pc in enumerate(pcs.tolist()):
        frame = () if table.why is not None else site_path(kernel, table.sites.get(int(pc)))
        row = stacked[i] if stacked is not None else np.zeros(0, np.int64)
        if frame in by_frame:
            by_frame[frame] = by_frame[frame] + row
        else:
            by_frame[frame] = row.copy()
    first = names.index("num_samples") if "num_samples" in names else 0
    ranked = sorted(by_frame.items(), key=lambda kv: -int(kv[1][first]) if len(kv[1]) else 0)
    return [  # hottest first: the order views and Proton's readers meet them
        ScopeRow(frame, {n: int(v) for n, v in zip(names, values.tolist(), strict=True) if v})
        for frame, values in ranked
    ]
