"""The interpreter's atomics, as the sanitizer needs them: a compare-and-swap run on some lanes only
(the others masked off as out of bounds), and an atomic op's name as the sanitizer hears it."""

from __future__ import annotations

from typing import Any

import numpy as np


def op_name(op: Any) -> str:
    """``xchg`` for ``ATOMIC_OP.XCHG`` (the builder's enum, whatever its printed form)."""
    name = getattr(op, "name", None) or str(op)
    return str(name).rsplit(".", 1)[-1].lower()


def partial_cas(
    orig_cas: Any, builder: Any, ptr: Any, cmp: Any, val: Any, ok: np.ndarray, rest: Any, kw: Any
) -> Any:
    handle = type(ptr)
    cmp_data = np.broadcast_to(cmp.data, ptr.data.shape)
    val_data = np.broadcast_to(val.data, ptr.data.shape)
    result = np.array(cmp_data, copy=True)
    if ok.any():
        part = orig_cas(
            builder,
            handle(ptr.data[ok], ptr.dtype),
            handle(np.ascontiguousarray(cmp_data[ok]), cmp.dtype),
            handle(np.ascontiguousarray(val_data[ok]), val.dtype),
            *rest,
            **kw,
        )
        result[ok] = part.data
    return handle(result, cmp.dtype.scalar if hasattr(cmp.dtype, "scalar") else cmp.dtype)
