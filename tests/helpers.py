"""Test helpers: walk a profile by names."""

from __future__ import annotations

from deuteron.tree import Node, Profile


def find(profile: Profile, *names: str) -> Node:
    """The node at ROOT/names[0]/names[1]/..., whatever each frame's type."""
    node = profile.root
    for name in names:
        matches = [c for c in node.children.values() if c.name == name]
        assert matches, (
            f"no frame {name!r} under {node.name!r}; children: {[c.name for c in node.children.values()]}"
        )
        node = matches[0]
    return node


def kernels(profile: Profile) -> dict[str, Node]:
    return {n.name: n for n in profile.root.walk() if n.type == "kernel"}


# The device table Proton wrote on an H200 (../shared/fixtures/proton).
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
