"""``libdevice`` for kernels run in Triton's interpreter, where it does not exist.

A kernel calls libdevice as ``triton.language.extra.libdevice`` (a module of stubs whose bodies are
``...``: the compiler swaps in the backend's at code generation, the interpreter just runs the stub
and gets None) or as ``triton.language.extra.cuda.libdevice`` / ``.hip.libdevice`` (whose functions
need the compiler's ``_semantic`` and end in ``create_extern_elementwise``, which the interpreter
refuses). Either way the launch fails on a CPU.

While the ``interpreter`` hook group is applied, each libdevice function (in those three modules,
and wherever a kernel's module bound one by name) is replaced by a wrapper that calls the CUDA
backend's definition with the interpreter's semantic, so Triton itself checks the argument types,
broadcasts and picks the result type exactly as it would when compiling, and the builder's
``create_extern_elementwise`` then computes the values with NumPy (:mod:`.libdevice_math`).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from deuteron.process.patches import AttributePatch, CallbackPatch, Patch, WrapPatch
from deuteron.triton.interpreter.mends.libdevice_math import FUNCTIONS

MODULES = (
    "triton.language.extra.libdevice",
    "triton.language.extra.cuda.libdevice",
    "triton.language.extra.hip.libdevice",
)
_calling = threading.local()  # the libdevice function being dispatched, for the builder


class LibdeviceError(NotImplementedError):
    """A libdevice function with no NumPy implementation here."""


def _modules() -> list[Any]:
    found = []
    for name in MODULES:
        try:
            found.append(importlib.import_module(name))
        except ImportError:  # a wheel without that backend
            continue
    return found


def _definitions(modules: list[Any]) -> dict[str, Callable[..., Any]]:
    """name -> the backend definition that carries the type table (CUDA's, else HIP's)."""
    found: dict[str, Callable[..., Any]] = {}
    for module in reversed(modules):  # CUDA's wins where both define a name
        if module.__name__.endswith(".libdevice") and module.__name__ != MODULES[0]:
            for name, value in vars(module).items():
                if callable(value) and name in FUNCTIONS:
                    found[name] = value
    return found


def _wrapper(name: str, definition: Callable[..., Any], semantic: Any) -> Callable[..., Any]:
    def libdevice_function(*args: Any, _semantic: Any = None, **kwargs: Any) -> Any:
        stack = _calling.__dict__.setdefault("names", [])
        stack.append(name)
        try:
            return definition(*args, _semantic=semantic, **kwargs)
        finally:
            stack.pop()

    libdevice_function.__name__ = libdevice_function.__qualname__ = name
    # Named as the module a kernel imports libdevice from: a reproducer of the kernel written while
    # it runs here (deuteron repro) imports Triton's function, not this wrapper.
    libdevice_function.__module__ = MODULES[0]
    libdevice_function.__doc__ = f"libdevice.{name}, computed with NumPy in Triton's interpreter."
    return libdevice_function


def patches(interp: Any) -> list[Patch]:
    """``tl.extra.libdevice`` computed with NumPy: the libdevice modules' functions replaced by
    wrappers (in the modules, and in the globals of kernel modules that bound one by name, put back
    on restore), and the builder's extern elementwise calls answered from :mod:`.libdevice_math`."""
    builder = interp.interpreter_builder
    semantic = getattr(interp, "interpreter_semantic", None)
    np_dtype = getattr(interp, "_get_np_dtype", None)
    if semantic is None or np_dtype is None or not hasattr(builder, "create_extern_elementwise"):
        return []
    modules = _modules()
    definitions = _definitions(modules)
    wrappers = {name: _wrapper(name, fn, semantic) for name, fn in definitions.items()}
    originals: dict[int, str] = {}  # id(original function) -> name
    found: list[Patch] = []
    for module in modules:
        for name, value in vars(module).items():
            if name in wrappers and callable(value):
                originals[id(value)] = name
                found.append(AttributePatch(module, name, wrappers[name]))
    fixed: list[tuple[dict[str, Any], str, Any]] = []  # (module globals, name, original) to put back
    seen: set[int] = set()

    def fix_globals(fn: Any) -> None:
        """A kernel module that bound a libdevice function by name gets the wrapper too."""
        namespace = getattr(fn, "__globals__", None)
        if not isinstance(namespace, dict) or id(namespace) in seen:
            return
        seen.add(id(namespace))
        for key, value in list(namespace.items()):
            name = originals.get(id(value)) if callable(value) else None
            if name is not None:
                fixed.append((namespace, key, value))
                namespace[key] = wrappers[name]

    def restore_globals() -> None:
        while fixed:
            namespace, key, value = fixed.pop()
            namespace[key] = value
        seen.clear()

    def create_extern_elementwise(
        lib_name: str, lib_path: str, symbol: str, args: list[Any], ret_type: Any, is_pure: bool
    ) -> Any:
        names = _calling.__dict__.get("names")
        name = names[-1] if names else symbol
        impl = FUNCTIONS.get(name)
        if impl is None:
            raise LibdeviceError(
                f"libdevice function {name} ({symbol}) has no implementation in the interpreter"
            )
        element = ret_type.scalar
        data = [np.asarray(a.data) for a in args]
        shape = np.broadcast_shapes(*(d.shape for d in data)) if data else ()
        data = [np.broadcast_to(d, shape) for d in data]
        result = impl(data, np_dtype(element))
        return type(args[0])(np.ascontiguousarray(result).reshape(shape), element)

    def wrap_patch_lang(patch_lang: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def _patch_lang(fn: Any) -> Any:
            fix_globals(fn)
            return patch_lang(fn)

        return _patch_lang

    return [
        CallbackPatch(lambda: None, restore_globals),
        *found,
        AttributePatch(builder, "create_extern_elementwise", create_extern_elementwise),
        WrapPatch(interp, "_patch_lang", wrap_patch_lang),
    ]
