"""The JAX context's places: each path of frames a kernel can land under (``f (jit) > scopes >
primitive > op (HLO)``) as one place id, flagged with ``JAX_PLACE`` in a launch's op column, and
the walk that turns a place id into a tree node below a launch's context.

Apart from the schedule matching (:mod:`.schedule`) that hands out place ids and the context
source that asks for nodes: the ids are interned once here, so both sides agree on them.
"""

from __future__ import annotations

from deuteron.collect.context.jax.hlo import Executable, frames
from deuteron.model.tree import Node

JAX_PLACE = 1 << 40  # flags a launch's op column as a JAX place (torch's places are below 2**32)


class PlaceTree:
    """Place ids, each a (parent place id, frame) pair; 0 is the empty path."""

    def __init__(self) -> None:
        self.places: list[tuple[int, str]] = [(0, "")]  # place id -> (parent place id, frame)
        self._place_ids: dict[tuple[int, str], int] = {}
        self._node_cache: dict[tuple[int, int], Node] = {}
        self._kernel_places: dict[tuple[int, int | None], int] = {}

    def place_id(self, parent_id: int, frame: str) -> int:
        """The place id of ``frame`` below place ``parent_id``."""
        key = (parent_id, frame)
        place_id = self._place_ids.get(key)
        if place_id is None:
            place_id = self._place_ids[key] = len(self.places)
            self.places.append(key)
        return place_id

    def path_id(self, path: list[str]) -> int:
        """The place id of a path of frames, outermost first."""
        place_id = 0
        for frame in path:
            place_id = self.place_id(place_id, frame)
        return place_id

    def kernel_place(self, ex: Executable, index: int | None) -> int:
        """The flagged place id of instruction ``index`` of ``ex`` (None: the function alone)."""
        key = (id(ex), index)
        place_id = self._kernel_places.get(key)
        if place_id is None:
            place_id = self._kernel_places[key] = self._make_kernel_place(ex, index)
        return place_id

    def _make_kernel_place(self, ex: Executable, index: int | None) -> int:
        function = ex.function
        if index is None:
            return JAX_PLACE | self.path_id([f"{function} (jit)"])
        ins = ex.instructions[index]
        return JAX_PLACE | self.path_id(
            [f"{function} (jit)", *frames(ins.op_name, function), f"{ins.name} (HLO)"]
        )

    def forget_kernels(self) -> None:
        """Executables were replaced (a replayed table): their instructions' places are asked anew."""
        self._kernel_places.clear()

    def node(self, place_id: int, base: Node) -> Node:
        """The node of ``place_id`` (flagged or not) below ``base``."""
        place_id &= JAX_PLACE - 1
        key = (place_id, id(base))
        node = self._node_cache.get(key)
        if node is None:
            chain: list[str] = []
            walk = place_id
            while walk:
                walk, frame = self.places[walk]
                chain.append(frame)
            node = base
            for frame in reversed(chain):
                node = node.child(frame)
            self._node_cache[key] = node
        return node
