"""Whole-tree copies: a detached copy, a pruned copy, and the sum of several trees.

They live beside :mod:`.tree` because both the collector (a data phase's record, the phases of a
session summed at ``finalize``) and the views (``view.processors``) need them, and the collector
must not import the views. Every walk is iterative: trees get deep.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from deuteron.model.tree import Node, Profile


def with_root(p: Profile, root: Node, inclusive: bool | None = None) -> Profile:
    """A profile like ``p`` (kinds, devices, metadata) around another tree, ``root``."""
    return Profile(
        root=root,
        kinds=dict(p.kinds),
        devices=p.devices,
        metadata=dict(p.metadata),
        inclusive=p.inclusive if inclusive is None else inclusive,
    )


def rebuild(
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
            twin = Node(child.name, child.type)
            twin.metrics = dict(child.metrics)
            dst.children[(child.name, child.type)] = twin
            stack.append((child, twin, depth + 1))
    return with_root(p, root)


def copy(p: Profile) -> Profile:
    """A detached copy of the tree (a data phase's record), made without recursion."""
    return rebuild(p)


def prune(p: Profile, keep: Callable[[Node, int], bool]) -> Profile:
    """Drop nodes (and their subtrees) that ``keep(node, depth)`` rejects; the root always stays."""
    return rebuild(p, keep)


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
