"""Walking a profile (a ``Profile`` tree, or its hatchet JSON as written) by frame names, and
the small made trees and device tables the tests compare against."""

from __future__ import annotations

from typing import Any

from deuteron.model.tree import Node, Profile


def find(profile: Profile, *names: str) -> Node:
    """The node at ROOT/names[0]/names[1]/..., whatever each frame's type."""
    return child_path(profile.root, *names)


def timed_profile(spec: dict[str, Any]) -> Profile:
    """A made profile from ``{name: (own ms, type, {children...})}`` (children optional), each
    node's own ``time (ns)`` as given: the small trees the web and view tests draw by hand."""
    profile = Profile()

    def add(parent: Node, children: dict[str, Any]) -> None:
        for name, (ms, kind, *below) in children.items():
            node = parent.child(name, kind)
            node.add("time (ns)", ms * 1e6)
            if below:
                add(node, below[0])

    add(profile.root, spec)
    return profile


def kernels(profile: Profile) -> dict[str, Node]:
    return {n.name: n for n in profile.root.walk() if n.type == "kernel"}


# The device table Proton wrote on an H200 (tests/fixtures/proton).
H200_TABLE = {
    "CUDA": {
        "0": {
            "arch": "90",
            "bus_width": 6016,
            "clock_rate": 1980000,
            "memory_clock_rate": 3201000,
            "num_sms": 132,
        }
    }
}


def child_path(node: Node, *names: str) -> Node:
    """The node at the end of ``names`` below ``node`` (by frame name); fails naming the choices."""
    for name in names:
        found = [c for c in node.children.values() if c.name == name]
        assert found, f"no {name!r} under {node.name!r}: {sorted(c.name for c in node.children.values())}"
        node = found[0]
    return node


def kernel_count(node: Node) -> int:
    """Kernel launches recorded anywhere under ``node``."""
    return sum(int(n.metrics.get("count", 0)) for n in node.walk())  # type: ignore[call-overload]


def json_nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of a hatchet JSON tree (as written to a file), ``tree`` included."""
    out, stack = [], [tree]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n["children"])
    return out


def json_find(node: dict[str, Any], *names: str) -> dict[str, Any]:
    """The node at the end of ``names`` (frame names, from this node of a hatchet JSON tree down);
    fails naming the choices."""
    for name in names:
        matches = [c for c in node["children"] if c["frame"]["name"] == name]
        assert matches, f"no child {name!r} under {node['frame']['name']!r}: " + str(
            [c["frame"]["name"] for c in node["children"]]
        )
        node = matches[0]
    return node


def json_kernel_counts(node: dict[str, Any], prefix: str = "") -> dict[str, int]:
    """Launch count per frame name anywhere under ``node`` of a hatchet JSON tree (names starting
    with ``prefix``)."""
    out: dict[str, int] = {}
    for n in json_nodes(node):
        if n["frame"]["name"].startswith(prefix) and "count" in n["metrics"]:
            out[n["frame"]["name"]] = out.get(n["frame"]["name"], 0) + int(n["metrics"]["count"])
    return out


def json_kernel_paths(tree: dict[str, Any], path: tuple[str, ...] = ()) -> dict[tuple[str, ...], int]:
    """Each kernel of a hatchet JSON tree by its whole path of frame names, with its launch count."""
    out: dict[tuple[str, ...], int] = {}
    here = (*path, tree["frame"]["name"])
    if not tree["children"] and "count" in tree["metrics"]:
        out[here] = int(tree["metrics"]["count"])
    for child in tree["children"]:
        for key, count in json_kernel_paths(child, here).items():
            out[key] = out.get(key, 0) + count
    return out
