"""The torch context's places: Python's copy of the op probe's trie (each place id's parent, name
and kind) and the walk that turns a place id into a tree node.

A place id is what the CUPTI shim records with each launch (``KernelGroup.op``) and what the op
probe's spans and totals are keyed by. Apart from the context source because a recorded drain is
replayed from this table alone, with no library and no torch: :class:`PlaceTrie` and
:class:`Placer` need neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from deuteron.collect.placement import LaunchContexts
from deuteron.model.tree import Node

# A trie node's kind, as _torch_ops.cpp writes it. BASE: the node stands for a context id (its name
# column holds the id) where a module stack starts; MARK: the ``backward`` frame of a module call,
# with the autograd nodes the call made (BACKWARD) below it.
BASE, MODULE, OP, SCOPE, MARK, BACKWARD = 1, 2, 3, 4, 5, 6
BACKWARD_FRAME = "backward"


def frame_name(kind: int, name: str) -> str:
    """A trie node's frame name: the optimizer's RecordFunction ``Optimizer.step#AdamW.step``
    reads ``optimizer.step (AdamW)``; everything else keeps its own name."""
    if kind == SCOPE and name.startswith("Optimizer.") and "#" in name:
        what, _, owner = name.partition("#")
        return f"optimizer.{what[len('Optimizer.') :]} ({owner.split('.', 1)[0]})"
    return name


class PlaceTrie:
    """Python's copy of the C++ trie: each place id's parent, name and kind, and the names' texts;
    filled from the library (live) or from a recorded table (a fixture)."""

    def __init__(self) -> None:
        self.parent = np.zeros(1, np.uint32)
        self.name = np.zeros(1, np.uint32)
        self.kind = np.zeros(1, np.uint8)
        self.names: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.parent)

    def extend(self, parent: np.ndarray, name: np.ndarray, kind: np.ndarray) -> None:
        self.parent = np.concatenate([self.parent, parent])
        self.name = np.concatenate([self.name, name])
        self.kind = np.concatenate([self.kind, kind])

    def table(self) -> dict[str, Any]:
        """The trie as JSON-ready lists (saved beside recorded CUPTI drains)."""
        used = {int(n) for n, k in zip(self.name.tolist(), self.kind.tolist(), strict=True) if k != BASE}
        return {
            "parent": self.parent.tolist(),
            "name": self.name.tolist(),
            "kind": self.kind.tolist(),
            "names": {str(i): self.names[i] for i in sorted(used) if i in self.names},
        }

    @classmethod
    def from_table(cls, table: dict[str, Any]) -> PlaceTrie:
        trie = cls()
        trie.parent = np.asarray(table["parent"], np.uint32)
        trie.name = np.asarray(table["name"], np.uint32)
        trie.kind = np.asarray(table["kind"], np.uint8)
        trie.names = {int(k): str(v) for k, v in table.get("names", {}).items()}
        return trie


class Placer:
    """Place ids into tree nodes: a path rooted at a base node starts at that base's context; others
    start where the launch was (``fallback``)."""

    def __init__(self, contexts: LaunchContexts, trie: PlaceTrie, names: Callable[[int], str]) -> None:
        self.contexts = contexts
        self.trie = trie
        self._names = names
        self._cache: dict[tuple[int, int], tuple[Node, bool]] = {}

    def frame(self, place_id: int) -> str:
        kind = int(self.trie.kind[place_id])
        if kind == MARK:
            return BACKWARD_FRAME
        return frame_name(kind, self._names(int(self.trie.name[place_id])))

    def is_rooted(self, place_id: int) -> bool:
        """Whether ``place_id``'s path starts at a base node (a scope or Python path of the session)."""
        trie = self.trie
        while place_id and place_id < len(trie):
            if trie.kind[place_id] == BASE:
                return True
            place_id = int(trie.parent[place_id])
        return False

    def place(self, place_id: int, fallback: Node) -> tuple[Node, bool]:
        """The node of ``place_id``, and whether its path is rooted (independent of ``fallback``)."""
        hit = self._cache.get((place_id, 0)) or self._cache.get((place_id, id(fallback)))
        if hit is not None:
            return hit
        chain = []
        walk = place_id
        trie = self.trie
        start, rooted = fallback, False
        while walk and walk < len(trie):
            if trie.kind[walk] == BASE:  # its name column holds a context id
                start, rooted = self.contexts.node(int(trie.name[walk])), True
                break
            chain.append(walk)
            walk = int(trie.parent[walk])
        node = start
        for walk in reversed(chain):
            node = node.child(self.frame(walk))
        self._cache[(place_id, 0 if rooted else id(fallback))] = (node, rooted)
        return node, rooted
