"""Where the compiler moved work across a ``pl.scope``'s edges, read from the kernel's TTGIR.

A scope measures the clock between its two ``proton.record`` ops *as compiled*. Triton's passes
hoist, sink and reorder operations, and software pipelining issues a loop's loads stages ahead of
the iteration that uses them, so a scope can time less (or other) work than the lines inside it in
the source. Proton therefore keeps Triton's DSL off by default. Deuteron instruments it when asked
and says, per scope, what it can see in the final TTGIR: operations whose source lines lie inside
the scope but that now sit outside its records (moved out), operations from outside that sit inside
(moved in), and pipelining marks (``loop.stage`` attributes, asynchronous copies) between the
records. A scope with none of these reads as written.
"""

from __future__ import annotations

import re

from deuteron.explain.stages import IRLine, mlir_lines

_RECORD_RE = re.compile(r'proton\.record (start|end) "([^"]+)"')
_OP_RE = re.compile(r"^\s*(?:%[\w#:]+(?:, %[\w#:]+)* = )?\"?([a-z_]+\.[a-z_0-9.]+)")
_PIPELINE_MARKS = (
    "loop.stage", "async_copy_global_to_local", "async_tma_copy", "async_wait", "ttng.wait_barrier",
)  # fmt: skip
_SKIP_OPS = ("proton.record", "scf.yield", "tt.return", "arith.constant")


def _op(ir: IRLine) -> str | None:
    m = _OP_RE.match(ir.text)
    if m is None or m.group(1).startswith(_SKIP_OPS):
        return None
    return m.group(1)


def _sides(lines: list[IRLine]) -> dict[str, tuple[int, int]]:
    """Each scope's first start and first end record, as indexes into ``lines``."""
    edges: dict[str, dict[str, int]] = {}
    for index, ir in enumerate(lines):
        m = _RECORD_RE.search(ir.text)
        if m:
            edges.setdefault(m.group(2), {}).setdefault(m.group(1), index)
    return {name: (at["start"], at["end"]) for name, at in edges.items() if "start" in at and "end" in at}


Place = tuple[str, int]  # (file, line)


def _frames_by_side(lines: list[IRLine], first: int, last: int) -> tuple[set[Place], set[Place]]:
    """The source lines of the ops between a scope's records, and of the ops outside them."""
    inside: set[tuple[str, int]] = set()
    outside: set[tuple[str, int]] = set()
    for index, ir in enumerate(lines):
        if _op(ir) is None or not ir.frames:
            continue
        (inside if first < index < last else outside).add(ir.frames[-1])
    return inside, outside


def scope_notes(ttir: str, ttgir: str) -> dict[str, str]:
    """One line per scope the compiler moved work across, or pipelined, by scope name: the ops
    between the records in TTIR (before the GPU passes, in source order) against those in TTGIR."""
    before, after = mlir_lines(ttir), mlir_lines(ttgir)
    sides_before, sides_after = _sides(before), _sides(after)
    notes: dict[str, str] = {}
    for name, (first, last) in sides_after.items():
        if name not in sides_before:
            continue
        was_in, was_out = _frames_by_side(before, *sides_before[name])
        only_in, only_out = was_in - was_out, was_out - was_in
        out_ops, in_ops = [], []
        for index, ir in enumerate(after):
            op = _op(ir)
            if op is None or not ir.frames:
                continue
            inside = first < index < last
            if not inside and ir.frames[-1] in only_in:
                out_ops.append(op)
            elif inside and ir.frames[-1] in only_out:
                in_ops.append(op)
        between = " ".join(ir.text for ir in after[first:last])
        pipelined = [mark for mark in _PIPELINE_MARKS if mark in between]
        parts = []
        if out_ops:
            parts.append(f"{len(out_ops)} ops of its lines now run outside it ({_names(out_ops)})")
        if in_ops:
            parts.append(f"{len(in_ops)} ops of other lines now run inside it ({_names(in_ops)})")
        if pipelined:
            parts.append(f"it spans software-pipelined code ({', '.join(pipelined)}): iterations overlap")
        if parts:
            notes[name] = "the compiler moved work across this scope: " + "; ".join(parts)
    return notes


def _names(ops: list[str]) -> str:
    seen: list[str] = []
    for op in ops:
        if op not in seen:
            seen.append(op)
    return ", ".join(seen[:3]) + (", ..." if len(seen) > 3 else "")
