"""Pure tree transforms: each takes profiles and returns a new one, leaving its inputs alone.

The viewer chains them: filter frames on the recorded tree, then make inclusive values, then
cut by threshold and depth. Keeping each step a function of its inputs (pyinstrument's
processors are the model) lets tests check every step alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from deuteron.model.devices import DeviceSpec
from deuteron.model.errors import DeuteronError
from deuteron.model.metrics import INC, PTY, MetricSpec, compile_spec, span_names
from deuteron.model.names import matches
from deuteron.model.tree import Node, Profile, on_paths_to
from deuteron.model.tree_ops import merge as merge  # processors too (cli.view, view.build use them here)
from deuteron.model.tree_ops import prune as prune
from deuteron.model.tree_ops import rebuild, with_root


class FilterError(DeuteronError, ValueError):
    """A frame filter that is not a valid regular expression."""


def pattern_matcher(pattern: str) -> Callable[[str], bool]:
    """A frame filter's pattern as one rule, the same in ``deuteron view`` (``-i``/``-e``) and in
    ``deuteron serve``'s filter box (``frontend/src/views/profile/filter.ts``): a name matches when
    it holds the pattern as text, or when the pattern, read as a regular expression, is found
    anywhere in it; case is ignored either way. So ``attn`` finds ``self_attn``, ``^attn`` only a
    name that starts with it, and a name pasted whole (``optimizer.step (AdamW)``) finds itself
    though its parentheses are a regex's groups. A pattern that is no regular expression is an
    error, in one line."""
    try:
        rx = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise FilterError(f"bad regular expression {pattern!r}: {exc}") from None
    text = pattern.lower()
    search = rx.search
    return lambda name: text in name.lower() or search(name) is not None


# A kept frame that is only on the way to a match (-i): its own numbers are left out (its numbers
# are the matches' below it), and this property says so to :func:`derive`, which shows what does
# not add up (a rate, an average) as NaN there, as the web page must (it only has the columns).
PATH_ONLY = "\0path only"


def exclude(p: Profile, pattern: str) -> Profile:
    """Drop every frame whose name matches ``pattern`` (:func:`pattern_matcher`), with everything
    below it. A C++ kernel's name matches as stored (mangled) or as shown (short or full demangled
    form)."""
    found = pattern_matcher(pattern)
    return rebuild(p, lambda n, _depth: not matches(found, n.name))


def include(p: Profile, pattern: str) -> Profile:
    """Keep only the call paths that pass through a frame whose name matches ``pattern``
    (:func:`pattern_matcher`; a C++ kernel's name as stored, mangled, or as shown, short or full
    demangled): each match with everything below it, as recorded, and the frames above it, which
    keep none of their own numbers, so each shows the sum of the matches below it (ROOT: all of
    them) and is marked :data:`PATH_ONLY`."""
    found = pattern_matcher(pattern)
    below: set[int] = set()  # matches and everything under them
    on_path: set[int] = set()  # their ancestors

    stack: list[tuple[Node, list[Node], bool]] = [(p.root, [], False)]
    while stack:
        n, ancestors, below_match = stack.pop()
        hit = below_match or matches(found, n.name)
        if hit:
            below.add(id(n))
            if not below_match:
                on_path.update(id(a) for a in ancestors)
        for c in n.children.values():
            stack.append((c, ancestors if hit else [*ancestors, n], hit))
    kinds = p.kinds
    root = Node(p.root.name, p.root.type)
    copies: list[tuple[Node, Node]] = [(p.root, root)]
    while copies:
        src, dst = copies.pop()
        if id(src) in below:
            dst.metrics = dict(src.metrics)
        else:  # on the way to a match (ROOT always): its properties only
            dst.metrics = {
                k: v for k, v in src.metrics.items() if isinstance(v, str) or kinds.get(k, INC) == PTY
            }
            dst.metrics[PATH_ONLY] = 1
        for key, child in src.children.items():
            if id(child) in below or id(child) in on_path:
                twin = Node(child.name, child.type)
                dst.children[key] = twin
                copies.append((child, twin))
    out = with_root(p, root)
    out.kinds[PATH_ONLY] = PTY
    return out


def adds_up(spec: MetricSpec, kinds: Mapping[str, str]) -> bool:
    """Whether a column of a frame is the sum of its children's when the frame has nothing of its
    own: a time, a share, a summed raw metric (a span such as cpu_time too); not an average, a
    rate, util, a roofline time or a frame's own count (calls)."""
    if spec.kind == "time":
        return not spec.average
    if spec.kind in ("percent", "raw"):
        return kinds.get(spec.raw, INC) == INC or spec.raw in span_names(kinds)
    return False


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
    return with_root(p, root, inclusive=True)


