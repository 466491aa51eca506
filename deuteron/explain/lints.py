"""Findings: what the compiler made of the kernel that is worth changing, each with its source line and fix.

Every rule reads facts from the stages (TTIR data flow, TTGIR layouts, PTX access widths, SASS
opcodes, resources) and names a concrete change; none guesses without a fact to point at.
"""

from __future__ import annotations

import re
from collections import Counter

from deuteron.explain.analysis import KernelAnalysis
from deuteron.explain.capture import ArgInfo
from deuteron.explain.flow import ttir_flow
from deuteron.explain.mma import dot_engines, pipeline, ptx_uses_tensor_cores
from deuteron.explain.sass import ptxas_spill_stores
from deuteron.explain.stages import IRLine, source_line
from deuteron.explain.vectorization import unvectorized_accesses
from deuteron.model.finding import Finding

_DOT_TYPES_RE = re.compile(r"tensor<(\d+)x(\d+)x([a-z]+\d+)[,>].*?\* tensor<(\d+)x(\d+)x([a-z]+\d+)[,>]")
_PRECISION_RE = re.compile(r"inputPrecision = (\w+)")
_CONVERT_RE = re.compile(
    r"ttg\.convert_layout .*: tensor<([0-9x]+)x([a-z]+)(\d+), #(\w+)> -> tensor<[^,]+, #(\w+)>"
)


def _finding(kind: str, line: int | None, message: str, severity: str = "warning") -> Finding:
    """An explain finding: "warning" is worth changing, "info" worth knowing."""
    return Finding(kind=kind, severity=severity, message=message, line=line)


def _blocks(args: list[ArgInfo]) -> list[ArgInfo]:
    """Constexpr tile sizes, biggest first (the knobs that set how much each program holds)."""
    tiles = [
        a
        for a in args
        if a.type == "constexpr"
        and isinstance(a.value, int)
        and not isinstance(a.value, bool)
        and a.value >= 16
        and a.value & (a.value - 1) == 0
    ]
    return sorted(tiles, key=lambda a: (-int(a.value), a.name))


def _spill(a: KernelAnalysis) -> list[Finding]:
    res, mix = a.resources, a.mix or {}
    if res is None or (a.spill_bytes == 0 and not mix.get("local_stores")):
        return []
    arch, ptx = a.spec.target.arch, a.compiled.text("ptx")
    calls = any(i.base == "CALL" for i in a.instructions)
    # noinline helpers keep call frames in local memory: then only ptxas's own count says what spilled
    if calls and isinstance(arch, int) and ptx and ptxas_spill_stores(ptx, arch) == 0:
        return []
    sass = a.stages.get("sass", [])
    lines = Counter(source_line(ir, a.spec.file) for ir in sass if " STL" in f" {ir.text.split('*/', 1)[-1]}")
    lines.pop(None, None)
    line = lines.most_common(1)[0][0] if lines else None
    warps = int(a.spec.option("num_warps") or 4)
    tiles = _blocks(a.spec.args)
    fix = []
    if tiles:
        t = tiles[0]
        fix.append(f"halve {t.name} ({t.value} -> {int(t.value) // 2})")
    if warps < 16:
        fix.append(f"raise num_warps from {warps} to {warps * 2} so each thread holds half as many values")
    return [
        _finding(
            "spill",
            line,
            f"{a.spill_bytes} bytes of local memory per thread ({mix.get('local_stores', 0)} STL / "
            f"{mix.get('local_loads', 0)} LDL instructions) at {res.registers} registers: the "
            "tile does not fit in "
            f"registers; {' or '.join(fix) or 'use a smaller tile'}.",
        )
    ]


