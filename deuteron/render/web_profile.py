"""A profile for the web UI (``ProfileData`` in ``frontend/src/types.ts``): the tree flattened into
arrays, its columns derived exactly as ``deuteron view`` derives them (through
:mod:`deuteron.viewer`), and, for a diff, the base profile's values on the union of both trees.

Big trees are cut on the server: nodes whose share of ROOT's first column is below
``threshold`` go, and the page says how many went."""

from __future__ import annotations

import math
import os
from typing import Any

from ..model.errors import MetricError
from ..model.metrics import PROPERTY_METRICS
from ..model.tree import Node, Profile
from ..viewer import ViewOptions, build

# The columns the UI offers, in order, where the profile has what they need.
CANDIDATE_COLUMNS = (
    "time/ms",
    "time/%",
    "avg_time/us",
    "cpu_time/ms",
    "tflop/s",
    "gbyte/s",
    "util",
    "count",
)
MAX_NODES = 200_000  # with no threshold given, larger trees are cut to about this many nodes
Path = tuple[str, ...]


def columns_for(profile: Profile, base: Profile | None = None) -> list[str]:
    """The candidate columns this profile can show, else its raw metrics (at most eight)."""
    available = profile.metric_names() | (base.metric_names() if base else set())
    probe = _one_node_like(profile, available)
    chosen = []
    for label in CANDIDATE_COLUMNS:
        try:
            value = build(probe, ViewOptions(metrics=[label])).tree.root.metrics.get(label)
        except MetricError:
            continue
        # The metrics it needs exist (util is judged per kernel, by the device table's rows).
        derived = isinstance(value, (int, float)) and not math.isnan(value)
        if derived or (label == "util" and profile.devices):
            chosen.append(label)
    if not chosen:
        chosen = sorted(n for n in available - PROPERTY_METRICS if not n.startswith("_"))[:8]
    if not chosen:
        raise MetricError("the profile has no metrics to show")
    return chosen


def _one_node_like(profile: Profile, names: set[str]) -> Profile:
    """A one-node tree with the same metric names and devices: checks a column can be derived
    without deriving the whole tree."""
    root = Node("ROOT")
    for name in names:
        root.metrics[name] = 1
    return Profile(root=root, kinds=dict(profile.kinds), devices=profile.devices, metadata={})


