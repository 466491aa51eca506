"""The JAX context source (``-c jax``): each GPU kernel under its jitted function, its
``jax.named_scope`` path, a ``backward`` frame for gradient work, the JAX primitive and the HLO op
that launched it.

How: JAX compiles every jitted function (and every eagerly run op) through
``jax._src.compiler.compile_or_get_cached``; wrapping it (:mod:`.compile_wrapper`) gives each
executable's optimized HLO (:mod:`.hlo` reads it) and the interval it compiled in. XLA:GPU names
kernels after their HLO instructions, so a kernel's name finds its instruction, and the
instruction's ``op_name`` gives the path. Kernels are matched to executables' schedules when their
records arrive (:mod:`.schedule`), as place ids (:mod:`.places`) the session turns into nodes here.

This module is the source as the session and the CUPTI backend see it: start and stop, the
recorded table, ``assign`` and the launch places.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from deuteron.collect.context import LaunchPlace
from deuteron.collect.context.jax.compile_wrapper import CompiledModule, CompileWrapper
from deuteron.collect.context.jax.hlo import Executable
from deuteron.collect.context.jax.places import JAX_PLACE, PlaceTree
from deuteron.collect.context.jax.schedule import ScheduleMatcher
from deuteron.collect.placement import LaunchContexts
from deuteron.model.tree import Node

__all__ = ["JaxContext"]


class JaxContext:
    """The JAX context source of one session."""

    name = "jax"

    def __init__(self, contexts: LaunchContexts) -> None:
        self.contexts = contexts
        self.compiled: list[CompiledModule] = []
        self._lock = threading.Lock()
        self._wrapper = CompileWrapper(self.add_compiled)
        self._tree = PlaceTree()
        self.places = self._tree.places  # place id -> (parent place id, frame)
        self._matcher = ScheduleMatcher(self._tree)
        self.resolved = 0
        self.unresolved = 0

    # --- the compile wrapper ---------------------------------------------------------------------

    def start(self) -> None:
        self._wrapper.start()

    def stop(self) -> None:
        self._wrapper.stop()

    def add_compiled(self, texts: list[tuple[str, str | None]], began: int, ended: int) -> None:
        """Keep an executable's optimized HLO, (module name, text or None) per module (parsed later,
        off the program's thread)."""
        with self._lock:
            for name, text in texts:
                self.compiled.append(CompiledModule(name, text, began, ended))

    # --- recorded tables (fixtures) --------------------------------------------------------------

    def table(self) -> dict[str, Any]:
        with self._lock:
            compiled = list(self.compiled)
        return {
            "executables": [{**c.executable().table(), "began": c.began, "ended": c.ended} for c in compiled]
        }

    def replay(self, table: dict[str, Any]) -> None:
        with self._lock:
            self.compiled = []
            for row in table["executables"]:
                c = CompiledModule(str(row["module"]), None, int(row["began"]), int(row["ended"]))
                c.parsed = Executable.from_table(row)
                self.compiled.append(c)
            self._matcher.forget()
            self._tree.forget_kernels()

    # --- resolving kernels to places --------------------------------------------------------------

    def assign(
        self,
        names: list[str],
        graph: np.ndarray,
        correlation: np.ndarray,
        start: np.ndarray,
        launch_ns: np.ndarray,
        thread: np.ndarray,
        context_ids: np.ndarray,
    ) -> np.ndarray:
        """Each kernel's JAX place id, flagged with ``JAX_PLACE`` (0: none), given its name, CUDA
        graph id (0: launched directly), correlation id (a graph launch's, for its kernels), start
        time, launch time on the session's clock (0: launch not seen), launching thread and launch
        context id (see :mod:`.schedule`)."""
        with self._lock:
            compiled = list(self.compiled)
        columns = (graph, correlation, start, launch_ns, thread, context_ids)
        place_ids = self._matcher.assign(compiled, names, columns)
        found = int((place_ids != 0).sum())
        self.resolved += found
        self.unresolved += len(names) - found
        return place_ids

    # --- places into tree nodes -------------------------------------------------------------------

    def owns(self, place_id: int) -> bool:
        return place_id >= JAX_PLACE

    def launch_place(self, place_id: int, context_id: int) -> LaunchPlace:
        """function > scopes > primitive > HLO op, below the launch's context: placed when the
        kernel's record arrived, from the executable's schedule, so no thread or capture frame."""
        node = self.place(place_id, self.contexts.node(context_id))
        return LaunchPlace(node, any_thread=True, outside_capture=True)

    def place(self, place_id: int, base: Node) -> Node:
        """The node of place ``place_id`` (flagged or not) below ``base`` (the launch's own context)."""
        return self._tree.node(place_id, base)
