"""Findings: what the compiler made of the kernel that is worth changing, each with its source line and fix.

Every rule reads facts from the stages (TTIR data flow, TTGIR layouts, PTX access widths, SASS
opcodes, resources) and names a concrete change; none guesses without a fact to point at.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from deuteron.explain.analysis import KernelAnalysis
from deuteron.explain.capture import ArgInfo
from deuteron.explain.mma import dot_engines, pipeline, ptx_uses_tensor_cores
from deuteron.explain.sass import ptxas_spill_stores
from deuteron.explain.stages import IRLine, source_line
from deuteron.model.finding import Finding

_DEF_RE = re.compile(r"^\s*(%[\w.]+)(?::\d+)? = (\S+)\s*(.*)$")
_SSA_RE = re.compile(r"%[\w.]+")
_FUNC_RE = re.compile(r"tt\.func\s+(?:public\s+|private\s+)?@[\w.$]+\((.*)\)")
_ARG_RE = re.compile(r"(%[\w.]+): ")
_ITER_RE = re.compile(r"(%[\w.]+) = (%[\w.]+)")
_TENSOR_RE = re.compile(r"tensor<([0-9x]+)x!tt\.ptr<([a-z]+)(\d+)>")
_DOT_TYPES_RE = re.compile(r"tensor<(\d+)x(\d+)x([a-z]+\d+)[,>].*?\* tensor<(\d+)x(\d+)x([a-z]+\d+)[,>]")
_PRECISION_RE = re.compile(r"inputPrecision = (\w+)")
_PTX_ACCESS_RE = re.compile(r"\b(ld|st)\.global(\S*)")
_CP_ASYNC_RE = re.compile(
    r"\bcp\.async\.c[ag]\.shared\.global\S*\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-fA-F]+|\d+)"
)
_CONVERT_RE = re.compile(
    r"ttg\.convert_layout .*: tensor<([0-9x]+)x([a-z]+)(\d+), #(\w+)> -> tensor<[^,]+, #(\w+)>"
)


@dataclass
class _Flow:
    """TTIR as a def-use graph, enough to ask which kernel arguments an access depends on, and
    along which dimension (each value's shape says which dimensions it varies along)."""

    deps: dict[str, list[str]]
    ops: dict[str, str]  # SSA name -> the op that defines it
    args: set[str]  # SSA names of the kernel's arguments (named after the Python parameters)
    shapes: dict[str, tuple[int, ...]]  # SSA name -> tensor shape (scalars absent)
    consts: dict[str, int]  # SSA name -> integer constant (scalar or splat)

    def _reach(self, value: str) -> set[str]:
        seen: set[str] = set()
        stack = [value]
        while stack:
            v = stack.pop()
            if v not in seen:
                seen.add(v)
                stack.extend(self.deps.get(v, ()))
        return seen

    def loads_through_memory(self, value: str) -> bool:
        """Whether the value depends on data loaded from memory (a gather: offsets read at run time)."""
        return any(self.ops.get(v) == "tt.load" for v in self._reach(value) if v != value)

    def _ranged(self, value: str) -> bool:
        """Whether the value varies from lane to lane (comes from a tl.arange)."""
        return any(self.ops.get(v) == "tt.make_range" for v in self._reach(value))

    def _along_last(self, value: str) -> bool:
        shape = self.shapes.get(value)
        return shape is not None and len(shape) >= 1 and shape[-1] > 1

    def vector_args(self, value: str, mask: bool = False) -> list[str]:
        """The arguments that can change whether an access vectorizes along its last (contiguous)
        dimension: those feeding the addresses along it, the strides of the other dimensions, and,
        for a mask, only its part along the last dimension.

        A product with a multiple of 16 (``pid * BLOCK``) is aligned whatever the other factor is, so
        what computed that factor (program-id swizzles over M and N) does not count; a row index
        times a stride counts only through the stride (``(rows % M) * stride_am``: M picks rows, it
        cannot misalign them)."""
        found: set[str] = set()
        seen: set[str] = set()
        stack = [value]
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if v in self.args:
                found.add(v[1:])
                continue
            op, operands = self.ops.get(v), self.deps.get(v, [])
            if mask and v != value and v in self.shapes and not self._along_last(v):
                continue  # a mask part uniform along the contiguous dimension cannot split a vector
            if op == "arith.muli":
                if any(self.consts.get(o, 1) % 16 == 0 for o in operands):
                    continue
                if not self._along_last(v):
                    operands = [o for o in operands if not self._ranged(o)] or operands
            stack.extend(operands)
        return sorted(found)


def _finding(kind: str, line: int | None, message: str, severity: str = "warning") -> Finding:
    """An explain finding: "warning" is worth changing, "info" worth knowing."""
    return Finding(kind=kind, severity=severity, message=message, line=line)


def _operands(rest: str) -> list[str]:
    body = rest.split(" : ", 1)[0]
    return _SSA_RE.findall(body)


_SHAPE_RE = re.compile(r"tensor<((?:\d+x)+)")
_CONST_RE = re.compile(r"arith\.constant (?:dense<)?(-?\d+)>? : (?:tensor<[0-9x]+x)?i\d+")


def _shape(rest: str) -> tuple[int, ...] | None:
    """The shape of the value an op defines: the type after ``->``, else the first after `` : ``."""
    types = rest.rsplit(" -> ", 1)[1] if " -> " in rest else rest.split(" : ", 1)[-1]
    m = _SHAPE_RE.search(types) if (" : " in rest or " -> " in rest) else None
    return tuple(int(x) for x in m.group(1).rstrip("x").split("x")) if m else None


def _flow(ttir: list[IRLine]) -> _Flow:
    deps: dict[str, list[str]] = {}
    ops: dict[str, str] = {}
    args: set[str] = set()
    shapes: dict[str, tuple[int, ...]] = {}
    consts: dict[str, int] = {}
    loops: list[list[str]] = []  # the iter args of each open scf.for, innermost last
    for ir in ttir:
        text = ir.text
        if not args and (m := _FUNC_RE.search(text)):
            args.update(_ARG_RE.findall(m.group(1)))
            continue
        stripped = text.strip()
        if stripped.startswith("scf.yield") and loops:
            for name, value in zip(loops.pop(), _operands(stripped[len("scf.yield") :]), strict=False):
                deps.setdefault(name, []).append(value)
            continue
        m = _DEF_RE.match(text)
        if not m:
            continue
        result, op, rest = m.groups()
        ops[result] = op
        shape = _shape(rest)
        if shape is not None:
            shapes[result] = shape
        if c := _CONST_RE.search(text):
            consts[result] = int(c.group(1))
        if op == "scf.for":
            head, _, iters = rest.partition("iter_args(")
            iv, _, bounds = head.partition(" = ")
            deps[iv.strip()] = _operands(bounds)
            pairs = _ITER_RE.findall(iters.split(")")[0])
            for a, b in pairs:
                deps[a] = [b]
            deps[result] = [b for _, b in pairs]
            loops.append([a for a, _ in pairs])
        else:
            deps[result] = _operands(rest)
    return _Flow(deps, ops, args, shapes, consts)


def _kernel_line(ir: IRLine, file: str) -> int | None:
    return source_line(ir, file)


def _widths_by_line(ptx: list[IRLine], file: str) -> dict[tuple[str, int], tuple[int, bool]]:
    """Widest global access in bits per (ld|st, source line), from the PTX the line became, and
    whether those loads are asynchronous copies to shared memory (cp.async) rather than ld.global."""
    widest: dict[tuple[str, int], tuple[int, bool]] = {}
    for ir in ptx:
        line = source_line(ir, file)
        if line is None:
            continue
        for kind, suffix in _PTX_ACCESS_RE.findall(ir.text):
            parts = suffix.split(".")
            vec = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d", p)), 1)
            bits = next((int(p[1:]) for p in reversed(parts) if re.fullmatch(r"[bfsu]\d+", p)), 32)
            key = (kind, line)
            if vec * bits > widest.get(key, (0, False))[0]:
                widest[key] = (vec * bits, False)
        if m := _CP_ASYNC_RE.search(ir.text):
            key = ("ld", line)
            if int(m.group(1), 0) * 8 > widest.get(key, (0, False))[0]:
                widest[key] = (int(m.group(1), 0) * 8, True)
    return widest


def _causes(a: KernelAnalysis, flow: _Flow, ptr: str | None, mask: str | None) -> list[str]:
    """Why an access was not vectorized, one sentence per kernel argument to blame, with its fix.

    Blamed: the arguments Triton did not specialize as 16-divisible that reach the pointer (its
    alignment) or the mask (a vector straddles the mask's edge), found through the TTIR data flow;
    one on both paths is named once. Empty when none is to blame: the caller then proposes hints.
    """
    by_name = {arg.name: arg for arg in a.spec.args}
    out: list[str] = []
    via_ptr = flow.vector_args(ptr) if ptr else []
    via_mask = flow.vector_args(mask, mask=True) if mask else []
    for name in via_ptr:
        arg = by_name.get(name)
        if arg is None or arg.type == "constexpr" or arg.divisible_by_16:
            continue
        if arg.opted_out:
            out.append(
                f"`{arg.name}` is in do_not_specialize / do_not_specialize_on_alignment, so "
                "Triton assumes no "
                f"alignment for it; drop it from that list if it is usually a multiple of 16"
            )
        elif arg.type.startswith("*"):
            out.append(
                f"pointer `{arg.name}` is not 16-byte aligned in this launch (data_ptr() % 16 != 0, e.g. a "
                f"view that starts mid-row); pass aligned tensors"
            )
        elif arg.type.startswith(("i", "u")):
            value = "varies between launches" if arg.value == "varies" else f"= {arg.value}"
            if "stride" in arg.name.lower():
                out.append(
                    f"stride `{arg.name}` {value}, not a multiple of 16, so rows are not 16-byte "
                    "aligned; pad "
                    "the rows to a multiple of 16 elements, or if the stride always is one in "
                    "real use, say so "
                    f"with `{arg.name} = tl.multiple_of({arg.name}, 16)`"
                )
            else:
                out.append(
                    f"argument `{arg.name}` {value}, not a multiple of 16, so the addresses are not provably "
                    "16-byte aligned; pass an aligned value, or if it always is one in real "
                    "use, say so with "
                    f"`{arg.name} = tl.multiple_of({arg.name}, 16)`"
                )
    for name in via_mask:
        arg = by_name.get(name)
        if arg is None or name in via_ptr or arg.type == "constexpr" or arg.divisible_by_16:
            continue
        if arg.type.startswith(("i", "u")):
            value = (
                "a size that varies between launches"
                if arg.value == "varies"
                else f"`{arg.name}` = {arg.value}"
            )
            out.append(
                f"the mask compares against {value}, not a multiple of 16, so a vector may "
                "straddle the mask's "
                f"edge; make the size a multiple of 16 (pad it), or mask only the last block"
            )
    return out


def _access_findings(a: KernelAnalysis, flow: _Flow) -> list[Finding]:
    """``unvectorized-load``/``-store``: a ``tt.load``/``tt.store`` moving fewer bits per PTX access
    than its tile allows (the last dimension, the elements a thread holds, 128 bits at most).

    One rule, one loop: the TTIR gives the possible width, the PTX of the same source line the one
    achieved. Gathers and accesses with no tensor of pointers (scalars, block pointers,
    descriptors) are skipped, since no hint can vectorize them; one finding per line and kind.
    """
    ttir, ptx = a.stages.get("ttir", []), a.stages.get("ptx", [])
    if not ttir or not ptx:
        return []
    file = a.spec.file
    widths = _widths_by_line(ptx, file)
    threads = 32 * int(a.spec.option("num_warps") or 4)
    findings: list[Finding] = []
    done: set[tuple[str, int]] = set()
    for ir in ttir:
        m = _DEF_RE.match(ir.text)
        if m and m.group(2) == "tt.load":
            kind, ops = "ld", _operands(m.group(3))
            ptr, mask = (ops[0] if ops else None), (ops[1] if len(ops) > 1 else None)
            rest = m.group(3)
        elif ir.text.strip().startswith("tt.store "):
            kind, ops = "st", _operands(ir.text.strip()[len("tt.store ") :])
            ptr, mask = (ops[0] if ops else None), (ops[2] if len(ops) > 2 else None)
            rest = ir.text
        else:
            continue
        t = _TENSOR_RE.search(rest)
        line = _kernel_line(ir, file)
        if t is None or line is None or (kind, line) in done:
            continue  # scalar accesses, block pointers and descriptors are not ours to judge
        if ptr is not None and flow.loads_through_memory(ptr):
            continue  # a gather: addresses read at run time cannot be proven contiguous, by design
        shape = [int(x) for x in t.group(1).split("x")]
        bits = int(t.group(3))
        numel = 1
        for s in shape:
            numel *= s
        per_thread = max(1, numel // threads)
        possible = min(128, bits * min(shape[-1], per_thread, max(1, 128 // bits)))
        achieved, copies = widths.get((kind, line), (None, False))
        if achieved is None or achieved >= possible:
            continue
        done.add((kind, line))
        causes = _causes(a, flow, ptr, mask)
        what = "global stores" if kind == "st" else "global loads"
        if copies:
            what = "async copies to shared memory"
        head = (
            f"{what} here are {achieved}-bit where {possible}-bit ones were possible "
            f"({possible // bits} × {t.group(2)}{bits} per thread)"
        )
        if causes:
            msg = f"{head}: " + "; ".join(causes) + "."
        else:
            msg = (
                f"{head}: the compiler could not prove the addresses contiguous and aligned; if "
                "they are, say so "
                f"with `offs = tl.max_contiguous(tl.multiple_of(offs, {min(shape[-1], 16)}), {shape[-1]})`."
            )
        findings.append(_finding("unvectorized-load" if kind == "ld" else "unvectorized-store", line, msg))
    return findings


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
    flow = _flow(a.stages.get("ttir", []))
    findings = [
        *_spill(a),
        *_dots(a),
        *_access_findings(a, flow),
        *_occupancy(a),
        *_conversions(a),
        *_pipelining(a),
    ]
    unique: dict[tuple[str, int | None], Finding] = {}
    for f in findings:  # one finding per (kind, line) in a specialization
        unique.setdefault((f.kind, f.line), f)
    return sorted(unique.values(), key=lambda f: (f.line is None, f.line or 0, f.kind))
