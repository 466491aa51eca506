"""Store coverage: a tensor some program of a launch wrote, but where some elements no program wrote."""

from __future__ import annotations

import numpy as np

from ..model.access import LaunchInfo
from .findings import Findings
from .shadow import Shadow, view_of


def unwritten(findings: Findings, launch: LaunchInfo, shadow: Shadow) -> None:
    written = np.zeros(shadow.cells, dtype=bool)
    if shadow.writer is not None:
        written |= shadow.writer >= 0
    if shadow.atomic is not None:
        written |= shadow.atomic
    for t in shadow.area.tensors:
        tensor = launch.tensors[t]
        hit = view_of(written, shadow.area, tensor)
        if hit is None or hit.size == 0:
            continue
        n_written = int(np.count_nonzero(hit))
        if n_written == 0 or n_written == hit.size:
            continue  # not an output of this launch, or fully written
        missing = hit.size - n_written
        first = int(np.flatnonzero(~hit)[0])
        index = tuple(int(i) for i in np.unravel_index(first, tensor.shape)) if tensor.shape else ()
        findings.add(
            "store-coverage",
            launch,
            shadow.first_site,
            f"{tensor.name} ({tensor.dtype}, shape {tensor.shape}): {missing} of {hit.size} elements "
            f"({100 * missing / hit.size:.1f}%) were written by no program; "
            f"the first is {tensor.name}{list(index)}",
            tensor=tensor.name,
            details={"unwritten": missing, "elements": int(hit.size), "first_unwritten": list(index)},
            programs=0,
        )
