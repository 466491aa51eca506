"""Where a kernel goes when its launch context is partial or known only by number.

GPU backends record launches outside Python (CUPTI's callbacks run in C), so they speak of places
by small integer ids, never of tree nodes. :class:`LaunchContexts` is the session's translation
between the two: it hands out ids for nodes (the shim's per-thread slots hold them), resolves the
ids a backend reports back into nodes, and makes the frames for kernels whose context is partial
(another thread, a CUDA-graph replay) or missing. Backends never create nodes; this module does,
on the session's behalf.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from deuteron.model.tree import Node, path_to

# Frames for kernels whose launch context is partial or missing (GPU backends).
OTHER_THREADS = "<other threads>"  # a thread with no scope of its own, under the starting thread's scope
CAPTURED_AT = "<captured_at>"  # a CUDA-graph replay: then the path where the kernel was captured
NO_PYTHON = "<no Python context>"  # python context, launched by a thread running no Python
NO_LAUNCH = "<no launch record>"  # launched before profiling started

PythonPath = Callable[[Sequence[tuple[str, int, str]]], Node]


FIRST_HANDED_OUT_ID = 1 << 23


class LaunchContexts:
    """Ids for places in one session's tree, and the frames of partial contexts."""

    def __init__(self, root: Node, python_path: PythonPath | None = None) -> None:
        self.root = root
        self._python_path = python_path
        self._nodes: dict[int, Node] = {}
        # ids whose path of frames is made on first use (reserved frames, recorded contexts)
        self._pending: dict[int, tuple[str, ...]] = {}
        self._ids: dict[int, int] = {}  # id(node) -> context id
        # Ids handed out here (scopes, -c python,torch's module bases) start far above the CUPTI
        # shim's Python call path ids, which count up from 16 and are bound here as they arrive
        # (add_python_path): both kinds meet in one session under -c python,torch. They stay
        # below 2**24, the width of a base's name in the torch context's trie keys.
        self._next = FIRST_HANDED_OUT_ID
        self._states: dict[str, int] = {}
        self.states: dict[int, str] = {}  # state id -> name
        self._capture_paths: dict[int, list[str]] = {}

    # --- ids a backend names: fixed places, recorded contexts ----------------------------------------

    def name(self, context_id: int, path: Sequence[str]) -> None:
        """``context_id`` stands for this path of frame names below the root: the root itself (an
        empty path, bound now), or a frame such as :data:`NO_LAUNCH` or a recorded context, made
        when a kernel is first filed there (a profile shows no empty ``<no launch record>``)."""
        if not path:
            self._bind(context_id, self.root)
            return
        self._nodes.pop(context_id, None)
        self._pending[context_id] = tuple(path)

    def _bind(self, context_id: int, node: Node) -> None:
        self._nodes[context_id] = node
        self._ids.setdefault(id(node), context_id)

    # --- ids for the places the program is in -------------------------------------------------------

    def id_of(self, node: Node) -> int:
        """The id of a node (a scope the shim must remember for a thread), made on first use."""
        context_id = self._ids.get(id(node))
        if context_id is None:
            context_id = self._next
            self._next += 1
            self._bind(context_id, node)
        return context_id

    def state_id(self, state: str | None) -> int:
        """A state's id (0: no state)."""
        if not state:
            return 0
        state_id = self._states.get(state)
        if state_id is None:
            state_id = self._states[state] = len(self._states) + 1
            self.states[state_id] = state
        return state_id

    def add_python_path(self, context_id: int, frames: Sequence[tuple[str, int, str]]) -> None:
        """``context_id`` stands for a Python call path captured by the backend (innermost frame first)."""
        if self._python_path is None:
            raise ValueError("this session has no Python context to place call paths in")
        self._bind(context_id, self._python_path(frames))

    def name_states(self, states: dict[int, str]) -> None:
        """State ids a backend recorded, by name (a replayed drain's)."""
        for state_id, name in states.items():
            self.states[state_id] = name
            self._states.setdefault(name, state_id)

    def paths(self) -> dict[int, list[str]]:
        """Every id's path of names below the root, to save alongside recorded ids."""
        made = {context_id: path_to(self.root, node) for context_id, node in self._nodes.items()}
        return {**{context_id: list(p) for context_id, p in self._pending.items()}, **made}

    # --- ids back into nodes ------------------------------------------------------------------------

    def node(self, context_id: int) -> Node:
        """The node an id stands for; an id never handed out gets a frame of its own (kept, not lost)."""
        node = self._nodes.get(context_id)
        if node is None:
            node = self.root
            for name in self._pending.pop(context_id, (f"<unknown context {context_id}>",)):
                node = node.child(name)
            self._bind(context_id, node)
        return node

    def kernel_parent(
        self, context: Node, *, other_thread: bool = False, captured_in: Node | None = None
    ) -> Node:
        """Where a GPU kernel goes, given the context its launch was made in.

        ``other_thread``: launched by a thread that had no context of its own, so ``context`` is the
        starting thread's. ``captured_in``: replayed from a CUDA graph captured in that context.
        """
        node = context.child(OTHER_THREADS) if other_thread else context
        if captured_in is not None:
            path = self._capture_paths.get(id(captured_in))
            if path is None:
                path = self._capture_paths[id(captured_in)] = path_to(self.root, captured_in)
            node = node.child(CAPTURED_AT)
            for name in path:
                node = node.child(name)
        return node


class ContextTable:
    """A session's context ids by path, as a recorded drain keeps them (``table``) and a replay
    names them again (``replay``), so the replayed kernels land where the live run filed them."""

    def __init__(self, contexts: LaunchContexts) -> None:
        self.contexts = contexts

    def table(self) -> dict[str, list[str]]:
        return {str(context_id): path for context_id, path in self.contexts.paths().items()}

    def replay(self, table: dict[str, list[str]]) -> None:
        for context_id, path in table.items():
            self.contexts.name(int(context_id), path)


class StateTable:
    """A session's state ids by name, recorded and replayed as :class:`ContextTable` is."""

    def __init__(self, contexts: LaunchContexts) -> None:
        self.contexts = contexts

    def table(self) -> dict[int, str]:
        return self.contexts.states

    def replay(self, table: dict[str, str]) -> None:
        self.contexts.name_states({int(state_id): name for state_id, name in table.items()})