def keep_paths_to(p: Profile, hot: Callable[[Node], bool]) -> Profile:
    """Keep every node that is ``hot`` and the path to it (proton-viewer's ``-t``: a cool parent
    of a hot child stays, so the child keeps its place); drop the rest."""
    wanted = on_paths_to(p.root, hot)
    return rebuild(p, lambda n, _depth: id(n) in wanted)


def diff(new: Profile, old: Profile) -> Profile:
    """``new`` minus ``old`` on the union of both trees (pass inclusive trees for inclusive deltas).

    Only metrics that both profiles carry are subtracted; a frame missing on one side counts
    as zero there. A metric that only one profile has cannot be compared and is left out,
    so profiles with different metric sets still diff cleanly.
    """
    shared = {m for m in new.metric_names() & old.metric_names()}

    def fill(a: Node | None, b: Node | None, dst: Node) -> None:
        am = a.metrics if a else {}
        bm = b.metrics if b else {}
        for name in shared:
            va, vb = am.get(name), bm.get(name)
            if isinstance(va, (str, list)) or isinstance(vb, (str, list)) or (va is None and vb is None):
                continue  # strings and vectors have no difference to show
            dst.metrics[name] = (va or 0) - (vb or 0)

    return _paired(new, old, fill)


def _paired(new: Profile, old: Profile, fill: Callable[[Node | None, Node | None, Node], None]) -> Profile:
    """Walk the union of two trees frame by frame; ``fill(new_node, old_node, out_node)`` sets each
    output node's metrics (a side lacking the frame gives None); frames only one side has are
    marked ``diff``: ``added`` or ``removed``."""
    root = Node(new.root.name, new.root.type)
    stack: list[tuple[Node | None, Node | None, Node]] = [(new.root, old.root, root)]
    while stack:
        a, b, dst = stack.pop()
        fill(a, b, dst)
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
    out = with_root(new, root)
    out.kinds["diff"] = "pty"
    out.metadata["diff_against"] = old.metadata.get("name", "")
    return out


def rename(p: Profile, name_of: Callable[[str], str]) -> Profile:
    """The tree with every frame renamed by ``name_of`` (proton-viewer's ``-f`` formats); frames of
    one parent that end up with the same name are merged, their metrics added as their kinds say."""
    root = Node(p.root.name, p.root.type)
    root.metrics = dict(p.root.metrics)
    stack = [(p.root, root)]
    while stack:
        src, dst = stack.pop()
        for child in src.children.values():
            twin = dst.child(name_of(child.name), child.type)
            for metric, value in child.metrics.items():
                twin.add(metric, value, p.kind(metric))
            stack.append((child, twin))
    return with_root(p, root)


_REPEAT = re.compile(r"^(?:(?P<path>.*)\.)?\d+(?P<cls> \(.+\))$")


def fold_repeats(p: Profile) -> Profile:
    """Repeated modules as one frame: ``layers.0 (TransformerEncoderLayer)``, ``layers.1 (...)``,
    ... become ``layers.* (TransformerEncoderLayer)``, their subtrees merged and their metrics added
    (the torch context names modules ``<attribute path> (<class>)``)."""

    return rename(p, folded_name)