def _dots(a: KernelAnalysis) -> list[Finding]:
    """A tl.dot the compiler lowered to FMA instructions (judged from TTGIR, see :mod:`.mma`)."""
    if not a.spec.target.has_tensor_cores():
        return []
    file = a.spec.file
    engines = dot_engines(a.stages.get("ttgir", []), file)
    any_tensor_cores = ptx_uses_tensor_cores(a.compiled.text("ptx") or "")
    out = []
    seen: set[int | None] = set()
    for ir in a.stages.get("ttir", []):
        if " tt.dot " not in f" {ir.text} ":
            continue
        line = source_line(ir, file)
        if line in seen:
            continue
        seen.add(line)
        chosen = engines.get(line) if line is not None else None
        if chosen is None:  # no TTGIR dot on this line (a lost location): trust the PTX as a whole
            if any_tensor_cores:
                continue
        elif chosen != {"fma"}:
            continue
        m = _DOT_TYPES_RE.search(ir.text)
        p = _PRECISION_RE.search(ir.text)
        precision = p.group(1) if p else "ieee"  # TTIR omits the attribute at its default, IEEE
        if m is None:
            why = "the compiler lowered it to FMA instructions"
        else:
            mm, kk, at, _, nn, bt = m.groups()
            dims = (int(mm), int(nn), int(kk))
            if at in ("f32",) and precision == "ieee":
                why = (
                    "its fp32 operands use input_precision='ieee', which runs on CUDA cores; pass "
                    "input_precision='tf32' (or 'tf32x3' for near-fp32 accuracy), or cast a and "
                    "b to bf16/fp16"
                )
            elif at == "f64":
                why = "its operands are fp64; cast them to fp32 with input_precision='tf32', or to bf16/fp16"
            elif min(dims) < 16:
                why = (
                    f"its tile M×N×K = {dims[0]}×{dims[1]}×{dims[2]} has a side under 16; make every side "
                    f"at least 16"
                )
            else:
                why = (
                    f"the compiler lowered the {at} × {bt} product to FMA instructions; check "
                    "the operand dtypes "
                    f"match and the tile sides are multiples of 16"
                )
        out.append(
            _finding(
                "no-tensor-cores",
                line,
                f"tl.dot here runs without tensor-core instructions on {a.spec.target.name}: {why}.",
            )
        )
    return out


def _occupancy(a: KernelAnalysis) -> list[Finding]:
    """Few resident warps, and what to change first: num_warps and the tile, never maxnreg where it
    would spill more; for asynchronous MMA pipelines (wgmma, tcgen05) low occupancy is the design."""
    occ = a.occupancy
    if occ is None or occ.fraction >= 0.25 or occ.limiter not in ("registers", "shared memory"):
        return []
    warps = int(a.spec.option("num_warps") or 4)
    stages = int(a.spec.option("num_stages") or 1)
    tiles = _blocks(a.spec.args)
    engine = pipeline(a.stages.get("ttgir", []))
    fixes = []
    if occ.limiter == "registers":
        what = f"{a.registers} registers per thread allow {occ.blocks_per_sm} block(s) of {warps} warps"
        if warps < 8:
            fixes.append(f"raise num_warps from {warps} to {warps * 2} (each thread holds half as much)")
        if tiles:
            fixes.append(f"halve {tiles[0].name} ({tiles[0].value} -> {int(tiles[0].value) // 2})")
        if not a.spill_bytes and (a.registers or 0) > 128:
            fixes.append("as a last resort cap registers with maxnreg, and check it does not spill")
    else:
        what = f"{a.shared_bytes} bytes of shared memory per block allow {occ.blocks_per_sm} block(s) per SM"
        if stages > 2:
            fixes.append(f"lower num_stages from {stages} to {stages - 1}")
        if tiles:
            fixes.append(f"halve {tiles[0].name} ({tiles[0].value} -> {int(tiles[0].value) // 2})")
    head = (
        f"{occ.warps_per_sm} of {occ.max_warps_per_sm} warps per SM ({occ.fraction:.0%}), limited by "
        f"{occ.limiter}: {what}"
    )
    if engine in ("wgmma", "tcgen05") and occ.blocks_per_sm > 0:
        message = (
            f"{head}. That is expected for a {engine} pipeline: asynchronous tensor-core MMAs and "
            f"{stages}-stage loads hide the latency, not many warps"
            + (f"; for more resident warps, {' or '.join(fixes)}" if fixes else "")
            + "."
        )
        return [_finding("low-occupancy", None, message, severity="info")]
    message = f"{head}; {' or '.join(fixes) or 'shrink the tile'}."
    return [_finding("low-occupancy", None, message, severity="info" if occ.blocks_per_sm > 0 else "warning")]


