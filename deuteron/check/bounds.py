"""Out-of-bounds: unmasked lanes whose address lies outside the memory of every tensor argument.

The guard has already masked these lanes off (memory safety is not optional); this only says
where, in the terms of the nearest tensor.
"""

from __future__ import annotations

import numpy as np

from ..model.access import ACCESS_NAMES, LaunchInfo
from .findings import Findings
from .shadow import SHOWN, show, tensor_near


def outside(
    findings: Findings,
    launch: LaunchInfo,
    program: tuple[int, int, int] | None,
    seq: int,
    kind: int,
    addresses: np.ndarray,
    lanes: np.ndarray,
    near: int,
    site: int,
) -> None:
    what = ACCESS_NAMES[kind]
    if near < 0:
        findings.add(
            "out-of-bounds",
            launch,
            site,
            f"{what} of {addresses.size} lane(s) while the kernel has no tensor arguments",
            seq=seq,
            program=program,
        )
        return
    area = launch.storages[near]
    tensor = tensor_near(launch, area, int(addresses[0]))
    offsets = (addresses.astype(np.int64) - np.int64(tensor.data_ptr)) // tensor.element_size
    first = (area.start - tensor.data_ptr) // tensor.element_size
    last = (area.start + area.nbytes - tensor.data_ptr) // tensor.element_size - 1
    numel = int(np.prod(tensor.shape)) if tensor.shape else 1
    span = f"elements {first}..{last}" if (first, last) != (0, numel - 1) else f"{numel} elements"
    findings.add(
        "out-of-bounds",
        launch,
        site,
        f"{what} of {addresses.size} unmasked lane(s) outside every tensor argument, nearest "
        f"{tensor.name} ({tensor.dtype}, shape {tensor.shape}, strides {tensor.strides}; its memory "
        f"holds {span}): element offsets from {tensor.name}'s first element {show(offsets)}",
        seq=seq,
        program=program,
        tensor=tensor.name,
        details={
            "access": what,
            "element_offsets": offsets[:SHOWN].tolist(),
            "lanes": lanes[:SHOWN].tolist(),
            "valid_offsets": [int(first), int(last)],
            "shape": list(tensor.shape),
            "strides": list(tensor.strides),
        },
    )
