"""The torch context's module wrapper: ``nn.Module._call_impl`` wrapped for one session, and the
names it gives module calls (the attribute path from the module a call was made in).

Apart from the context source because it is the part that runs inside the program's every module
call and touches ``nn.Module``; the source only installs it and removes it (:class:`ModuleWrapper`).
The per-call work itself is :mod:`.calls`'s, in C where it can be.
"""

from __future__ import annotations

import ctypes
import os
import sys
import weakref
from collections.abc import Callable
from typing import Any

from deuteron.collect.context.torch import calls as torch_calls
from deuteron.collect.placement import LaunchContexts
from deuteron.model.tree import Node
from deuteron.process.patches import AttributePatch

# An outermost module's submodules by attribute path, per module object in the process (its weak
# reference tells a live module from a new one at a reused address).
_qualnames_by_module: dict[int, tuple[Any, dict[int, str]]] = {}


class Undo:
    """A function as a handle: ``remove()`` calls it (a patch's restore), as a torch hook
    handle's would."""

    def __init__(self, undo: Callable[[], None]) -> None:
        self.undo = undo

    def remove(self) -> None:
        self.undo()


class ModuleWrapper:
    """The module wrapper of one session: installs the wrapper (:meth:`install`), names module calls
    through the library's interned names (``lib``), and with ``-c python,torch`` (``python_base``:
    the Python call path of a frame) starts each outermost module stack at its caller's path."""

    def __init__(
        self, lib: ctypes.CDLL, contexts: LaunchContexts, python_base: Callable[[Any], Node] | None
    ) -> None:
        self.lib = lib
        self.contexts = contexts
        self.python_base = python_base

    def install(self) -> list[Undo]:
        """See every module call: ``nn.Module._call_impl`` wrapped for the session; returns what
        removes it.

        Not torch's global forward hooks: with any global hook registered, every module call
        takes torch's slow path (hook lists, ``always_call`` bookkeeping): 1.8 us a call against
        0.3 us for a bare wrapper (measured: benchmarks/HISTORY.md, "Framework context (issue
        16)"), on a step of a few hundred module calls. The wrapper keeps torch's fast path and
        closes the frame on exceptions too.
        Its work per call is done in C where the library has this Python's headers
        (``torch_calls``).
        """
        import torch

        is_compiling = torch.compiler.is_compiling
        original = torch.nn.Module._call_impl
        python_base = self.python_base
        between = (os.path.dirname(torch.__file__) + os.sep, torch_calls.FILE)  # torch's frames and ours
        id_of = self.contexts.id_of
        set_base = self.lib.deut_set_base
        root_name = self.root_name

        def caller_context_id(frame: Any) -> int:
            """``-c python,torch``: the context id of the Python call path of the first frame
            outside torch and this package; 0 when every frame is inside."""
            while frame is not None and frame.f_code.co_filename.startswith(between):
                frame = frame.f_back
            return id_of(python_base(frame)) if frame is not None else 0  # type: ignore[misc]

        def root(module: Any) -> tuple[dict[int, str], int]:
            """An outermost module call: its submodule map and frame; with ``-c python,torch`` the
            Python call path it was called from becomes the module stack's base."""
            if python_base is not None:
                context_id = caller_context_id(sys._getframe(1))
                if context_id:
                    set_base(context_id)
            qmap, _, name_id = root_name(module)
            return qmap, name_id

        def root_done() -> None:
            set_base(0)

        def scope_root() -> int:
            """A user scope (``optimizer.step``, a ``record_function``) opened outside any anchor:
            the base the library gives it, as an outermost module call has one."""
            return caller_context_id(sys._getframe(1))

        _call_impl = torch_calls.wrap(
            torch_calls.Wrapping(
                self.lib, original, is_compiling, root, self.child_name,
                root_done if python_base is not None else None,
            )
        )  # fmt: skip
        patch = AttributePatch(torch.nn.Module, "_call_impl", _call_impl)
        patch.apply()
        handles = [Undo(patch.restore)]
        scopes = getattr(self.lib, "deut_py_scope_base", None)  # absent when built without Python.h
        if python_base is not None and scopes is not None:
            scopes.argtypes, scopes.restype = [ctypes.py_object], None
            scopes(scope_root)
            handles.append(Undo(lambda: scopes(None)))
        return handles

    def intern(self, text: str) -> int:
        """The library's name id of ``text``."""
        return int(self.lib.deut_intern(text.encode("utf-8", "replace")))

    def root_name(self, module: Any) -> tuple[dict[int, str], str, int]:
        """An outermost module call: its map of submodules to attribute paths, and its frame."""
        hit = _qualnames_by_module.get(id(module))
        if hit is None or hit[0]() is not module:
            hit = (weakref.ref(module), qualnames(module))
            _qualnames_by_module[id(module)] = hit
        return hit[1], "", self.intern(root_frame(module))

    def child_name(self, module: Any, qmap: dict[int, str], parent_qual: str) -> tuple[str, int]:
        """A module called inside another: named by its attribute path from the module it was
        called in (``layers.3 (TransformerEncoderLayer)``); by its class when it is not a submodule."""
        cls = type(module).__name__
        qual = qmap.get(id(module))
        if qual is None:
            return parent_qual, self.intern(cls)
        if parent_qual and qual.startswith(parent_qual + "."):
            rel = qual[len(parent_qual) + 1 :]
        else:
            rel = qual
        return qual, self.intern(f"{rel} ({cls})")


def qualnames(root: Any) -> dict[int, str]:
    """Each submodule's attribute path from ``root`` (a shared module keeps its first name); under
    ``torch.compile``'s wrapper the wrapped model's own names (``_orig_mod.`` dropped)."""
    out: dict[int, str] = {}
    for qual, module in root.named_modules():
        if qual.startswith("_orig_mod"):
            qual = qual[len("_orig_mod") :].lstrip(".")
        out.setdefault(id(module), qual)
    return out


def root_frame(module: Any) -> str:
    """An outermost module call's frame: its class, or the compiled model's class under
    ``torch.compile``'s wrapper."""
    inner = getattr(module, "_orig_mod", None)
    if inner is not None and type(module).__name__ == "OptimizedModule":
        return f"{type(inner).__name__} (compiled)"
    return type(module).__name__
