"""Measured samples on every line explain shows: the source, each IR stage and the SASS, for a kernel
of a sampled profile (``deuteron explain --profile prof.hatchet``, the web UI's heat column).

The source lines' samples come from the profile's ``file:line@kernel`` rows, summed over every place
the kernel ran. SASS and PTX are exact when the profiled cubin is the one explain compiled (same
SHA-1: same Triton, options and specialization): each instruction gets its own PC's samples (the
hottest :data:`deuteron.collect.backends.cupti.sampled_lines.PCS_KEPT` PCs kept in the file), each
PTX line the sum over the instructions it became. The MLIR and LLVM stages, which have no PCs, show
on each IR line the samples of the source line it came from (``by`` says which way each stage went).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from deuteron.explain.analysis import KernelAnalysis
from deuteron.explain.stages import source_line
from deuteron.view.hot_lines import SampledKernel


def kernel_heat(
    a: KernelAnalysis, sampled: SampledKernel | None, pcs: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The heat of one explained kernel, or None when the profile has no samples for it."""
    if sampled is None or not sampled.samples:
        return None
    file = a.spec.file
    by_line: dict[int, dict[str, Any]] = {}
    for line in sampled.lines.values():
        if os.path.basename(line.file) != os.path.basename(file):
            continue  # an inlined helper's line in another file: it shows under its own file
        by_line[line.line] = {
            "samples": line.samples,
            "not_issued": line.not_issued,
            "stalls": dict(line.stalls),
        }
    stages: dict[str, list[int]] = {}
    by: dict[str, str] = {}
    for stage, lines in a.stages.items():
        stages[stage] = [by_line.get(source_line(ir, file) or -1, {}).get("samples", 0) for ir in lines]
        by[stage] = "source line"
    cubin = a.compiled.asm.get("cubin")
    exact = (
        pcs is not None
        and isinstance(cubin, bytes)
        and pcs.get("cubin_sha1") == hashlib.sha1(cubin).hexdigest()
        and "sass" in a.stages
    )
    note = ""
    if exact and pcs is not None:
        per_pc = dict(zip(pcs.get("pc", []), pcs.get("pc_samples", []), strict=False))
        stages["sass"] = [per_pc.get(ins.offset, 0) for ins in a.instructions]
        by["sass"] = "PC"
        if "ptx" in a.stages:
            per_ptx: dict[int, int] = {}
            for ins in a.instructions:
                if ins.ptx_line is not None:
                    per_ptx[ins.ptx_line] = per_ptx.get(ins.ptx_line, 0) + per_pc.get(ins.offset, 0)
            stages["ptx"] = [per_ptx.get(ir.number, 0) for ir in a.stages["ptx"]]
            by["ptx"] = "PC"
    elif "sass" in a.stages:
        note = (
            "the profiled cubin is not the one compiled here (another Triton, options or specialization): "
            "SASS and PTX show their source line's samples, not their own"
        )
    return {
        "samples": sampled.samples,
        "lines": {str(k): v for k, v in sorted(by_line.items())},
        "stages": stages,
        "by": by,
        "note": note,
    }