def _loops(ttir: list[IRLine]) -> list[tuple[IRLine, list[IRLine]]]:
    """Each scf.for with the lines of its body (nested loops included).

    The loop's location sits on its closing ``} loc(...)`` line, so the head returned carries it.
    """
    out: list[tuple[IRLine, list[IRLine]]] = []
    open_loops: list[tuple[IRLine, list[IRLine], int]] = []
    depth = 0
    for ir in ttir:
        for _, body, _ in open_loops:
            body.append(ir)
        if " scf.for " in f" {ir.text} ":
            open_loops.append((ir, [], depth))
        depth += ir.text.count("{") - ir.text.count("}")
        while open_loops and depth <= open_loops[-1][2]:
            head, body, _ = open_loops.pop()
            out.append((IRLine(head.number, head.text, ir.frames or head.frames), body))
    return out


def _pipelining(a: KernelAnalysis) -> list[Finding]:
    stages = int(a.spec.option("num_stages") or 1)
    if stages > 1:
        return []
    out = []
    for head, body in _loops(a.stages.get("ttir", [])):
        if any(" tt.dot " in f" {b.text} " for b in body) and any("tt.load" in b.text for b in body):
            out.append(
                _finding(
                    "no-pipelining",
                    source_line(head, a.spec.file),
                    f"this K loop runs with num_stages={stages}: every iteration waits for its "
                    "own loads before the "
                    "tl.dot; launch with num_stages=3 (2 to 4, shared memory permitting) so the "
                    "next tiles' loads "
                    f"overlap this tile's math.",
                )
            )
    return out


def _conversions(a: KernelAnalysis) -> list[Finding]:
    ttgir, llir = a.stages.get("ttgir", []), a.stages.get("llir", [])
    file = a.spec.file
    shared_lines = {source_line(ir, file) for ir in llir if "addrspace(3)" in ir.text and "store" in ir.text}
    in_loop = {id(b) for _, body in _loops(ttgir) for b in body}
    store_lines = {source_line(ir, file) for ir in ttgir if ir.text.strip().startswith("tt.store ")}
    out = []
    seen: set[int | None] = set()
    for ir in ttgir:
        m = _CONVERT_RE.search(ir.text)
        if not m:
            continue
        line = source_line(ir, file)
        if line in seen or line not in shared_lines:
            continue
        seen.add(line)
        loop = id(ir) in in_loop
        shape, ty, bits, src, dst = m.groups()
        if not loop and line in store_lines and src.startswith(("mma", "mfma", "wmma")):
            continue  # a dot's accumulator converted once for a coalesced store: the normal epilogue
        numel = 1
        for s in shape.split("x"):
            numel *= int(s)
        size = numel * int(bits) // 8
        out.append(
            _finding(
                "layout-conversion",
                line,
                f"a {shape}x{ty}{bits} tensor is converted from #{src} to #{dst} through shared memory "
                f"({size} bytes and a barrier{', every loop iteration' if loop else ''}); keep "
                "it in the layout it is "
                "produced in: e.g. transpose through the pointer strides rather than "
                "tl.trans/tl.permute, reduce along "
                f"the axis it was loaded along, or store the result straight from where it was computed.",
                severity="warning" if loop else "info",
            )
        )
    return out


def lint(a: KernelAnalysis) -> list[Finding]:
    flow = ttir_flow(a.stages.get("ttir", []))
    findings = [
        *_spill(a),
        *_dots(a),
        *unvectorized_accesses(a, flow),
        *_occupancy(a),
        *_conversions(a),
        *_pipelining(a),
    ]
    unique: dict[tuple[str, int | None], Finding] = {}
    for f in findings:  # one finding per (kind, line) in a specialization
        unique.setdefault((f.kind, f.line), f)
    return sorted(unique.values(), key=lambda f: (f.line is None, f.line or 0, f.kind))
