"""The terminal tree: value columns on the left, the calling context on the right.

Only reads a tree whose node metrics are already the columns to show (``processors.derive``).
On a terminal it colours kernels, states and diff signs with rich; elsewhere (a pipe, a file)
it writes plain text, which is also what keeps 100 000-node profiles fast to print.
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from itertools import repeat
from typing import IO, Any

import numpy as np
from rich.console import Console
from rich.text import Text

from deuteron.model.names import display_name, is_mangled
from deuteron.model.tree import KERNEL, STATE, Node, Profile
from deuteron.process.terminal import ESCAPES as _SAFE
from deuteron.process.terminal import printable

_STYLE = {KERNEL: "bold green", STATE: "magenta"}


def format_value(value: Any) -> str:
    """One number as the viewer shows it: fixed-point, scientific when very large or small."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:  # NaN
        return "-"
    a = abs(value)
    return f"{value:.3e}" if a and (a >= 1e7 or a < 1e-3) else f"{value:.3f}"


def format_cell(value: Any, column: str) -> str:
    """One value of ``column`` as the tree prints it: a whole count as a whole number."""
    if _counted(column) and isinstance(value, (int, float)) and value == value and float(value).is_integer():
        return f"{int(value)}"
    return format_value(value)


def _walk(p: Profile, full_names: bool = False) -> tuple[list[Node], list[str], list[str]]:
    """Nodes in display order with their tree-branch prefixes and labels (a mangled C++ name as
    its short form, or ``full_names`` its whole demangled text: :mod:`deuteron.model.names`)."""
    nodes: list[Node] = []
    branches: list[str] = []
    labels: list[str] = []
    stack: list[tuple[Node, str, str]] = [(p.root, "", "")]
    pop, push = stack.pop, stack.append
    while stack:
        node, branch, indent = pop()
        nodes.append(node)
        branches.append(branch)
        mark = node.metrics.get("diff")
        name = node.name
        if is_mangled(name):
            name = display_name(name, full_names)
        name = name.translate(_SAFE)
        labels.append(f"{name}  [{mark}]" if mark else name)
        kids = list(node.children.values())
        if kids:
            last = kids.pop()
            push((last, indent + "└─ ", indent + "   "))
            mid_branch, mid_indent = indent + "├─ ", indent + "│  "
            for kid in reversed(kids):
                push((kid, mid_branch, mid_indent))
    return nodes, branches, labels


# Columns that count things (launches, bytes, flops, programs, scope instances, cycles, PC samples
# and their stall reasons): shown as whole numbers when every value is one, "12" rather than "12.000".
_COUNTED = (
    "count", "calls", "bytes", "flops", "programs", "instances", "cycles", "scope programs",
    "num_samples", "num_stalled_samples", "stalled_",
)  # fmt: skip


def _counted(column: str) -> bool:
    base, _, what = column.partition(" (")
    if what and what.rstrip(")") not in ("old", "new", "min", "median", "max"):
        return False  # a ratio or a change is a fraction even between counts
    return base.startswith(_COUNTED) and "/" not in base


def _format_column(values: list[Any], signed: bool, column: str = "") -> list[str]:
    """Format a whole column at once: fixed-point in bulk, the rare odd value one by one; a text
    value (a property such as a scope's compiler note) as itself, cut at 100 characters."""
    if any(isinstance(v, str) for v in values):
        return [printable(v)[:100] if isinstance(v, str) else format_value(v) for v in values]
    arr = np.array([v if v.__class__ in (int, float) else np.nan for v in values], dtype=float)
    finite = arr[~np.isnan(arr)]
    if (
        _counted(column)
        and finite.size
        and bool(np.all(finite == np.round(finite)))
        and (float(np.abs(finite).max()) < 1e15)
    ):
        texts = ["-" if t != t else f"{int(t)}" for t in arr.tolist()]
        if signed:
            texts = ["+" + t if v > 0 else t for t, v in zip(texts, arr.tolist(), strict=True)]
        return texts
    texts = list(map("{:.3f}".format, arr.tolist()))
    magnitude = np.abs(arr)
    odd = np.flatnonzero(np.isnan(arr) | (magnitude >= 1e7) | ((magnitude < 1e-3) & (magnitude > 0)))
    for i in odd.tolist():
        texts[i] = format_value(values[i])
    if signed:
        for i in np.flatnonzero(arr > 0).tolist():
            texts[i] = "+" + texts[i]
    return texts


