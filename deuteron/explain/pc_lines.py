"""Sampled PCs as a person reads them: each SASS offset's instruction, PTX line and Triton source
line, and the samples of a kernel summed per source line (the rows ``--sample`` files under the
kernel: Proton's ``file:line@kernel`` frames).

The map is the one ``deuteron explain`` shows, built from the cubin's own PTX line table
(``nvdisasm -c -gp``) and the PTX ``.loc`` directives (see :mod:`.sass` and :mod:`.stages`); it
needs no GPU, so a recorded drain replays into the same rows in CI.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from deuteron.explain.errors import ExplainError
from deuteron.explain.sass import disassemble, run_tool
from deuteron.explain.stages import Frame, IRLine, ptx_lines, sass_lines
from deuteron.model.intra import ScopeRow
from deuteron.model.names import source_frame

NO_LINE = "<no source line>"  # PCs of a kernel with a line table whose instruction has no line
_SOURCE_RE = re.compile(r'^\s*//## File "([^"]*)", line (\d+)')  # nvdisasm -g's line markers
_OFFSET_RE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/")


@dataclass(frozen=True)
class PcSite:
    """One SASS instruction of a kernel: its offset, text, PTX line and source frames (innermost first)."""

    offset: int
    sass: str
    ptx_line: int | None
    frames: tuple[Frame, ...]

    @property
    def source(self) -> Frame | None:
        return self.frames[0] if self.frames else None


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
            lines: list[IRLine] = sass_lines(instructions, ptx_lines(ptx))
            frames = [ir.frames for ir in lines]
        else:  # no PTX (a kernel found only as a cubin): the cubin's own .debug_line
            by_offset = _debug_lines(cubin)
            frames = [by_offset.get(ins.offset, ()) for ins in instructions]
        sites = {
            ins.offset: PcSite(ins.offset, ins.text, ins.ptx_line if ptx else None, frames[i])
            for i, ins in enumerate(instructions)
        }
        why = None
        if not any(site.frames for site in sites.values()):
            why = "the cubin has no line table (compiled without line info, e.g. TRITON_DISABLE_LINE_INFO=1)"
        return cls(sites, why)


def _debug_lines(cubin: bytes) -> dict[int, tuple[Frame, ...]]:
    """Each instruction's source line from the cubin's ``.debug_line`` (``nvdisasm -g``), for a
    kernel whose PTX is not at hand. Less exact than the PTX route (:mod:`.sass` says why: an
    inline-asm block's lines), so used only then."""
    try:
        text = run_tool("nvdisasm", ["-c", "-g"], cubin)
    except ExplainError:
        return {}
    out: dict[int, tuple[Frame, ...]] = {}
    current: tuple[Frame, ...] = ()
    for raw in text.splitlines():
        m = _SOURCE_RE.match(raw)
        if m:
            current = ((m.group(1), int(m.group(2))),)
            continue
        m = _OFFSET_RE.match(raw)
        if m:
            out[int(m.group(1), 16)] = current
    return out


def line_rows(
    kernel: str,
    pcs: np.ndarray,
    columns: Mapping[str, np.ndarray],
    table: LineTable,
) -> list[ScopeRow]:
    """The kernel's samples summed per source line (each PC's innermost source frame). A kernel
    whose table has no lines gets one row on the kernel itself (path ``()``), as Proton files it;
    its samples per PC stay in the file's metadata. ``columns`` holds one array per metric,
    aligned with ``pcs``."""
    by_frame: dict[tuple[str, ...], np.ndarray] = {}
    names = list(columns)
    stacked = np.stack([np.asarray(columns[n], dtype=np.int64) for n in names], axis=1) if names else None
    for i, pc in enumerate(pcs.tolist()):
        site = table.sites.get(int(pc))
        if table.why is not None:
            frame: tuple[str, ...] = ()
        elif site is None or site.source is None:
            frame = (NO_LINE,)
        else:
            frame = (
                source_frame(site.source[0], site.source[1], kernel),
            )  # Proton's: the kernel as function
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
