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
from deuteron.model.metrics import EXC, INC, MetricSpec, compile_spec, span_names
from deuteron.model.tree import Node, Profile
from deuteron.view import processors


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


def _number(value: Any) -> float:
    return value if value.__class__ in (int, float) else 0


def flat_rows(
    p: Profile,
    specs: list[MetricSpec],
    device_for: Callable[[Mapping[str, Any]], DeviceSpec | None] = lambda _m: None,
) -> list[FlatRow]:
    """Every name but ROOT's, largest total of the first column first.

    Totals are the tree's inclusive values (:func:`deuteron.view.processors.inclusive`, the rule
    every view follows); a frame's self value is its inclusive value less its children's for summed
    and span metrics (cpu_time), and its own for other exclusive ones (calls)."""
    kinds = p.kinds
    spans = span_names(kinds)
    covered = processors.inclusive(p)
    order: list[tuple[Node, Node, tuple[str, ...]]] = []
    stack: list[tuple[Node, Node, tuple[str, ...]]] = [(p.root, covered.root, ())]
    while stack:  # pre-order, each node with its inclusive twin and the names above it
        node, twin, above = stack.pop()
        order.append((node, twin, above))
        for key, child in node.children.items():
            stack.append((child, twin.children[key], above + (node.name,)))
    totals: dict[str, dict[str, Any]] = {}
    owns: dict[str, dict[str, Any]] = {}
    places: dict[str, int] = {}
    for node, twin, above in order:
        if node is p.root:
            continue
        places[node.name] = places.get(node.name, 0) + 1
        own = owns.setdefault(node.name, {})
        _add(own, node.metrics, kinds, None)
        for name in spans:  # a span's self: what its frame covers less what its children cover
            value = twin.metrics.get(name)
            if value.__class__ in (int, float):
                below = sum(_number(c.metrics.get(name)) for c in twin.children.values())
                own[name] = own.get(name, 0) - _number(node.metrics.get(name)) + value - below
        if node.name not in above[1:]:  # the outermost frame of this name on its path
            _add(totals.setdefault(node.name, {}), twin.metrics, kinds, None)
    root_inclusive = covered.root.metrics
    fns = [compile_spec(s, root_inclusive, device_for) for s in specs]
    rows = [
        FlatRow(name, [f(totals.get(name, {})) for f in fns], [f(owns[name]) for f in fns], places[name])
        for name in places
    ]

    def largest_first(row: FlatRow) -> float:
        v = row.total[0] if row.total else None
        return -v if isinstance(v, (int, float)) and v == v else float("inf")

    rows.sort(key=largest_first)
    return rows


@dataclass
class SpreadRow:
    """One frame name over several ranks (one job's files): each column's total and self as
    (min, median, max) over the ranks, a rank without the name counting as 0 there (as the merged
    tree counts a frame a rank lacks), and the rank that holds the first column's largest total."""

    name: str
    total: list[tuple[float, float, float]]
    own: list[tuple[float, float, float]]
    places: int  # the most frames of this name one rank's tree has
    max_rank: str  # the rank whose total of the first column is the max


def spread_rows(per_rank: list[list[FlatRow]], ranks: list[str]) -> list[SpreadRow]:
    """The flat views of several ranks (each from :func:`flat_rows`, same columns) as one: per name,
    min, median and max over the ranks, largest max of the first column first (as the merged tree
    cuts and sorts by the max, so a name hot on any rank leads)."""
    by_rank = [{row.name: row for row in rows} for rows in per_rank]
    names: dict[str, None] = {}
    for rows in per_rank:
        names.update(dict.fromkeys(row.name for row in rows))
    width = max((len(row.total) for rows in per_rank for row in rows), default=0)
    out = []
    for name in names:
        present = [table.get(name) for table in by_rank]
        total = [processors.min_median_max([r.total[c] if r else 0 for r in present]) for c in range(width)]
        own = [processors.min_median_max([r.own[c] if r else 0 for r in present]) for c in range(width)]
        firsts = [r.total[0] if r and isinstance(r.total[0], (int, float)) and r.total[0] == r.total[0] else 0
                  for r in present]  # fmt: skip
        top = max(range(len(ranks)), key=lambda i: firsts[i]) if ranks else 0
        places = max((r.places for r in present if r), default=0)
        out.append(SpreadRow(name, total, own, places, ranks[top] if ranks else ""))
    out.sort(key=lambda row: -row.total[0][2] if row.total else 0.0)
    return out
