"""A kernel's source, with everything it reads from its module, as one file can hold it.

A reproducer must compile the same kernel with nothing of the program around it. What Triton itself
compiles is the kernel's function plus what its ``DependenciesFinder`` (``triton/runtime/jit.py``)
walks to key the cache: every global name the body reads, looked up in the function's globals
and closure, where each ``@triton.jit`` callee is followed in turn and each other value must be a
constant. We walk the same way, over the same scope (``JITCallable.get_capture_scope``: globals
then closure cells), and sort each name the source reads into:

- a ``@triton.jit`` (or ``@triton.constexpr_function``) function: its source, verbatim, followed
  transitively; helpers come first, the kernel last;
- a module (``tl``, ``libdevice``): an import line;
- a constant (an int, float, bool, str or None, a tuple of them, a ``tl.constexpr`` of one, a
  ``tl.dtype``): an assignment;
- a function or class of an importable module (``triton.language.math.exp``): an import line;
- anything else: a note (the reproducer says what it could not carry over).

Decorators: the ``@triton.jit`` one is kept as written; ``@triton.autotune`` and
``@triton.heuristics`` are left out (the reproducer passes the values they chose) and named in
``dropped``.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any

_KEPT_DECORATORS = ("jit", "constexpr_function")


@dataclass
class Function:
    """One function's source as a reproducer prints it: dedented, with its kept decorators."""

    name: str
    source: str
    file: str
    line: int


@dataclass
class KernelSource:
    """Everything a standalone file needs to define one kernel (see the module's text)."""

    name: str
    functions: list[Function] = field(default_factory=list)  # helpers first, the kernel last
    imports: list[str] = field(default_factory=list)
    constants: list[tuple[str, str]] = field(default_factory=list)  # (name, Python expression)
    aliases: list[tuple[str, str]] = field(default_factory=list)  # (name, function): after the functions
    dropped: list[str] = field(default_factory=list)  # decorators left out, as written
    notes: list[str] = field(default_factory=list)


def kernel_source(kernel: Any) -> KernelSource:
    """The source of ``kernel`` (a JITFunction or InterpretedFunction) and all it reads."""
    out = KernelSource(str(kernel.__name__))
    seen: dict[str, Any] = {}
    _visit(kernel, out, seen, top=True)
    return out


def _is_jit(value: Any) -> bool:
    from triton.runtime import jit
    from triton.runtime.interpreter import InterpretedFunction

    callable_kinds = getattr(jit, "JITCallable", jit.JITFunction)  # JITCallable: triton 3.5 and later
    return isinstance(value, (callable_kinds, InterpretedFunction))


def _visit(jit: Any, out: KernelSource, seen: dict[str, Any], top: bool = False) -> None:
    """Add ``jit``'s callees (first) and its own source to ``out``."""
    fn = jit.fn
    name = fn.__name__
    if name in seen:
        if seen[name] is not fn:
            out.notes.append(f"two functions are named {name}: only the first is in the file")
        return
    seen[name] = fn
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        out.notes.append(f"the source of {name} is not available ({exc})")
        return
    source = textwrap.dedent("".join(lines))
    tree = ast.parse(source)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        out.notes.append(f"{name} is not a plain function")
        return
    scope = _scope(jit)
    kept, dropped = _decorators(node, source, scope)
    if top:
        out.dropped.extend(dropped)
    body = source.splitlines()[node.lineno - 1 :]
    text = "\n".join([*kept, *body]) if kept else "\n".join(["@triton.jit", *body])
    if not kept:
        _add_import(out, "import triton")
    for global_name in _free_names(
        node, skip=[d for d in node.decorator_list if _source(d, source) in dropped]
    ):
        _resolve(global_name, scope, out, seen)
    out.functions.append(Function(name, text.rstrip() + "\n", str(fn.__code__.co_filename), int(first)))


def _scope(jit: Any) -> dict[str, Any]:
    fn = jit.fn
    scope = dict(fn.__globals__)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # a cell not yet filled
            continue
    return scope


def _source(node: ast.AST, source: str) -> str:
    return "@" + (ast.get_source_segment(source, node) or ast.unparse(node))


