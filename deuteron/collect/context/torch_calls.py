"""The torch context's wrapper of ``nn.Module._call_impl``: every module call pushed on the C++
module stack, named by its attribute path under the module that called it.

Two forms of the same wrapper. The C one (``deut_call_impl`` in ``_torch_ops.cpp``, there when the
library was built with this Python's headers) does the per-call work (the name lookup, the push
and the pop) without running Python: in Python that work cost about 3 us a module call on a slow
CPU, more than torch's own call path. The Python one is for a library built without the headers.
Both keep the ``torch.compiler.is_compiling()`` test in Python: Dynamo traces it and, seeing a
compile, calls the original, so no compiled graph holds a call into the library.

Never imports torch: the torch context hands in the original, ``is_compiling`` and the callbacks
that name modules (``root``: an outermost call's submodule map and frame; ``child``: a nested
call's attribute path and frame).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from typing import Any

Root = Callable[[Any, int], tuple[dict[int, str], int]]  # (module, frame depth) -> (map, name id)
Child = Callable[[Any, dict[int, str], str], tuple[str, int]]  # (module, map, caller's path) -> (path, id)


def c_wrapper(
    lib: ctypes.CDLL,
    original: Callable[..., Any],
    is_compiling: Callable[[], bool],
    root: Root,
    child: Child,
    python_base: object | None,
) -> Callable[..., Any] | None:
    """The wrapper whose work is done in C; None where the library has no ``deut_call_impl``."""
    try:
        configure = lib.deut_py_configure
    except AttributeError:  # built without Python's headers
        return None
    configure.argtypes = [ctypes.py_object] * 4
    configure.restype = ctypes.py_object
    set_base = lib.deut_set_base

    def root_done() -> None:
        set_base(0)

    def interned_child(module: Any, qmap: dict[int, str], parent_qual: str) -> tuple[str, int]:
        # The C cache keys nested calls by the caller's path object: one object per text.
        qual, nid = child(module, qmap, parent_qual)
        return sys.intern(qual), nid

    # depth 3: root <- the lambda <- the wrapper (deut_call_impl has no frame) <- torch's _wrapped_call_impl
    fast: Callable[..., Any] = configure(
        original,
        lambda module: root(module, 3),
        interned_child,
        root_done if python_base is not None else None,
    )

    def _call_impl(module: Any, *args: Any, **kwargs: Any) -> Any:
        if is_compiling():  # traced by dynamo: leave no trace in the graph
            return original(module, *args, **kwargs)
        return fast(module, *args, **kwargs)

    _call_impl.__wrapped__ = original  # type: ignore[attr-defined]
    return _call_impl


def python_wrapper(
    lib: ctypes.CDLL,
    original: Callable[..., Any],
    is_compiling: Callable[[], bool],
    root: Root,
    child: Child,
    python_base: object | None,
) -> Callable[..., Any]:
    """The wrapper in Python (a library built without Python's headers)."""
    enter, leave, set_base = lib.deut_module_enter, lib.deut_module_exit, lib.deut_set_base
    tls = threading.local()
    names: dict[tuple[int, int, str], tuple[str, int]] = {}

    def _call_impl(module: Any, *args: Any, **kwargs: Any) -> Any:
        if is_compiling():  # traced by dynamo: leave no trace in the graph
            return original(module, *args, **kwargs)
        try:
            stack = tls.stack
        except AttributeError:
            stack = tls.stack = []
        if stack:
            qmap, parent_qual = stack[-1]
            key = (id(module), id(qmap), parent_qual)
            hit = names.get(key)
            if hit is None:
                hit = names[key] = child(module, qmap, parent_qual)
            qual, nid = hit
        else:
            qmap, nid = root(module, 2)
            qual = ""
        stack.append((qmap, qual))
        enter(nid)
        try:
            return original(module, *args, **kwargs)
        finally:
            stack.pop()
            leave()
            if python_base is not None and not stack:
                set_base(0)

    _call_impl.__wrapped__ = original  # type: ignore[attr-defined]
    return _call_impl
