"""TTIR as a def-use graph: which kernel arguments a value depends on, and along which dimension.

The vectorization lint (:mod:`.vectorization`) asks it why an access is narrow: which argument, not
specialized as a multiple of 16, reaches the access's pointer or mask.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deuteron.explain.stages import IRLine

DEF_RE = re.compile(r"^\s*(%[\w.]+)(?::\d+)? = (\S+)\s*(.*)$")  # %result = op rest


@dataclass
class Flow:
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


_SSA_RE = re.compile(r"%[\w.]+")


def operands(rest: str) -> list[str]:
    body = rest.split(" : ", 1)[0]
    return _SSA_RE.findall(body)


_SHAPE_RE = re.compile(r"tensor<((?:\d+x)+)")
_CONST_RE = re.compile(r"arith\.constant (?:dense<)?(-?\d+)>? : (?:tensor<[0-9x]+x)?i\d+")


def _shape(rest: str) -> tuple[int, ...] | None:
    """The shape of the value an op defines: the type after ``->``, else the first after `` : ``."""
    types = rest.rsplit(" -> ", 1)[1] if " -> " in rest else rest.split(" : ", 1)[-1]
    m = _SHAPE_RE.search(types) if (" : " in rest or " -> " in rest) else None
    return tuple(int(x) for x in m.group(1).rstrip("x").split("x")) if m else None


# the kernel's arguments in its ``tt.func`` line, and an ``scf.for``'s iter_args pairs
_FUNC_RE = re.compile(r"tt\.func\s+(?:public\s+|private\s+)?@[\w.$]+\((.*)\)")
_ARG_RE = re.compile(r"(%[\w.]+): ")
_ITER_RE = re.compile(r"(%[\w.]+) = (%[\w.]+)")


def ttir_flow(ttir: list[IRLine]) -> Flow:
    """The def-use graph of a kernel's TTIR: each SSA value's operands, defining op, shape and
    integer constant. An ``scf.for``'s iter args also depend on what its ``scf.yield`` hands them,
    so a value carried around a loop reaches what updates it (``offs += BLOCK``)."""
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
            for name, value in zip(loops.pop(), operands(stripped[len("scf.yield") :]), strict=False):
                deps.setdefault(name, []).append(value)
            continue
        m = DEF_RE.match(text)
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
            deps[iv.strip()] = operands(bounds)
            pairs = _ITER_RE.findall(iters.split(")")[0])
            for a, b in pairs:
                deps[a] = [b]
            deps[result] = [b for _, b in pairs]
            loops.append([a for a, _ in pairs])
        else:
            deps[result] = operands(rest)
    return Flow(deps, ops, args, shapes, consts)
