"""The state source: a per-thread name (``deuteron.state("warmup")``) that is the last frame of the
context of whatever is recorded inside it, as in Proton: a kernel launched in the state sits below
the state's frame (``scope > warmup > kernel``), and a scope's metrics added in it go to a state
frame below the scope (``scope > warmup``)."""

from __future__ import annotations

import threading

from ...model.tree import STATE, Node


class StateContext:
    name = "state"

    def __init__(self) -> None:
        self._tls = threading.local()

    def current(self) -> str | None:
        """The state the calling thread is in, or None."""
        return getattr(self._tls, "name", None)

    def set(self, name: str | None) -> None:
        self._tls.name = name

    def locate(self, base: Node) -> Node:
        return self.place(base, getattr(self._tls, "name", None))

    @staticmethod
    def place(base: Node, name: str | None) -> Node:
        """The frame of state ``name`` below ``base``, or ``base`` without a state."""
        return base.child(name, STATE) if name else base