def render_profile(
    p: Profile,
    columns: list[str],
    *,
    file: IO[str] | None = None,
    signed: bool | Collection[str] = False,
    color: bool | None = None,
    full_names: bool = False,
) -> None:
    """The tree as text; kernels' C++ names short (``vectorized_elementwise_kernel<…>``) unless
    ``full_names`` (the whole demangled name)."""
    out = file if file is not None else sys.stdout
    nodes, branches, labels = _walk(p, full_names)
    signs = set(columns) if signed is True else set(signed or ())
    formatted = [_format_column([n.metrics.get(c) for n in nodes], c in signs, c) for c in columns]
    widths = [max(len(c), *map(len, col)) for c, col in zip(columns, formatted, strict=True)]
    padded = [list(map(str.rjust, col, repeat(w))) for col, w in zip(formatted, widths, strict=True)]
    header = "  ".join(printable(c).rjust(w) for c, w in zip(columns, widths, strict=True)) + "  name"
    use_color = color if color is not None else (out.isatty() if hasattr(out, "isatty") else False)
    if not use_color:
        trees = list(map(str.__add__, branches, labels))
        lines = list(map("  ".join, zip(*padded, trees, strict=True)))
        out.write(header + "\n" + "\n".join(lines) + "\n")
        return
    text = Text()
    text.append(header + "\n", style="bold")
    marked = [c in signs for c in columns]
    for i, node in enumerate(nodes):
        for col, has_sign in zip(padded, marked, strict=True):
            v = col[i]
            style = "cyan"
            stripped = v.lstrip()
            if has_sign and stripped.startswith("+"):
                style = "red"
            elif has_sign and stripped.startswith("-") and stripped != "-":
                style = "green"
            text.append(v, style=style)
            text.append("  ")
        text.append(branches[i], style="dim")
        text.append(labels[i] + "\n", style=_STYLE.get(node.type, ""))
    Console(file=out, force_terminal=True, highlight=False, soft_wrap=True).print(text, end="")


def render_flat(
    rows: list[Any], columns: list[str], *, file: IO[str] | None = None, full_names: bool = False
) -> None:
    """The flat view (:mod:`deuteron.view.flat`): per name, each column's total then self, the
    number of places the name has in the tree, and the name (a C++ kernel's short form)."""
    out = file if file is not None else sys.stdout
    heads: list[str] = []
    formatted: list[list[str]] = []
    for i, column in enumerate(columns):
        for side, label in (("total", f"total {column}"), ("own", f"self {column}")):
            heads.append(label)
            formatted.append(_format_column([getattr(r, side)[i] for r in rows], False, column))
    heads.append("places")
    formatted.append([str(r.places) for r in rows])
    widths = [max(len(h), *map(len, col)) if col else len(h) for h, col in zip(heads, formatted, strict=True)]
    names = [display_name(r.name, full_names) if is_mangled(r.name) else r.name for r in rows]
    lines = ["  ".join(printable(h).rjust(w) for h, w in zip(heads, widths, strict=True)) + "  name"]
    for i, name in enumerate(names):
        cells = [col[i].rjust(w) for col, w in zip(formatted, widths, strict=True)]
        lines.append("  ".join(cells) + "  " + printable(name))
    out.write("\n".join(lines) + "\n")


def render_flat_ranks(
    rows: list[Any],
    columns: list[str],
    straggler: str | None,
    *,
    file: IO[str] | None = None,
    full_names: bool = False,
) -> None:
    """The flat view of one job's ranks (:func:`deuteron.view.flat.spread_rows`): per name, each
    column's total then self as min, median and max over the ranks, the most places one rank has,
    the rank holding the largest total (``*``: the straggler, named in the first line), the name."""
    out = file if file is not None else sys.stdout
    heads: list[str] = []
    formatted: list[list[str]] = []
    for i, column in enumerate(columns):
        for side, word in (("total", "total"), ("own", "self")):
            for k, stat in enumerate(("min", "median", "max")):
                label = f"{word} {column} ({stat})"
                heads.append(label)
                formatted.append(_format_column([getattr(r, side)[i][k] for r in rows], False, label))
    heads.append("places")
    formatted.append([str(r.places) for r in rows])
    heads.append("max at")
    formatted.append([f"rank {r.max_rank}" + (" *" if r.max_rank == straggler else "") for r in rows])
    widths = [max(len(h), *map(len, col)) if col else len(h) for h, col in zip(heads, formatted, strict=True)]
    names = [display_name(r.name, full_names) if is_mangled(r.name) else r.name for r in rows]
    said = (
        f"straggler: rank {straggler} (* where it holds the largest total)"
        if straggler is not None
        else "no straggler named (deuteron view --advise says why)"
    )
    lines = [said, "  ".join(printable(h).rjust(w) for h, w in zip(heads, widths, strict=True)) + "  name"]
    for i, name in enumerate(names):
        cells = [col[i].rjust(w) for col, w in zip(formatted, widths, strict=True)]
        lines.append("  ".join(cells) + "  " + printable(name))
    out.write("\n".join(lines) + "\n")
