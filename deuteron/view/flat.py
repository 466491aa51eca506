"""The flat view: every frame name summed over the whole tree, with its total and its self value.

A calling-context tree answers "where, in which context"; it cannot answer "how much time went to
GEMMs overall" when the same kernel runs under 87 different modules. The flat view sums each name
over all its places (speedscope's sandwich, TensorBoard's kernel view). *Total* counts a name's
subtree once per place (a name nested in itself, as in recursion, is not counted twice); *self* is
what the frames of that name hold themselves, their children's left out. Derived columns (rates,
averages) are computed from the summed raw metrics, so ``gbyte/s`` of a name is its bytes over its
time, not an average of averages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from deuteron.model.devices import DeviceSpec
from deuteron.model.metrics import EXC, INC, MetricSpec, compile_spec
from deuteron.model.tree import Node, Profile


@dataclass
class FlatRow:
    """One frame name: its columns over all its places (total and self), and where it ran."""

    name: str
    total: list[Any]
    own: list[Any]
    places: int  # how many frames of the tree have this name


def _add(
    into: dict[str, Any], metrics: Mapping[str, Any], kinds: Mapping[str, str], only: str | None = INC
) -> None:
    """Numbers of ``metrics`` into ``into``: those of kind ``only`` (None: inclusive and exclusive)."""
    for key, value in metrics.items():
        kind = kinds.get(key, INC)
        if value.__class__ in (int, float) and (kind == only or (only is None and kind in (INC, EXC))):
            into[key] = into.get(key, 0) + value


def flat_rows(
    p: Profile,
    specs: list[MetricSpec],
    device_for: Callable[[Mapping[str, Any]], DeviceSpec | None] = lambda _m: None,
) -> list[FlatRow]:
    """Every name but ROOT's, largest total of the first column first."""
    kinds = p.kinds
    inclusive: dict[int, dict[str, Any]] = {}
    order: list[tuple[Node, tuple[str, ...]]] = []
    stack: list[tuple[Node, tuple[str, ...]]] = [(p.root, ())]
    while stack:  # pre-order, each node with the names above it
        node, above = stack.pop()
        order.append((node, above))
        for child in node.children.values():
            stack.append((child, above + (node.name,)))
    # An exclusive time (cpu_time) already holds the frame's nested frames: its total is its own
    # value, its self value is that less its children's; other exclusive metrics (calls) are the
    # frame's own in both.
    for node, _ in reversed(order):  # children before parents: inclusive sums
        total = inclusive[id(node)] = {}
        _add(total, node.metrics, kinds, None)
        for child in node.children.values():
            _add(total, inclusive[id(child)], kinds)
    totals: dict[str, dict[str, Any]] = {}
    owns: dict[str, dict[str, Any]] = {}
    places: dict[str, int] = {}
    for node, above in order:
        if node is p.root:
            continue
        places[node.name] = places.get(node.name, 0) + 1
        own = owns.setdefault(node.name, {})
        _add(own, node.metrics, kinds, None)
        for child in node.children.values():
            for name, value in child.metrics.items():
                nested_time = kinds.get(name) == EXC and "time" in name and name in own
                if nested_time and value.__class__ in (int, float):
                    own[name] -= value
        if node.name not in above[1:]:  # the outermost frame of this name on its path
            _add(totals.setdefault(node.name, {}), inclusive[id(node)], kinds, None)
    for own in owns.values():  # a backward frame's time is not inside its module's forward time
        for name, value in own.items():
            if kinds.get(name) == EXC and "time" in name and value < 0:
                own[name] = 0
    fns = [compile_spec(s, inclusive[id(p.root)], device_for) for s in specs]
    rows = [
        FlatRow(name, [f(totals.get(name, {})) for f in fns], [f(owns[name]) for f in fns], places[name])
        for name in places
    ]

    def largest_first(row: FlatRow) -> float:
        v = row.total[0] if row.total else None
        return -v if isinstance(v, (int, float)) and v == v else float("inf")

    rows.sort(key=largest_first)
    return rows
