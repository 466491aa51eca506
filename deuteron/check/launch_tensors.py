"""A launch's tensors as the sanitizer sees them: every tensor argument (found and named by
:func:`deuteron.triton.interpreter.checking.tensor_args`) and the allocations they view, as a
:class:`~deuteron.model.access.LaunchInfo`. Apart from the :class:`~deuteron.check.guard.Guard`
because describing a launch needs only its arguments, not the interpreter's events."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deuteron.model.access import LaunchInfo, SiteTable, StorageArea, TensorArg


def launch_info(
    index: int,
    fn: Any,
    tensor_args: list[tuple[str, Any, Any]],
    grid: tuple[int, int, int],
    sites: SiteTable,
    tags: Any = None,
) -> LaunchInfo:
    """A launch's tensors (``tensor_args``: (name, tensor, the object converted to a pointer)) and
    the allocations they view; ``tags`` hears which object gets which pointer tag."""
    areas: dict[int, list[int]] = {}
    sizes: dict[int, int] = {}
    raw: list[tuple[str, Any, int]] = []
    by_id: dict[int, int] = {}
    by_ptr: dict[int, int] = {}
    for name, t, outer in tensor_args:
        storage = t.untyped_storage()
        start = int(storage.data_ptr())
        sizes[start] = max(sizes.get(start, 0), int(storage.nbytes()))
        by_id[id(outer)] = by_id[id(t)] = len(raw) + 1
        by_ptr.setdefault(int(outer.data_ptr()), len(raw) + 1)
        raw.append((name, t, start))
    if tags is not None:
        tags(by_id, by_ptr)
    order = sorted(sizes)
    index_of = {start: i for i, start in enumerate(order)}
    tensors: list[TensorArg] = []
    for name, t, start in raw:
        areas.setdefault(start, []).append(len(tensors))
        tensors.append(
            TensorArg(
                name=name,
                shape=tuple(int(s) for s in t.shape),
                strides=tuple(int(s) for s in t.stride()),
                dtype=str(t.dtype).removeprefix("torch."),
                element_size=int(t.element_size()),
                data_ptr=int(t.data_ptr()),
                storage=index_of[start],
            )
        )
    storages = [
        StorageArea(
            start=start,
            nbytes=sizes[start],
            granule=math.gcd(*(tensors[i].element_size for i in areas[start])),
            tensors=tuple(areas[start]),
        )
        for start in order
    ]
    code = getattr(fn, "__code__", None)
    return LaunchInfo(
        index=index,
        kernel=getattr(fn, "__name__", "kernel"),
        file=code.co_filename if code is not None else "",
        grid=grid,
        tensors=tensors,
        storages=storages,
        starts=np.array([s.start for s in storages], dtype=np.uint64),
        ends=np.array([s.start + s.nbytes for s in storages], dtype=np.uint64),
        sites=sites,
    )
