"""Which engine the compiler chose for each ``tl.dot``: tensor cores or plain FMA instructions.

Read from TTGIR, where the choice is made: Hopper's ``ttng.warp_group_dot`` (wgmma), Blackwell's
``ttng.tc_gen5_mma`` (tcgen05), or a ``tt.dot`` whose result layout is an MMA layout (mma.sync on
Ampere, MFMA/WMMA on AMD) are tensor cores; a ``tt.dot`` in a blocked layout is FMA. Not from the
line ptxas tags each SASS instruction with: those tags are coarse (a loop's wgmma often sits under
the loop's line), so judging a dot by them blames dots that do use tensor cores.
"""

from __future__ import annotations

import re

from deuteron.explain.stages import IRLine, source_line

TENSOR_CORE_DOTS = {
    "ttng.warp_group_dot": "wgmma",
    "ttng.tc_gen5_mma": "tcgen05",
    "ttng.tc_gen5_mma_scaled": "tcgen05",
}
_ALIAS_RE = re.compile(r"^\s*(#[\w.]+) = #ttg\.(nvidia_mma|amd_mfma|amd_wmma)<(.*)$")
_OP_RE = re.compile(r"^\s*%[\w.#:]+ = ([\w.]+) ")
_RESULT_LAYOUT_RE = re.compile(r"->\s*tensor<[^,>]+,\s*(#[\w.]+)")
_PTX_MMA_RE = re.compile(r"\b(?:mma\.sync|wgmma\.mma_async|tcgen05\.mma)\b")


def _mma_layouts(ttgir: list[IRLine]) -> dict[str, str]:
    """MMA layout aliases (``#mma``) -> "mma" (v2, or AMD's) or "wgmma" (nvidia_mma version 3)."""
    found: dict[str, str] = {}
    for ir in ttgir:
        m = _ALIAS_RE.match(ir.text)
        if m:
            found[m.group(1)] = "wgmma" if "versionMajor = 3" in m.group(3) else "mma"
    return found


def dot_engines(ttgir: list[IRLine], file: str) -> dict[int, set[str]]:
    """Source line -> the engines its dots run on ("wgmma", "tcgen05", "mma", "fma")."""
    layouts = _mma_layouts(ttgir)
    out: dict[int, set[str]] = {}
    for ir in ttgir:
        m = _OP_RE.match(ir.text)
        if m is None:
            continue
        op = m.group(1)
        if op in TENSOR_CORE_DOTS:
            engine = TENSOR_CORE_DOTS[op]
        elif op == "tt.dot":
            layout = _RESULT_LAYOUT_RE.search(ir.text)
            engine = layouts.get(layout.group(1), "fma") if layout else "fma"
        else:
            continue
        line = source_line(ir, file)
        if line is not None:
            out.setdefault(line, set()).add(engine)
    return out


def pipeline(ttgir: list[IRLine]) -> str | None:
    """The kernel's tensor-core pipeline: "wgmma" or "tcgen05" (asynchronous MMAs), "mma", or None."""
    engines: set[str] = set()
    for ir in ttgir:
        m = _OP_RE.match(ir.text)
        if m and m.group(1) in TENSOR_CORE_DOTS:
            engines.add(TENSOR_CORE_DOTS[m.group(1)])
    if not engines:
        engines.update(_mma_layouts(ttgir).values())
    for engine in ("tcgen05", "wgmma", "mma"):
        if engine in engines:
            return engine
    return None


def ptx_uses_tensor_cores(ptx: str) -> bool:
    return bool(_PTX_MMA_RE.search(ptx))
