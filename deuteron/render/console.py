"""The terminal tree: value columns on the left, the calling context on the right.

Only reads a tree whose node metrics are already the columns to show (``processors.derive``).
On a terminal it colours kernels, states and diff signs with rich; elsewhere (a pipe, a file)
it writes plain text, which is also what keeps 100 000-node profiles fast to print.
"""

from __future__ import annotations

import math
import sys
from typing import IO, Any

from rich.console import Console
from rich.text import Text

from ..tree import KERNEL, STATE, Node, Profile

_STYLE = {KERNEL: "bold green", STATE: "magenta"}


def format_value(value: Any, signed: bool = False) -> str:
    if not isinstance(value, (int, float)) or (isinstance(value, float) and math.isnan(value)):
        return "-"
    v = float(value)
    a = abs(v)
    text = f"{v:.3e}" if a and (a >= 1e7 or a < 1e-3) else f"{v:.3f}"
    return ("+" + text) if signed and v > 0 else text


def _rows(p: Profile, columns: list[str], signed: bool) -> list[tuple[list[str], str, str, str]]:
    rows: list[tuple[list[str], str, str, str]] = []
    stack: list[tuple[Node, str, str]] = [(p.root, "", "")]
    while stack:
        node, branch, indent = stack.pop()
        values = [format_value(node.metrics.get(c), signed) for c in columns]
        mark = node.metrics.get("diff", "")
        rows.append((values, branch, node.name + (f"  [{mark}]" if mark else ""), node.type))
        kids = list(node.children.values())
        for i in range(len(kids) - 1, -1, -1):
            last = i == len(kids) - 1
            stack.append((kids[i], indent + ("└─ " if last else "├─ "), indent + ("   " if last else "│  ")))
    return rows


def render_profile(
    p: Profile,
    columns: list[str],
    *,
    file: IO[str] | None = None,
    signed: bool = False,
    color: bool | None = None,
) -> None:
    out = file if file is not None else sys.stdout
    rows = _rows(p, columns, signed)
    widths = [max(len(c), *(len(r[0][i]) for r in rows)) for i, c in enumerate(columns)]
    header = "  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)) + "  name"
    use_color = color if color is not None else (out.isatty() if hasattr(out, "isatty") else False)
    if not use_color:
        lines = [header]
        for values, branch, name, _type in rows:
            cells = "  ".join(v.rjust(w) for v, w in zip(values, widths, strict=True))
            lines.append(cells + "  " + branch + name)
        out.write("\n".join(lines) + "\n")
        return
    text = Text(header + "\n", style="bold")
    for values, branch, name, ntype in rows:
        for v, w in zip(values, widths, strict=True):
            style = "cyan"
            if signed and v.startswith("+"):
                style = "red"
            elif signed and v.startswith("-") and v != "-":
                style = "green"
            text.append(v.rjust(w), style=style)
            text.append("  ")
        text.append(branch, style="dim")
        text.append(name + "\n", style=_STYLE.get(ntype, ""))
    Console(file=out, force_terminal=True, highlight=False, soft_wrap=True).print(text, end="")
