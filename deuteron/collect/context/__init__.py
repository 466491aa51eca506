"""Context sources say *where* the program is when a kernel launches or a scope opens.

Each source implements :class:`ContextSource`: given the node where the sources before it in the
chain left off, it returns the node for the calling thread's place below it. The session chains
the sources named by ``context=`` (``shadow``: open scopes; ``python``: the Python call path),
then files the kernel, then lets the state source put the thread's state below it. Framework
sources (torch modules, JAX scopes) join the chain the same way.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from deuteron.model.tree import Node

CONTEXTS = ("shadow", "python")  # where a launch's path starts: open scopes, or Python frames
# sources that add their own structure below that: a framework's (torch, jax) or the C/C++ frames
FRAMEWORKS = ("torch", "jax", "native")


class ContextSpecError(ValueError):
    """A ``-c``/``context=`` value that names no known source."""


def parse_context(spec: str) -> tuple[str, tuple[str, ...]]:
    """``"python,torch"`` -> the base (``python``) and the framework sources (``("torch",)``).

    A comma list in any order; the base defaults to ``shadow``; naming both bases is refused.
    """
    parts = [p.strip().lower() for p in str(spec).split(",") if p.strip()]
    known = (*CONTEXTS, *FRAMEWORKS)
    for part in parts:
        if part not in known:
            raise ContextSpecError(
                f"unknown context {part!r}; choose from: {', '.join(known)} (a comma list, e.g. python,torch)"
            )
    bases = [p for p in parts if p in CONTEXTS]
    if len(set(bases)) > 1:
        raise ContextSpecError("choose one of shadow and python, not both (scopes are kept with either)")
    frameworks = tuple(dict.fromkeys(p for p in parts if p in FRAMEWORKS))
    if "native" in frameworks and len(frameworks) > 1:
        raise ContextSpecError(
            "native does not combine with torch or jax yet (each fills the launch's place); "
            "use -c native or -c python,native"
        )
    if not parts:
        raise ContextSpecError(f"empty context; choose from: {', '.join(known)}")
    return (bases[0] if bases else "shadow"), frameworks


class ContextSource(Protocol):
    """One link of a session's chain: ``name`` (as in ``context=``) and :meth:`locate`.

    :meth:`locate` runs on the launching thread at every launch placed in Python (and every scope
    opened under ``python``), so sources take no lock: their state is per thread, or a cache whose
    races under the GIL only build the same node twice.
    """

    name: str

    def locate(self, base: Node) -> Node:
        """The calling thread's place, as a node at or below ``base``."""
        ...


class LaunchPlace(NamedTuple):
    """Where a GPU kernel goes, as a framework source read it from its launch's place id."""

    node: Node
    any_thread: bool = False  # the place holds on any thread: no "other threads" frame for it
    outside_capture: bool = False  # the place holds outside a CUDA graph capture: no capture frame


class LaunchPlaces(Protocol):
    """A framework source that hands out the place ids of launches (the CUPTI entries' ``op``
    column: torch's trie ids, native paths, JAX places): each owns a range of ids, flagged by high
    bits, so the tree builder asks each source in turn instead of decoding the ids itself."""

    def owns(self, place_id: int) -> bool:
        """Whether ``place_id`` (non-zero) is one of this source's."""
        ...

    def launch_place(self, place_id: int, context_id: int) -> LaunchPlace:
        """The node for a kernel launched at ``place_id``; ``context_id``: the launch's own context
        (made into a node only where the place is below it)."""
        ...
