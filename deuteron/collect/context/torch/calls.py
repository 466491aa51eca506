"""The torch context's wrapper of ``nn.Module._call_impl``: every module call pushed on the C++
module stack, named by its attribute path under the module that called it.

Two forms of the same wrapper. The C one (``deut_call_impl`` in ``_torch_ops.cpp``, there when the
library was built with this Python's headers) does the per-call work (the name lookup, the push
and the pop) without running Python: in Python that work cost about 3 us a module call on a slow
CPU, more than torch's own call path. The Python one is for a library built without the headers.
Both keep the ``torch.compiler.is_compiling()`` test in Python: Dynamo traces it and, seeing a
compile, calls the original, so no compiled graph holds a call into the library.

Never imports torch: the torch context hands in a :class:`Wrapping`.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

FILE = __file__  # frames of this module sit between a module call and its caller (see Wrapping.root)


class Wrapping(NamedTuple):
    """What either wrapper needs from the torch context."""

    lib: ctypes.CDLL
    original: Callable[..., Any]  # torch's own nn.Module._call_impl
    is_compiling: Callable[[], bool]
    # An outermost call: (module) -> (its submodule map, its frame's name id). Called from this
    # module's frames: a caller's frame is found above those of FILE (and torch's).
    root: Callable[[Any], tuple[dict[int, str], int]]
    # A nested call: (module, the outermost map, the caller's attribute path) -> (path, name id).
    child: Callable[[Any, dict[int, str], str], tuple[str, int]]
    # After an outermost call returned or raised; None for nothing (-c python,torch resets the base).
    root_done: Callable[[], None] | None


def wrap(how: Wrapping) -> Callable[..., Any]:
    """The C wrapper where the library has it, else the Python one."""
    wrapper = c_wrapper(how) or python_wrapper(how)
    wrapper.__wrapped__ = how.original  # type: ignore[attr-defined]
    return wrapper


def c_wrapper(how: Wrapping) -> Callable[..., Any] | None:
    """The wrapper whose work is done in C; None where the library has no ``deut_call_impl``."""
    try:
        configure = how.lib.deut_py_configure
    except AttributeError:  # built without Python's headers
        return None
    configure.argtypes = [ctypes.py_object] * 4
    configure.restype = ctypes.py_object
    child = how.child

    def interned_child(module: Any, qmap: dict[int, str], parent_qual: str) -> tuple[str, int]:
        # The C cache keys nested calls by the caller's path object: one object per text.
        qual, nid = child(module, qmap, parent_qual)
        return sys.intern(qual), nid

    fast: Callable[..., Any] = configure(how.original, how.root, interned_child, how.root_done)
    original, is_compiling = how.original, how.is_compiling

    def _call_impl(module: Any, *args: Any, **kwargs: Any) -> Any:
        if is_compiling():  # traced by dynamo: leave no trace in the graph
            return original(module, *args, **kwargs)
        return fast(module, *args, **kwargs)

    return _call_impl


def python_wrapper(how: Wrapping) -> Callable[..., Any]:
    """The wrapper in Python (a library built without Python's headers)."""
    enter, leave = how.lib.deut_module_enter, how.lib.deut_module_exit
    _, original, is_compiling, root, child, root_done = how
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
            qmap, nid = root(module)
            qual = ""
        stack.append((qmap, qual))
        enter(nid)
        try:
            return original(module, *args, **kwargs)
        finally:
            stack.pop()
            leave()
            if root_done is not None and not stack:
                root_done()

    return _call_impl