def folded_name(name: str) -> str:
    """A frame's name as :func:`fold_repeats` writes it (``layers.3 (Block)`` -> ``layers.* (Block)``;
    a name that is no repeat, as it is)."""
    m = _REPEAT.match(name)
    if m is None:
        return name
    return f"{m['path']}.*{m['cls']}" if m["path"] is not None else f"*{m['cls']}"


# proton-viewer's frame-name formats (-f), for Python call-path frames ``path/file.py:line@function``
NAME_FORMATS: dict[str, Callable[[str], str]] = {
    "full": lambda name: name,
    "file_function_line": lambda name: name.split("/")[-1],
    "function_line": lambda name: name.split(":")[-1],
    "file_function": lambda name: f"{name.split('/')[-1].split(':')[0]}@{name.split('@')[-1].split(':')[0]}",
}


COMPARE = ("old", "new", "ratio", "change %")


def compare(new: Profile, old: Profile, labels: list[str]) -> Profile:
    """Both trees side by side (each already turned into ``labels`` columns by :func:`derive`): per
    label ``label (old)``, ``label (new)``, ``label (ratio)`` (new / old) and ``label (change %)``,
    on the union of both trees; a frame one side lacks counts as 0 there and is marked ``diff``:
    ``added`` or ``removed``. A ratio or change against 0 is NaN (shown as ``-``)."""

    def fill(a: Node | None, b: Node | None, dst: Node) -> None:
        for label in labels:
            va = a.metrics.get(label) if a is not None else 0
            vb = b.metrics.get(label) if b is not None else 0
            va = va if isinstance(va, (int, float)) else math.nan
            vb = vb if isinstance(vb, (int, float)) else math.nan
            dst.metrics[f"{label} (old)"] = vb
            dst.metrics[f"{label} (new)"] = va
            dst.metrics[f"{label} (ratio)"] = va / vb if vb else math.nan
            dst.metrics[f"{label} (change %)"] = (va - vb) / vb * 100 if vb else math.nan

    return _paired(new, old, fill)


SPREAD = ("min", "median", "max")


def min_median_max(values: list[Any]) -> tuple[float, float, float]:
    """The min, median and max of one number per rank, a missing or non-number value (NaN, a
    frame the rank lacks) counting as 0: the rule of every merged view (tree, flat, summary)."""
    ordered = sorted(v if isinstance(v, (int, float)) and not math.isnan(v) else 0 for v in values)
    count, middle = len(ordered), len(ordered) // 2
    median = ordered[middle] if count % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return ordered[0], median, ordered[-1]


def spread(profiles: list[Profile], labels: list[str]) -> Profile:
    """One tree for several (one profile per rank, each already turned into ``labels`` columns by
    :func:`derive`): on the union of their frames, each label becomes ``label (min)``,
    ``label (median)`` and ``label (max)`` over the profiles, a frame missing from one counting as 0
    there, so a rank that never reached a kernel pulls its minimum down as it should."""
    root = Node(profiles[0].root.name, profiles[0].root.type)
    stack: list[tuple[list[Node | None], Node]] = [([p.root for p in profiles], root)]
    while stack:
        sources, dst = stack.pop()
        for label in labels:
            low, median, high = min_median_max(
                [src.metrics.get(label) if src is not None else 0 for src in sources]
            )
            dst.metrics[f"{label} (min)"] = low
            dst.metrics[f"{label} (median)"] = median
            dst.metrics[f"{label} (max)"] = high
        keys: dict[tuple[str, str], None] = {}
        for src in sources:
            if src is not None:
                keys.update(dict.fromkeys(src.children))
        for key in keys:
            child = Node(key[0], key[1])
            dst.children[key] = child
            stack.append(([src.children.get(key) if src is not None else None for src in sources], child))
    out = with_root(profiles[0], root)
    out.metadata["ranks"] = len(profiles)
    return out


