"""Context sources say *where* the program is when a kernel launches or a scope opens.

Each source implements :class:`ContextSource`: given the node where the sources before it in the
chain left off, it returns the node for the calling thread's place below it. The session chains
the sources named by ``context=`` (``shadow``: open scopes; ``python``: the Python call path),
then files the kernel, then lets the state source put the thread's state below it. Framework
sources (torch modules, JAX scopes) join the chain the same way.
"""

from __future__ import annotations

from typing import Protocol

from ...model.tree import Node

CONTEXTS = ("shadow", "python")


class ContextSource(Protocol):
    name: str

    def locate(self, base: Node) -> Node:
        """The calling thread's place, as a node at or below ``base``."""
        ...
