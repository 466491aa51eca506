"""Store coverage: a tensor some program of a launch wrote, but where some elements no program wrote.

Counted over the tensor's view: densely (a per-cell array seen through the view's strides) where the
allocation is small or written all over, sparsely (each written cell placed in the view by its
strides) where a launch wrote a few elements of a large allocation, so the cost follows the
elements written, not the tensor's size.
"""

from __future__ import annotations

import numpy as np

from deuteron.check.findings import Findings
from deuteron.check.shadow_memory import Shadow, view_of
from deuteron.model.access import LaunchInfo, StorageArea, TensorArg, element_index

DENSE_CELLS = 1 << 22  # up to this many cells a dense bool array (1 byte a cell) is the cheap way


def unwritten(findings: Findings, launch: LaunchInfo, shadow: Shadow) -> None:
    dense = _dense_written(shadow)
    cells: np.ndarray | None = None
    for t in shadow.area.tensors:
        tensor = launch.tensors[t]
        numel = tensor.numel
        counted = None
        if dense is not None:
            hit = view_of(dense, shadow.area, tensor)
            if hit is not None and hit.size:
                n_written = int(np.count_nonzero(hit))
                first = int(np.flatnonzero(~hit)[0]) if n_written < hit.size else -1
                counted = (n_written, first)
        else:
            if cells is None:
                cells = shadow.written_cells()[0]
            counted = _sparse_count(cells, shadow.area, tensor, numel)
        if counted is None:
            continue
        n_written, first = counted
        if n_written == 0 or n_written == numel:
            continue  # not an output of this launch, or fully written
        missing = numel - n_written
        index = tuple(int(i) for i in np.unravel_index(first, tensor.shape)) if tensor.shape else ()
        findings.add(
            "store-coverage",
            launch,
            shadow.first_site,
            f"{tensor.name} ({tensor.dtype}, shape {tensor.shape}): {missing} of {numel} elements "
            f"({100 * missing / numel:.1f}%) were written by no program; "
            f"the first is {tensor.name}{list(index)}",
            tensor=tensor.name,
            details={
                "unwritten": missing,
                "elements": numel,
                "first_unwritten": list(index),
            },
            index=list(index),
            programs=0,
        )


def _dense_written(shadow: Shadow) -> np.ndarray | None:
    """A bool per cell, when that is cheap or the allocation was written all over; else None."""
    pagers = [p for p in (shadow.writes, shadow.atomics) if p is not None]
    if shadow.cells > DENSE_CELLS and any(p.touched_pages < p.pages for p in pagers):
        return None
    written = np.zeros(shadow.cells, dtype=bool)
    if shadow.writes is not None:
        written |= shadow.writes.dense("writer") >= 0
    if shadow.atomics is not None:
        written |= shadow.atomics.dense("atomic")
    return written


def _sparse_count(
    cells: np.ndarray, area: StorageArea, tensor: TensorArg, numel: int
) -> tuple[int, int] | None:
    """(elements of the view written, row-major index of the first one not written, -1 if none)."""
    scale = tensor.element_size // area.granule
    base = (tensor.data_ptr - area.start) // area.granule
    if scale < 1 or base < 0:
        return None
    rel = cells - base
    starts = rel[(rel >= 0) & (rel % scale == 0)] // scale  # an element counts by its first cell
    found = element_index(tensor, starts)
    if found is None:
        return None
    index, on = found
    flat = np.unique(
        np.ravel_multi_index(tuple(index[:, on]), tensor.shape) if tensor.shape else index[0, on]
    )
    if flat.size == numel:
        return numel, -1
    gaps = np.flatnonzero(flat != np.arange(flat.size))
    first = int(gaps[0]) if gaps.size else int(flat.size)
    return int(flat.size), first
