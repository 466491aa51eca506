"""Test helpers: walk a profile by names."""

from __future__ import annotations

from deuteron.model.tree import Node, Profile


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


# The source of a masked vector-add kernel, for scripts the tests write and run in a fresh process.
ADD_KERNEL_SOURCE = """
import torch, triton, triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
"""
