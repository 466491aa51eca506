"""The torch context's native op probe as Python calls it: the library :mod:`.build` made for the
installed torch, loaded once per process, with the C signature of every function the context
calls through ctypes, and the one bulk read of its trie.

Apart from the context source so that the ctypes declarations, the one list that must match
``_torch_ops.cpp``'s ``extern "C"`` functions, sit in one place, and the source keeps to what it
does with them. Imports torch only to find its headers and ABI, and only when first loaded.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

from deuteron.collect.context.torch import build as torch_build
from deuteron.model.errors import DeuteronError


class TorchContextError(DeuteronError, RuntimeError):
    """The torch context cannot start; the message says why."""


_loaded: ctypes.CDLL | None = None


def load() -> ctypes.CDLL:
    """The op probe, built on first use for the installed torch; the same library on every call."""
    global _loaded
    if _loaded is not None:
        return _loaded
    try:
        import torch
    except ImportError:
        raise TorchContextError(
            "-c torch needs PyTorch, which is not installed (pip install torch)"
        ) from None
    path = torch_build.build(
        torch.__version__, os.path.dirname(torch.__file__), int(torch._C._GLIBCXX_USE_CXX11_ABI)
    )
    lib = ctypes.PyDLL(str(path))  # calls hold the GIL: no release and re-take per module call
    u32, u64 = ctypes.c_uint32, ctypes.c_uint64
    p32, p64 = ctypes.POINTER(u32), ctypes.POINTER(u64)
    for name, args, res in (
        ("deut_abi", [], ctypes.c_int),
        ("deut_install", [ctypes.c_int], ctypes.c_int),
        ("deut_remove", [], None),
        ("deut_reset", [], None),
        ("deut_intern", [ctypes.c_char_p], u32),
        ("deut_current", [], u32),
        ("deut_launch", [ctypes.c_char_p, ctypes.c_int], u32),
        ("deut_infer_stats", [p64], None),
        ("deut_set_base", [u32], None),
        ("deut_module_enter", [u32], None),
        ("deut_module_exit", [], None),
        ("deut_node_count", [], u32),
        ("deut_name_count", [], u32),
        ("deut_dropped", [], u64),
        ("deut_name", [u32], ctypes.c_char_p),
        ("deut_read", [u32, u32, p32, p32, ctypes.POINTER(ctypes.c_uint8), p64, p64, p64], None),
        ("deut_spans", [u64], ctypes.c_int),
        ("deut_span_count", [], u64),
        ("deut_span_data", [], ctypes.c_void_p),
    ):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    _loaded = lib
    return lib


def read_nodes(lib: ctypes.CDLL, start: int, stop: int) -> tuple[np.ndarray, ...]:
    """Trie nodes ``start`` to ``stop`` of the library: each one's parent, name id and kind, and its
    totals so far (ns inside it, calls, flops)."""
    n = stop - start
    parent, name = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
    kind = np.zeros(n, np.uint8)
    ns, calls, flops = np.zeros(n, np.uint64), np.zeros(n, np.uint64), np.zeros(n, np.uint64)

    def ptr(a: np.ndarray, t: Any) -> Any:
        return a.ctypes.data_as(ctypes.POINTER(t))

    lib.deut_read(
        start, stop, ptr(parent, ctypes.c_uint32), ptr(name, ctypes.c_uint32), ptr(kind, ctypes.c_uint8),
        ptr(ns, ctypes.c_uint64), ptr(calls, ctypes.c_uint64), ptr(flops, ctypes.c_uint64),
    )  # fmt: skip
    return parent, name, kind, ns, calls, flops
