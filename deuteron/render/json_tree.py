"""The viewer's ``--json``: the shown tree with its columns, for scripts and the web UI."""

from __future__ import annotations

import json
import math
from typing import IO, Any

from ..model.tree import Node, Profile


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def render_json(p: Profile, columns: list[str], file: IO[str]) -> None:
    def node_json(n: Node) -> dict[str, Any]:
        return {
            "name": n.name,
            "type": n.type,
            "metrics": {k: _clean(v) for k, v in n.metrics.items()},
            "children": [],
        }

    root = node_json(p.root)
    stack = [(p.root, root)]
    while stack:
        src, dst = stack.pop()
        for child in src.children.values():
            cj = node_json(child)
            dst["children"].append(cj)
            stack.append((child, cj))
    meta = dict(p.metadata)
    json.dump({"columns": columns, "metadata": meta, "devices": p.devices, "tree": root}, file, default=str)
    file.write("\n")
