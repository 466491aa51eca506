"""The one patch manager: every change Deuteron makes to Triton's objects goes through here.

Deuteron intercepts Triton in several places (the interpreter's builder and launch loop, the
JIT's launch and helper calls, the autotuner's benchmark, the runtime's launch hook). Each is a
:class:`Patch` that knows how to apply and undo itself. Patches come in named groups; a group is
applied when its first user acquires it and undone, in reverse order, when its last user releases
it. So profiling and checking can share the interpreter's patches, nested users never undo each
other's, and :meth:`PatchManager.active` says at any time what Deuteron has changed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType as _ModuleType
from typing import Any, Protocol

_MISSING = object()


class Patch(Protocol):
    """One reversible change."""

    def apply(self) -> None: ...

    def restore(self) -> None: ...


class AttributePatch:
    """``owner.attr = value`` until restored, for three kinds of owner:

    - a class or a module: its own attribute is saved and put back (deleted again if it had none,
      so an inherited one shows through);
    - an instance whose class defines ``attr`` as a data descriptor (Triton's knobs): the value is
      read and set through the descriptor, as Triton's own code does;
    - any other instance (the interpreter's builder, its frozen options dataclass): the value is
      written to the instance's ``__dict__`` (shadowing the class's attribute, and bypassing a frozen
      dataclass's ``__setattr__``) and taken out again on restore.
    """

    __slots__ = ("owner", "attr", "value", "_saved")

    def __init__(self, owner: Any, attr: str, value: Any) -> None:
        self.owner, self.attr, self.value = owner, attr, value
        self._saved: Any = _MISSING

    def _through_descriptor(self) -> bool:
        if isinstance(self.owner, type) or not hasattr(self.owner, "__dict__"):
            return True
        return hasattr(getattr(type(self.owner), self.attr, None), "__set__")

    def apply(self) -> None:
        owner, attr = self.owner, self.attr
        if isinstance(owner, (type, _ModuleType)):
            self._saved = owner.__dict__.get(attr, _MISSING)
            setattr(owner, attr, self.value)
        elif self._through_descriptor():
            self._saved = getattr(owner, attr)
            setattr(owner, attr, self.value)
        else:
            self._saved = owner.__dict__.get(attr, _MISSING)
            owner.__dict__[attr] = self.value

    def restore(self) -> None:
        owner, attr, saved = self.owner, self.attr, self._saved
        self._saved = _MISSING
        if isinstance(owner, (type, _ModuleType)) or self._through_descriptor():
            if saved is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, saved)
        elif saved is _MISSING:
            owner.__dict__.pop(attr, None)
        else:
            owner.__dict__[attr] = saved


class WrapPatch(AttributePatch):
    """``owner.attr = wrap(current)``, where ``current`` is the attribute's value when the patch is
    applied: so a wrapper built with its group wraps whatever an earlier patch of the group put there."""

    __slots__ = ("wrap",)

    def __init__(self, owner: Any, attr: str, wrap: Callable[[Any], Any]) -> None:
        super().__init__(owner, attr, None)
        self.wrap = wrap

    def apply(self) -> None:
        self.value = self.wrap(getattr(self.owner, self.attr))
        super().apply()


class CallbackPatch:
    """A change made and undone by two functions (adding to and removing from a hook chain)."""

    __slots__ = ("_apply", "_restore")

    def __init__(self, apply: Callable[[], None], restore: Callable[[], None]) -> None:
        self._apply, self._restore = apply, restore

    def apply(self) -> None:
        self._apply()

    def restore(self) -> None:
        self._restore()


@dataclass
class _Group:
    """One applied group: its patches, how many users hold it, and the patches applied so far, so a
    patch that fails halfway undoes exactly those before it, in reverse."""

    patches: list[Patch]
    users: int = 0
    applied: list[Patch] = field(default_factory=list)


class PatchManager:
    """The process's table of applied groups (one instance, :data:`MANAGER`; see the module's text).

    Counted per group so nested and concurrent users (a profile inside a check, two sessions) share
    one application. The lock is reentrant, so a group's ``make`` may itself acquire another group.
    """

    def __init__(self) -> None:
        self._groups: dict[str, _Group] = {}
        self._lock = threading.RLock()

    def acquire(self, name: str, make: Callable[[], Sequence[Patch]]) -> None:
        """Apply group ``name`` (built by ``make`` on first use) unless it is applied already."""
        with self._lock:
            group = self._groups.get(name)
            if group is None:
                group = _Group(list(make()))
                try:
                    for patch in group.patches:
                        patch.apply()
                        group.applied.append(patch)
                except BaseException:
                    _undo(group)
                    raise
                self._groups[name] = group
            group.users += 1

    def release(self, name: str) -> None:
        """One user less; the group is undone when none is left (releasing an unknown group is a no-op)."""
        with self._lock:
            group = self._groups.get(name)
            if group is None:
                return
            group.users -= 1
            if group.users <= 0:
                del self._groups[name]
                _undo(group)

    @contextmanager
    def applied(self, name: str, make: Callable[[], Sequence[Patch]]) -> Iterator[None]:
        self.acquire(name, make)
        try:
            yield
        finally:
            self.release(name)

    def holds(self, name: str) -> bool:
        return name in self._groups

    def active(self) -> dict[str, int]:
        """Every applied group and its number of users."""
        with self._lock:
            return {name: g.users for name, g in self._groups.items()}


def _undo(group: _Group) -> None:
    while group.applied:
        group.applied.pop().restore()


MANAGER = PatchManager()


class _Loader(importlib.abc.Loader):
    """A module's own loader, then ``after()`` once the module has run."""

    def __init__(self, inner: Any, after: Callable[[], None]) -> None:
        self.inner, self.after = inner, after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: _ModuleType) -> None:
        self.inner.exec_module(module)
        self.after()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds module ``name`` through the other finders and wraps its loader (once)."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name, self.callback = name, callback

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        self.remove()
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        for finder in sys.meta_path if spec is None else ():
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, self.callback)
        return spec

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def after_import(name: str, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback()`` right after module ``name`` is first imported; returns the undo (for
    when it no longer matters). Python has no post-import hook: a finder wraps the module's loader."""
    finder = _AfterImport(name, callback)
    sys.meta_path.insert(0, finder)
    return finder.remove
