"""Pure tree transforms: each takes profiles and returns a new one, leaving its inputs alone.

The viewer chains them: filter frames on the recorded tree, then make inclusive values, then
cut by threshold and depth. Keeping each step a function of its inputs (pyinstrument's
processors are the model) lets tests check every step alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .model.devices import DeviceSpec
from .model.errors import DeuteronError
from .model.metrics import INC, MetricSpec, compile_spec
from .model.tree import Node, Profile


class FilterError(DeuteronError, ValueError):
    """A frame filter that is not a valid regular expression."""


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise FilterError(f"bad regular expression {pattern!r}: {exc}") from None


def _copy_profile(p: Profile, root: Node, inclusive: bool | None = None) -> Profile:
    return Profile(
        root=root,
        kinds=dict(p.kinds),
        devices=p.devices,
        metadata=dict(p.metadata),
        inclusive=p.inclusive if inclusive is None else inclusive,
    )


def _rebuild(
    p: Profile,
    keep: Callable[[Node, int], bool] | None = None,
    order: Callable[[Node], float] | None = None,
) -> Profile:
    """A copy of the tree without the subtrees ``keep(node, depth)`` rejects, children optionally
    re-ordered by ``order``; the root always stays. Iterative: trees get deep."""
    root = Node(p.root.name, p.root.type)
    root.metrics = dict(p.root.metrics)
    stack = [(p.root, root, 0)]
    while stack:
        src, dst, depth = stack.pop()
        children = src.children.values() if order is None else sorted(src.children.values(), key=order)
        for child in children:
            if keep is not None and not keep(child, depth + 1):
                continue
            copy = Node(child.name, child.type)
            copy.metrics = dict(child.metrics)
            dst.children[(child.name, child.type)] = copy
            stack.append((child, copy, depth + 1))
    return _copy_profile(p, root)


def exclude(p: Profile, pattern: str) -> Profile:
    """Drop every frame whose name matches ``pattern``, with everything below it."""
    rx = _regex(pattern)
    return _rebuild(p, lambda n, _depth: rx.search(n.name) is None)


def include(p: Profile, pattern: str) -> Profile:
    """Keep only the call paths that pass through a frame whose name matches ``pattern``."""
    rx = _regex(pattern)
    on_path: set[int] = set()

    stack: list[tuple[Node, list[Node], bool]] = [(p.root, [], False)]
    while stack:
        n, ancestors, below_match = stack.pop()
        hit = below_match or rx.search(n.name) is not None
        if hit:
            on_path.add(id(n))
            if not below_match:
                on_path.update(id(a) for a in ancestors)
        for c in n.children.values():
            stack.append((c, ancestors if hit else [*ancestors, n], hit))
    return _rebuild(p, lambda n, _depth: id(n) in on_path)


def _copy_with_parents(top: Node) -> tuple[Node, list[tuple[Node, Node | None]]]:
    """A deep copy of ``top`` and its nodes in parents-first order, each with its parent."""
    order: list[tuple[Node, Node | None]] = []
    root = Node(top.name, top.type)
    stack: list[tuple[Node, Node, Node | None]] = [(top, root, None)]
    while stack:
        src, dst, parent = stack.pop()
        dst.metrics = dict(src.metrics)
        order.append((dst, parent))
        children = dst.children
        for key, child in src.children.items():
            copy = Node(child.name, child.type)
            children[key] = copy
            stack.append((child, copy, dst))
    return root, order


def inclusive(p: Profile) -> Profile:
    """Each node's inclusive metrics: its own plus its descendants' for inclusive-kind numbers."""
    if p.inclusive:
        return p
    root, order = _copy_with_parents(p.root)
    _accumulate(order, p.kinds)
    return _copy_profile(p, root, inclusive=True)


def prune(p: Profile, keep: Callable[[Node, int], bool]) -> Profile:
    """Drop nodes (and their subtrees) that ``keep(node, depth)`` rejects; the root always stays."""
    return _rebuild(p, keep)


def diff(new: Profile, old: Profile) -> Profile:
    """``new`` minus ``old`` on the union of both trees (pass inclusive trees for inclusive deltas).

    Only metrics that both profiles carry are subtracted; a frame missing on one side counts
    as zero there. A metric that only one profile has cannot be compared and is left out,
    so profiles with different metric sets still diff cleanly.
    """
    shared = {m for m in new.metric_names() & old.metric_names()}
    root = Node(new.root.name, new.root.type)
    stack: list[tuple[Node | None, Node | None, Node]] = [(new.root, old.root, root)]
    while stack:
        a, b, dst = stack.pop()
        am = a.metrics if a else {}
        bm = b.metrics if b else {}
        for name in shared:
            va, vb = am.get(name), bm.get(name)
            if isinstance(va, str) or isinstance(vb, str) or (va is None and vb is None):
                continue
            dst.metrics[name] = (va or 0) - (vb or 0)
        if a is None:
            dst.metrics["diff"] = "removed"
        elif b is None:
            dst.metrics["diff"] = "added"
        keys = list(a.children if a else {}) + [
            k for k in (b.children if b else {}) if not a or k not in a.children
        ]
        for key in keys:
            ca = a.children.get(key) if a else None
            cb = b.children.get(key) if b else None
            dst.children[key] = Node(key[0], key[1])
            stack.append((ca, cb, dst.children[key]))
    out = _copy_profile(new, root)
    out.kinds["diff"] = "pty"
    out.metadata["diff_against"] = old.metadata.get("name", "")
    return out


def merge(profiles: Iterable[Profile]) -> Profile:
    """Sum several profiles (one per rank, say) into one tree."""
    items = list(profiles)
    if not items:
        return Profile()
    out = Profile(kinds={}, devices={}, metadata={"merged": len(items)})
    for p in items:
        out.kinds.update(p.kinds)
        for dtype, rows in p.devices.items():
            out.devices.setdefault(dtype, {}).update(rows)
        stack = [(p.root, out.root)]
        while stack:
            src, dst = stack.pop()
            for name, value in src.metrics.items():
                dst.add(name, value, p.kind(name))
            for child in src.children.values():
                stack.append((child, dst.child(child.name, child.type)))
    return out


def derive(
    p: Profile,
    specs: list[MetricSpec],
    device_for: Callable[[Mapping[str, Any]], DeviceSpec | None] = lambda _m: None,
) -> Profile:
    """A tree whose node metrics are the asked-for columns, computed from inclusive values.

    Where a column cannot be computed at a node it is NaN. One copy of the tree serves both the
    inclusive sums and the columns: this runs on every ``deuteron view`` of large profiles.
    """
    root, order = _copy_with_parents(p.root)
    needs_total = any(s.kind == "percent" for s in specs)
    if needs_total or p.inclusive:
        if not p.inclusive:
            _accumulate(order, p.kinds)
        fns = [(s.label, compile_spec(s, root.metrics, device_for)) for s in specs]
        for node, _parent in order:
            node.metrics = _columns(node.metrics, fns)
    else:
        # One backward pass: a node's sums are complete once its children are done, so add it
        # into its parent and turn it into columns in the same step.
        fns = [(s.label, compile_spec(s, {}, device_for)) for s in specs]
        kinds = p.kinds
        for node, parent in reversed(order):
            m = node.metrics
            if parent is not None:
                _add_into(parent.metrics, m, kinds)
            node.metrics = _columns(m, fns)
    out = _copy_profile(p, root, inclusive=True)
    out.kinds = {s.label: "pty" for s in specs}
    return out


def _accumulate(order: list[tuple[Node, Node | None]], kinds: dict[str, str]) -> None:
    """Add each node's inclusive-kind numbers into its parent, children first."""
    for node, parent in reversed(order):
        if parent is not None:
            _add_into(parent.metrics, node.metrics, kinds)


def _add_into(pm: dict[str, Any], m: dict[str, Any], kinds: dict[str, str]) -> None:
    for name, value in m.items():
        if value.__class__ is str or kinds.get(name, INC) != INC:
            continue
        old = pm.get(name)
        pm[name] = value if old is None or old.__class__ is str else old + value


def _columns(m: dict[str, Any], fns: list[tuple[str, Callable[[Any], float]]]) -> dict[str, Any]:
    cols: dict[str, Any] = {label: fn(m) for label, fn in fns}
    if "diff" in m:
        cols["diff"] = m["diff"]
    return cols


def max_depth(p: Profile) -> int:
    deepest = 0
    stack = [(p.root, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((c, depth + 1) for c in node.children.values())
    return deepest


def sort_children(p: Profile, column: str) -> Profile:
    """Children in descending order of ``column`` (NaN last) instead of first-seen order."""

    def key(n: Node) -> float:
        v = n.metrics.get(column)
        return -v if isinstance(v, (int, float)) and not math.isnan(v) else math.inf

    return _rebuild(p, order=key)
