"""A profile for the web UI (``ProfileData`` in ``frontend/src/types.ts``): the tree flattened into
arrays, its columns derived exactly as ``deuteron view`` derives them (through
:mod:`deuteron.view.build`), and, for a diff, the base profile's values on the union of both trees.
Frame names are shown as ``deuteron view`` shows them (``names``: a C++ kernel's short name), with
``full_names`` (demangled in full) and ``raw_names`` (as recorded) beside them, index for index.
A profile alone (not a diff) carries each frame's own calls (``calls``) for the flat view, and a
sampled one its frames' samples by stall reason (``stalls``) and what its metadata says about the
sampling (``sampling``): :mod:`deuteron.render.web.sampling`.

Big trees are cut on the server: nodes whose share of ROOT's first column is below
``threshold`` go, and the page says how many went."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

from deuteron.model.errors import MetricError
from deuteron.model.metrics import PROPERTY_METRICS
from deuteron.model.names import display_name
from deuteron.model.tree import KERNEL, Node, Profile
from deuteron.render.web.sampling import StallRows, rerun_program, sampling_data
from deuteron.view import processors
from deuteron.view.build import ViewOptions, build
from deuteron.view.summary import summary_lines, unrelated

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
    "num_samples",  # a sampled profile's (deuteron run --sample): its line frames have nothing else
)
MAX_NODES = 200_000  # with no threshold given, larger trees are cut to about this many nodes


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
    if base is None:
        root = shown.root

        def new_of(m: dict[str, Any], column: str) -> Any:
            return m.get(column)

        def old_of(m: dict[str, Any], column: str) -> Any:
            return None
    else:  # both trees on the union of their frames, as deuteron view --diff pairs them
        root = processors.compare(shown, build(base, options).tree, columns).root

        def new_of(m: dict[str, Any], column: str) -> Any:
            return None if m.get("diff") == "removed" else m.get(f"{column} (new)")

        def old_of(m: dict[str, Any], column: str) -> Any:
            return None if m.get("diff") == "added" else m.get(f"{column} (old)")

    first = columns[0]

    def size(node: Node) -> float | None:
        """What a cut judges a node by: its first column, the larger side in a diff."""
        sides = [_short(new_of(node.metrics, first)), _short(old_of(node.metrics, first))]
        numbers = [abs(v) for v in sides if v is not None]
        return max(numbers) if numbers else None

    total = sum(1 for _ in root.walk())
    if threshold is None:
        threshold = _threshold_for(root, size, MAX_NODES) if total > MAX_NODES else 0.0
    top = size(root)
    # A node exactly at the share stays, whatever the rounding.
    cut = abs(top) * threshold * (1 - 1e-12) if top and threshold > 0 else 0.0
    parent: list[int] = []
    name_id: list[int] = []
    type_id: list[int] = []
    names: dict[str, int] = {}
    types: dict[str, int] = {}
    values: list[list[float | None]] = [[] for _ in columns]
    base_values: list[list[float | None]] = [[] for _ in columns]
    calls: list[int | None] = []  # each frame's own calls (an op's calls, a kernel's launches)
    stalls = StallRows(profile, enabled=base is None)  # a sampled profile's samples by stall reason
    # Preorder; a cut node's children are never visited, so a subtree goes with its top. Beside
    # each shown node, the profile's own (None in a diff), for the numbers build() derives away.
    stack: list[tuple[Node, int, Node | None]] = [(root, -1, profile.root if base is None else None)]
    while stack:
        node, up, raw = stack.pop()
        judged = size(node)
        if up >= 0 and judged is not None and judged < cut:
            continue
        me = len(parent)
        parent.append(up)
        name_id.append(names.setdefault(node.name, len(names)))
        type_id.append(types.setdefault(node.type, len(types)))
        for i, column in enumerate(columns):
            values[i].append(_short(new_of(node.metrics, column)))
            base_values[i].append(_short(old_of(node.metrics, column)))
        calls.append(_own_calls(raw))
        stalls.add(me, raw)
        stack.extend(
            (child, me, raw.children.get(key) if raw is not None else None)
            for key, child in reversed(list(node.children.items()))
        )
    # A column derivable in principle but with no value anywhere (cpu_time of a GPU-only run) goes.
    used = [i for i in range(len(columns)) if any(v is not None for v in values[i] + base_values[i])] or [0]
    out: dict[str, Any] = {
        "name": os.path.basename(source),
        "source": source,
        "metadata": _metadata(profile),
        "columns": [columns[i] for i in used],
        "primary": 0,
        "parent": parent,
        "name_id": name_id,
        "type_id": type_id,
        # shown: a C++ kernel's short name; its full demangled and raw (recorded) names for details
        "names": [display_name(n) for n in names],
        "full_names": [display_name(n, full=True) for n in names],
        "raw_names": list(names),
        "types": list(types),
        "values": [values[i] for i in used],
        "total_nodes": total,
        "pruned_nodes": total - len(parent),
        "threshold": threshold,
        "summary": summary_lines(profile, source=source),  # the lines deuteron view --summary prints
        "warnings": [],
    }
    if base is None:
        if any(c is not None for c in calls):  # the flat view's calls and average
            out["calls"] = calls
        stall_doc = stalls.document()
        if stall_doc is not None:
            out["stalls"] = stall_doc
        sampling = sampling_data(profile, stall_doc is not None)
        if sampling is not None:  # the run card's sampling rows, and how to get an explain report
            out["sampling"] = dict(sampling, program=rerun_program(profile))
    else:
        out["base"] = {"source": base_source, "values": [base_values[i] for i in used]}
        if unrelated(base, profile):
            out["warnings"].append(
                f"{base_source} and {source} share no frame name: they look like profiles of different "
                "programs, so every row shows as added or removed"
            )
    return out


def _own_calls(node: Node | None) -> int | None:
    """A frame's own number of calls: an op's ``calls``, a kernel's launches (``count``, recorded at
    the kernel); None for a frame that records neither (a module, a line)."""
    if node is None:
        return None
    for key in ("calls", "count") if node.type == KERNEL else ("calls",):
        value = node.metrics.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return None


def _threshold_for(root: Node, size: Callable[[Node], float | None], most: int) -> float:
    """The share of ROOT's size at which about ``most`` nodes stay."""
    top = size(root)
    sizes = sorted((v for n in root.walk() if (v := size(n)) is not None), reverse=True)
    if not top or len(sizes) <= most:
        return 0.0
    return sizes[most - 1] / abs(top)


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