def _short(value: Any) -> float | None:
    """A column value for transport: six significant digits (the page shows three), None for NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        return float(f"{value:.6g}")
    return value


def _flat(root: Node) -> list[tuple[Path, Node]]:
    """Nodes in preorder with their paths of (name, type) keys joined as names."""
    out: list[tuple[Path, Node]] = []
    stack: list[tuple[Path, Node]] = [((root.name,), root)]
    while stack:
        path, node = stack.pop()
        out.append((path, node))
        for key, child in reversed(list(node.children.items())):
            stack.append((path + (f"{key[1]}\x00{key[0]}",), child))
    return out


def profile_data(
    profile: Profile,
    source: str,
    base: Profile | None = None,
    base_source: str = "",
    threshold: float | None = None,
) -> dict[str, Any]:
    """The ``ProfileData`` document of one profile (and its base, for a diff). ``threshold``: leave
    out nodes below this share of ROOT's first column; None keeps everything up to ``MAX_NODES``
    nodes and cuts a larger tree at the share that keeps about that many."""
    columns = columns_for(profile, base)
    options = ViewOptions(metrics=columns)
    shown = build(profile, options).tree
    before = build(base, options).tree if base is not None else None
    nodes = _flat(shown.root)
    total = len(nodes)
    if threshold is None:
        threshold = _threshold_for(nodes, columns[0], MAX_NODES) if total > MAX_NODES else 0.0
    keep = _kept(nodes, columns[0], threshold)
    ids: dict[Path, int] = {}
    parent: list[int] = []
    name_id: list[int] = []
    type_id: list[int] = []
    names: dict[str, int] = {}
    types: dict[str, int] = {}
    values: list[list[float | None]] = [[] for _ in columns]
    base_values: list[list[float | None]] = [[] for _ in columns]

    def add(path: Path, node: Node, new: Node | None, old: Node | None) -> None:
        ids[path] = len(parent)
        parent.append(ids[path[:-1]] if len(path) > 1 else -1)
        name_id.append(names.setdefault(node.name, len(names)))
        type_id.append(types.setdefault(node.type, len(types)))
        for i, column in enumerate(columns):
            values[i].append(_short(new.metrics.get(column)) if new is not None else None)
            base_values[i].append(_short(old.metrics.get(column)) if old is not None else None)

    old_nodes = dict(_flat(before.root)) if before is not None else {}
    for (path, node), kept in zip(nodes, keep, strict=True):
        if kept and (len(path) == 1 or path[:-1] in ids):  # below a cut node: cut too
            add(path, node, node, old_nodes.get(path))
    pruned = total - len(parent)
    if before is not None:  # nodes only in the base: in the tree, with no new values
        old_flat = _flat(before.root)
        for (path, node), kept in zip(old_flat, _kept(old_flat, columns[0], threshold), strict=True):
            if kept and path not in ids and (len(path) == 1 or path[:-1] in ids):
                add(path, node, None, node)
    # A column derivable in principle but with no value anywhere (cpu_time of a GPU-only run) goes.
    used = [i for i in range(len(columns)) if any(v is not None for v in values[i] + base_values[i])] or [0]
    columns = [columns[i] for i in used]
    values = [values[i] for i in used]
    base_values = [base_values[i] for i in used]
    out: dict[str, Any] = {
        "name": os.path.basename(source),
        "source": source,
        "metadata": _metadata(profile),
        "columns": columns,
        "primary": 0,
        "parent": parent,
        "name_id": name_id,
        "type_id": type_id,
        "names": list(names),
        "types": list(types),
        "values": values,
        "total_nodes": total,
        "pruned_nodes": pruned,
        "threshold": threshold,
    }
    if base is not None:
        out["base"] = {"source": base_source, "values": base_values}
    return out


def _threshold_for(nodes: list[tuple[Path, Node]], column: str, most: int) -> float:
    """The share of ROOT's value at which about ``most`` nodes stay."""
    top = nodes[0][1].metrics.get(column)
    values = sorted(
        (abs(v) for _p, n in nodes if isinstance(v := n.metrics.get(column), (int, float)) and v == v),
        reverse=True,
    )
    if not isinstance(top, (int, float)) or not top or len(values) <= most:
        return 0.0
    return values[most - 1] / abs(top)


def _kept(nodes: list[tuple[Path, Node]], column: str, threshold: float) -> list[bool]:
    """Which nodes stay: at or above ``threshold`` of ROOT's value (a node's parent always stays
    when it does, since inclusive values only grow upwards)."""
    if threshold <= 0 or not nodes:
        return [True] * len(nodes)
    top = nodes[0][1].metrics.get(column)
    if not isinstance(top, (int, float)) or not top:
        return [True] * len(nodes)
    cut = abs(top) * threshold * (1 - 1e-12)  # a node exactly at the share stays, whatever the rounding
    out = []
    for _path, node in nodes:
        v = node.metrics.get(column)
        out.append(not isinstance(v, (int, float)) or math.isnan(v) or abs(v) >= cut)
    out[0] = True
    return out


def _metadata(profile: Profile) -> dict[str, Any]:
    """The run's metadata as plain values (device tables summarised), for the metadata card."""
    out: dict[str, Any] = {}
    for key, value in profile.metadata.items():
        if isinstance(value, (str, int, float, bool)) or value is None:
            out[str(key)] = value
        elif isinstance(value, (list, tuple)) and len(value) <= 64:
            out[str(key)] = " ".join(map(str, value))
    for kind, table in profile.devices.items():
        for dev, row in table.items():
            if isinstance(row, dict):
                arch = row.get("arch", "")
                out[f"device {kind}:{dev}"] = f"{arch}".strip() or "present"
    return out
