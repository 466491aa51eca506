"""Whether an atomic's value decides what its program does next, read from the kernel's source.

The interpreter runs one schedule, so an atomic's value (a ticket, a poll) is what that schedule put
there; on a GPU another program may come first and the value differ. Whether that matters for the
memory model depends on what the program does with the value:

- it decides a branch or a mask (``while tl.atomic_add(flag, 0) == 0``, ``if ticket == n - 1:``,
  ``mask=offs < tl.where(ticket == n - 1, BLOCK, 0)``): the accesses it lets through happen only
  when the value says the other programs' releases came first, whatever the schedule: a *wait*;
- it is thrown away (``tl.atomic_add(flag, 0, sem="acquire")`` as a statement) or only stored: what
  follows runs whatever the value, so the acquire orders it only in this schedule: *not a wait*;
- it goes where this reading cannot follow (a call of another function, no source): *unknown*.

Only the kernel function's own source is read (``ast``), with names assigned from the value
followed through later assignments of the same function.
"""

from __future__ import annotations

import ast
import functools
import linecache
from enum import Enum


class Use(Enum):
    DECIDES = "decides"  # the value decides a branch or a mask: a wait
    DISCARDED = "discarded"  # nothing the program does depends on it
    UNKNOWN = "unknown"  # it goes where this reading cannot follow


def atomic_use(file: str, line: int) -> Use:
    """How the value of the atomic at ``file:line`` is used (see the module doc)."""
    try:
        return _use(file, line)
    except (SyntaxError, ValueError, RecursionError):
        return Use.UNKNOWN


def _use(file: str, line: int) -> Use:
    lines = linecache.getlines(file)
    if not lines:
        return Use.UNKNOWN
    return _use_in("".join(lines), line)


@functools.lru_cache(maxsize=256)
def _use_in(source: str, line: int) -> Use:
    tree = ast.parse(source)
    function = _function_at(tree, line)
    if function is None:
        return Use.UNKNOWN
    parents = {child: node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    calls = [
        n
        for n in ast.walk(function)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr.startswith("atomic_")
        and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    if len(calls) != 1:
        return Use.UNKNOWN
    node: ast.AST = calls[0]
    while not isinstance(node, ast.stmt):
        parent = parents.get(node)
        if parent is None:
            return Use.UNKNOWN
        if _decides(parent, node):
            return Use.DECIDES
        node = parent
    if isinstance(node, ast.Expr):
        return Use.DISCARDED
    if isinstance(node, (ast.If, ast.While)):
        return Use.DECIDES  # inside the test (bodies are statements, so we stopped there)
    if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return Use.UNKNOWN
    return _names_use(function, _targets(node), parents)


def _names_use(function: ast.FunctionDef, tainted: set[str], parents: dict[ast.AST, ast.AST]) -> Use:
    """How names holding the value (and names assigned from them) are used in the function."""
    changed = True
    while changed:  # follow the value through assignments
        changed = False
        for stmt in ast.walk(function):
            if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                continue
            if stmt.value is not None and _mentions(stmt.value, tainted):
                new = _targets(stmt) - tainted
                if new:
                    tainted |= new
                    changed = True
    unknown = False
    for name in ast.walk(function):
        if not (isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load) and name.id in tainted):
            continue
        node: ast.AST = name
        while not isinstance(node, ast.stmt):
            parent = parents.get(node)
            if parent is None:
                break
            if _decides(parent, node):
                return Use.DECIDES
            if isinstance(parent, ast.Call) and node in parent.args and not _is_tl(parent.func):
                unknown = True  # handed to another function
            node = parent
        if isinstance(node, ast.Return):
            unknown = True
    return Use.UNKNOWN if unknown else Use.DISCARDED


def _decides(parent: ast.AST, child: ast.AST) -> bool:
    """``child`` is the test of a branch or loop, or a mask (``mask=``, ``tl.where``'s condition)."""
    if isinstance(parent, (ast.If, ast.While, ast.IfExp)) and child is parent.test:
        return True
    return isinstance(parent, ast.keyword) and parent.arg == "mask"


def _is_tl(func: ast.AST) -> bool:
    """A call of ``tl.something`` (``triton.language``)."""
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in ("tl", "triton")
    )


def _targets(stmt: ast.stmt) -> set[str]:
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _function_at(tree: ast.Module, line: int) -> ast.FunctionDef | None:
    best: ast.FunctionDef | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        if node.lineno <= line <= (node.end_lineno or node.lineno) and (
            best is None or node.lineno >= best.lineno
        ):
            best = node
    return best
