"""The vectorization lint: a load or store moving fewer bits per PTX access than its tile allows,
and which kernel argument is to blame (found through the TTIR data flow, :mod:`.flow`)."""

from __future__ import annotations

import re

from deuteron.explain.analysis import KernelAnalysis
from deuteron.explain.flow import DEF_RE, Flow, operands
from deuteron.explain.stages import IRLine, source_line
from deuteron.model.finding import Finding

_TENSOR_RE = re.compile(r"tensor<([0-9x]+)x!tt\.ptr<([a-z]+)(\d+)>")
_PTX_ACCESS_RE = re.compile(r"\b(ld|st)\.global(\S*)")
_CP_ASYNC_RE = re.compile(
    r"\bcp\.async\.c[ag]\.shared\.global\S*\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-fA-F]+|\d+)"
)


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


def _causes(a: KernelAnalysis, flow: Flow, ptr: str | None, mask: str | None) -> list[str]:
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


def unvectorized_accesses(a: KernelAnalysis, flow: Flow) -> list[Finding]:
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
        m = DEF_RE.match(ir.text)
        if m and m.group(2) == "tt.load":
            kind, ops = "ld", operands(m.group(3))
            ptr, mask = (ops[0] if ops else None), (ops[1] if len(ops) > 1 else None)
            rest = m.group(3)
        elif ir.text.strip().startswith("tt.store "):
            kind, ops = "st", operands(ir.text.strip()[len("tt.store ") :])
            ptr, mask = (ops[0] if ops else None), (ops[2] if len(ops) > 2 else None)
            rest = ir.text
        else:
            continue
        t = _TENSOR_RE.search(rest)
        line = source_line(ir, file)
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
        kind_name = "unvectorized-load" if kind == "ld" else "unvectorized-store"
        findings.append(Finding(kind=kind_name, severity="warning", message=msg, line=line))
    return findings