def _decorators(node: ast.FunctionDef, source: str, scope: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the decorators kept, as written; those left out)."""
    kept: list[str] = []
    dropped: list[str] = []
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        value = _evaluate(target, scope)
        named = getattr(value, "__name__", "")
        if named in _KEPT_DECORATORS and str(getattr(value, "__module__", "")).startswith("triton"):
            kept.append(_source(decorator, source))
        else:
            dropped.append(_source(decorator, source))
    return kept, dropped


def _evaluate(node: ast.AST, scope: dict[str, Any]) -> Any:
    """The value of a dotted name (``triton.jit``) in ``scope``; None when it is anything else."""
    if isinstance(node, ast.Name):
        return scope.get(node.id, getattr(builtins, node.id, None))
    if isinstance(node, ast.Attribute):
        return getattr(_evaluate(node.value, scope), node.attr, None)
    return None


def _free_names(node: ast.FunctionDef, skip: list[ast.expr]) -> list[str]:
    """The names the function reads that it does not bind itself, in the order they appear."""
    args = node.args
    local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    local.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    skipped = {id(n) for d in skip for n in ast.walk(d)}
    names: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
            local.add(sub.id)
    for sub in ast.walk(node):
        loaded = isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and id(sub) not in skipped
        if loaded and sub.id not in local and sub.id not in names:  # type: ignore[attr-defined]
            names.append(sub.id)  # type: ignore[attr-defined]
    return names


def _resolve(name: str, scope: dict[str, Any], out: KernelSource, seen: dict[str, Any]) -> None:
    """Sort one global name the source reads (see the module's text)."""
    if name not in scope:
        return  # a builtin (range, min), or a name Triton will refuse anyway
    value = scope[name]
    if _is_jit(value):
        _visit(value, out, seen)
        if value.fn.__name__ != name and (name, value.fn.__name__) not in out.aliases:
            out.aliases.append((name, value.fn.__name__))
        return
    if inspect.ismodule(value):
        if getattr(value, "__spec__", None) is None or value.__name__ == "__main__":
            out.notes.append(f"{name} (module {value.__name__}) is read by the kernel but cannot be imported")
        _add_import(out, _import_line(name, value.__name__))
        return
    constant = _constant(value)
    if constant is not None:
        _add_constant(out, name, constant)
        return
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", "")
    if module and _importable(module) and qualname.isidentifier():
        line = f"from {module} import {qualname}" + (f" as {name}" if qualname != name else "")
        _add_import(out, line)
        return
    out.notes.append(f"{name} (a {type(value).__name__}) is read by the kernel but not in this file")


def _constant(value: Any) -> str | None:
    """A Python expression for a constant the kernel reads, None when it is no constant."""
    import triton.language as tl

    from deuteron.triton.runtime.launch_capture import dtype_name

    if isinstance(value, tl.constexpr):
        inner = _constant(value.value)
        return f"tl.constexpr({inner})" if inner is not None else None
    if isinstance(value, tl.dtype):
        return f"tl.{dtype_name(value)}"
    return literal(value)


def literal(value: Any) -> str | None:
    """``value`` as Python source when it is a plain constant (non-finite floats included)."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else f'float("{value}")'
    if isinstance(value, tuple):
        parts = [literal(v) for v in value]
        if any(p is None for p in parts):
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"  # type: ignore[arg-type]
    return None


def _importable(module: str) -> bool:
    """A module a standalone file can import: not the program's ``__main__``, not a file loaded by path."""
    found = sys.modules.get(module)
    spec = getattr(found, "__spec__", None)
    return module != "__main__" and spec is not None and getattr(spec, "origin", None) is not None


def _import_line(name: str, module: str) -> str:
    if module == name:
        return f"import {module}"
    parent, _, last = module.rpartition(".")
    if last == name and parent:
        return f"from {parent} import {name}"
    return f"import {module} as {name}"


def _add_import(out: KernelSource, line: str) -> None:
    if line not in out.imports:
        out.imports.append(line)


def _add_constant(out: KernelSource, name: str, expression: str) -> None:
    for known, value in out.constants:
        if known == name:
            if value != expression:
                out.notes.append(f"{name} is {value} in one function and {expression} in another")
            return
    out.constants.append((name, expression))
