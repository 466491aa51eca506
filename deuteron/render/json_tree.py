"""The viewer's ``--json``: the shown tree with its columns, for scripts and the web UI.

Written without recursion (any depth), NaN as null."""

from __future__ import annotations

import json
import math
from typing import IO, Any

from deuteron.formats.jsonio import tree_chunks
from deuteron.model.tree import Node, Profile


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def render_json(p: Profile, columns: list[str], file: IO[str]) -> None:
    def fields(n: Node) -> dict[str, Any]:
        return {"name": n.name, "type": n.type, "metrics": {k: _clean(v) for k, v in n.metrics.items()}}

    head = json.dumps({"columns": columns, "metadata": dict(p.metadata), "devices": p.devices}, default=str)
    file.write(head[:-1] + ', "tree": ')
    for chunk in tree_chunks(p.root, fields, lambda n: list(n.children.values())):
        file.write(chunk)
    file.write("}\n")