def derive(
    p: Profile,
    specs: list[MetricSpec],
    device_for: Callable[[Mapping[str, Any]], DeviceSpec | None] = lambda _m: None,
    totals: Mapping[str, Any] | None = None,
) -> Profile:
    """A tree whose node metrics are the asked-for columns, computed from inclusive values.

    Where a column cannot be computed at a node it is NaN. One copy of the tree serves both the
    inclusive sums and the columns: this runs on every ``deuteron view`` of large profiles.
    ``totals``: what a ``/%`` column is a share of (the whole run's sums, when ``p`` was filtered);
    by default this tree's own root.
    """
    root, order = _copy_with_parents(p.root)
    # -i's frames on the way to a match: what does not add up is not shown there (see include)
    unsummed = [s.label for s in specs if not adds_up(s, p.kinds)] if PATH_ONLY in p.kinds else []
    needs_total = any(s.kind == "percent" for s in specs)
    if needs_total or p.inclusive:
        if not p.inclusive:
            _accumulate(order, p.kinds)
        shares_of = root.metrics if totals is None else totals
        fns = [(s.label, compile_spec(s, shares_of, device_for)) for s in specs]
        for node, _parent in order:
            node.metrics = _columns(node.metrics, fns, unsummed)
    else:
        # One backward pass: a node's sums are complete once its children are done, so add it
        # into its parent and turn it into columns in the same step.
        fns = [(s.label, compile_spec(s, {}, device_for)) for s in specs]
        kinds, spans = p.kinds, span_names(p.kinds)
        for node, parent in reversed(order):
            m = node.metrics
            if spans:
                _cover_children(m, spans)
            if parent is not None:
                _add_into(parent.metrics, m, kinds, spans)
            node.metrics = _columns(m, fns, unsummed)
    out = with_root(p, root, inclusive=True)
    out.kinds = {s.label: "pty" for s in specs}
    return out


def run_totals(p: Profile) -> dict[str, Any]:
    """The whole tree's inclusive values at its root (what a ``/%`` column is a share of)."""
    return inclusive(p).root.metrics


def _accumulate(order: list[tuple[Node, Node | None]], kinds: dict[str, str]) -> None:
    """Add each node's inclusive-kind numbers into its parent, children first; a span metric
    (cpu_time) covers its children's sum (:data:`deuteron.model.metrics.SPAN_METRICS`)."""
    spans = span_names(kinds)
    for node, parent in reversed(order):
        if spans:
            _cover_children(node.metrics, spans)
        if parent is not None:
            _add_into(parent.metrics, node.metrics, kinds, spans)


# Where a node's children's span values are summed while the tree is accumulated (a key no
# metric has), until the node itself is done.
_CHILDREN = "\0children "


def _cover_children(m: dict[str, Any], spans: frozenset[str]) -> None:
    """A node whose children are all added: each span metric becomes the larger of its own value
    and its children's sum (the sum alone where it has none)."""
    for name in spans:
        below = m.pop(_CHILDREN + name, None)
        if below is None:
            continue
        own = m.get(name)
        if own is None or own.__class__ not in (int, float) or below > own:
            m[name] = below


def _add_into(
    pm: dict[str, Any], m: dict[str, Any], kinds: dict[str, str], spans: frozenset[str] = frozenset()
) -> None:
    for name, value in m.items():
        if value.__class__ is str or kinds.get(name, INC) != INC:
            if name in spans and value.__class__ in (int, float):
                key = _CHILDREN + name
                pm[key] = pm.get(key, 0) + value
            continue
        old = pm.get(name)
        if value.__class__ is list or old.__class__ is list:  # vectors: element by element
            if old is None:
                pm[name] = list(value)
            elif old.__class__ is list and value.__class__ is list and len(old) == len(value):
                pm[name] = [a + b for a, b in zip(old, value, strict=True)]
            continue
        pm[name] = value if old is None or old.__class__ is str else old + value


def _columns(
    m: dict[str, Any], fns: list[tuple[str, Callable[[Any], float]]], unsummed: Sequence[str] = ()
) -> dict[str, Any]:
    cols: dict[str, Any] = {label: fn(m) for label, fn in fns}
    if unsummed and PATH_ONLY in m:
        for label in unsummed:
            cols[label] = math.nan
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

    return rebuild(p, order=key)
