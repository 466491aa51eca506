"""The shadow context: a per-thread stack of open scopes, mirrored as a path of tree nodes.

Each thread starts at the tree's root; scopes opened on a thread nest only there, so work
done on other threads never lands inside another thread's scope.
"""

from __future__ import annotations

import threading

from deuteron.model.errors import DeuteronError
from deuteron.model.tree import Node


class ScopeMismatchError(DeuteronError, RuntimeError):
    """exit_scope named a scope other than the innermost open one."""


class ShadowContext:
    """The open scopes of each thread (see the module's text), the chain's first link under ``shadow``.

    Kept under ``python`` too, where scopes still close by their stack but are placed by the Python
    path. The stack is a plain list in a ``threading.local``: :meth:`stack` is one look-up on the
    scope hot path, and threads never share one.
    """

    name = "shadow"

    def __init__(self, root: Node) -> None:
        self.root = root
        self._tls = threading.local()

    def stack(self) -> list[Node]:
        try:
            return self._tls.stack  # type: ignore[no-any-return]
        except AttributeError:
            stack = self._tls.stack = [self.root]
            return stack

    def current(self) -> Node:
        return self.stack()[-1]

    def locate(self, base: Node) -> Node:
        """The innermost open scope (opened where the chain stood then), else ``base``."""
        stack = self.stack()
        return stack[-1] if len(stack) > 1 else base

    def pop(self, name: str | None) -> Node:
        """Close the innermost open scope, which must be ``name`` when a name is given."""
        stack = self.stack()
        if len(stack) == 1:
            raise ScopeMismatchError(f"exit_scope({name!r}) with no open scope on this thread")
        if name is not None and stack[-1].name != name:
            raise ScopeMismatchError(
                f"exit_scope({name!r}) but the innermost open scope is {stack[-1].name!r}"
            )
        return stack.pop()
