"""From one compiled kernel to the facts a kernel author reads: resources, occupancy, SASS mix, stages.

The findings (``KernelAnalysis.findings``) are :mod:`.lints`' job, filled in by the runner."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from deuteron.explain.capture import Specialization
from deuteron.explain.cross_compile import Compiled
from deuteron.explain.occupancy import ARCH_LIMITS, Occupancy, occupancy
from deuteron.explain.sass import Instruction, Resources, disassemble, instruction_mix, resources
from deuteron.explain.stages import IRLine, llir_lines, mlir_lines, ptx_lines, sass_lines, source_line
from deuteron.model.finding import Finding

_AMD_STAT_RE = re.compile(r"^; (TotalNumVgprs|NumVgprs|ScratchSize|Occupancy): (\d+)", re.M)
# (SIMDs per compute unit, most waves per SIMD): CDNA (gfx9) and RDNA (gfx10+). The compiler's
# "Occupancy" comment is waves per SIMD.
AMD_CU = {"gfx9": (4, 8), "gfx1": (2, 16)}


@dataclass
class KernelAnalysis:
    """Everything explain says about one compiled specialization, before any rendering.

    Plain fields so the lints, the JSON and the views read one object, and :func:`analyse` stays
    the one place that runs the tools. ``resources``, ``occupancy`` and ``mix`` are None where the
    target cannot say (an AMD kernel has no SASS; an architecture outside :data:`ARCH_LIMITS`).
    """

    spec: Specialization
    compiled: Compiled
    stages: dict[str, list[IRLine]]
    instructions: list[Instruction]
    resources: Resources | None
    occupancy: Occupancy | None
    mix: dict[str, Any] | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def shared_bytes(self) -> int:
        # Triton's kernels use dynamic shared memory only; cuobjdump's SHARED is the 1 KB the system reserves.
        return int(self.compiled.metadata.get("shared", 0) or 0)

    def source_map(self) -> dict[str, dict[str, int]]:
        """How many lines of each stage every source line of the kernel's file became."""
        out: dict[str, dict[str, int]] = {}
        for stage, lines in self.stages.items():
            for ir in lines:
                line = source_line(ir, self.spec.file)
                if line is not None:
                    counts = out.setdefault(str(line), {})
                    counts[stage] = counts.get(stage, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: int(kv[0])))

    @property
    def registers(self) -> int | None:
        return self.resources.registers if self.resources else None

    @property
    def spill_bytes(self) -> int | None:
        # Spilled registers live in the thread's stack frame (STACK) or in plain local memory (LOCAL).
        return self.resources.stack + self.resources.local if self.resources else None


def analyse(compiled: Compiled) -> KernelAnalysis:
    spec = compiled.spec
    stages: dict[str, list[IRLine]] = {}
    for name in ("ttir", "ttgir"):
        text = compiled.text(name)
        if text:
            stages[name] = mlir_lines(text)
    if llir := compiled.text("llir"):
        stages["llir"] = llir_lines(llir)
    for name in ("ptx", "amdgcn"):
        if text := compiled.text(name):
            stages[name] = ptx_lines(text)  # AMDGCN assembly uses the same .file/.loc directives
    instrs: list[Instruction] = []
    res = occ = mix = None
    cubin = compiled.asm.get("cubin")
    if spec.target.backend == "cuda" and isinstance(cubin, bytes):
        instrs = disassemble(cubin)
        stages["sass"] = sass_lines(instrs, stages.get("ptx", []))
        res = resources(cubin)
        mix = instruction_mix(instrs)
        arch = spec.target.arch
        if isinstance(arch, int) and arch in ARCH_LIMITS:
            shared = int(compiled.metadata.get("shared", 0) or 0)
            occ = occupancy(arch, int(spec.option("num_warps") or 4), res.registers, shared)
    amdgcn = compiled.text("amdgcn")
    if spec.target.backend == "hip" and amdgcn:
        res, occ = _amd_resources(amdgcn, int(spec.option("num_warps") or 4), str(spec.target.arch))
    return KernelAnalysis(spec, compiled, stages, instrs, res, occ, mix)


def _amd_resources(amdgcn: str, num_warps: int, arch: str) -> tuple[Resources | None, Occupancy | None]:
    """Registers, scratch (spills) and waves per SIMD, as the AMDGPU backend prints them in the assembly."""
    stats = {k: int(v) for k, v in _AMD_STAT_RE.findall(amdgcn)}
    vgprs = stats.get("TotalNumVgprs", stats.get("NumVgprs"))
    if vgprs is None:
        return None, None
    res = Resources(vgprs, stats.get("ScratchSize", 0), 0, 0)
    waves = stats.get("Occupancy")
    if waves is None:
        return res, None
    simds, most = AMD_CU["gfx9" if arch.startswith("gfx9") else "gfx1"]
    blocks = min(waves, most) * simds // num_warps
    occ = Occupancy(
        blocks,
        blocks * num_warps,
        most * simds,
        "registers or LDS (the compiler's estimate)",
        {"compiler": blocks},
    )
    return res, occ
