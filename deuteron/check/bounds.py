"""Out-of-bounds and off-view lanes, told in the terms of the tensor their pointer came from.

Out-of-bounds: an unmasked lane outside the allocation of its own tensor (found by the pointer's
provenance), even where another tensor lies; or a pointer read from memory that points into no
live tensor. The guard has already masked these lanes off (memory safety is not optional).
Outside-view: a lane inside its tensor's allocation but not on the view's elements (the padding of
a slice, another row of a narrowed tensor): real memory, so let through, but rarely what was meant.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deuteron.check.findings import Findings
from deuteron.check.shadow_memory import SHOWN, show
from deuteron.model.access import ACCESS_NAMES, Access, LaunchInfo, TensorArg, describe_index, element_index

Program = tuple[int, int, int] | None


def _indices(tensor: TensorArg, offsets: np.ndarray) -> tuple[list[list[int]], str]:
    """The first lanes' indices into the view, and a phrase showing them (``x[100, 0]``, ...)."""
    found = element_index(tensor, offsets[:SHOWN])
    if found is None:
        return [], ""
    index = found[0]
    cols = [index[:, i] for i in range(index.shape[1])]
    shown = ", ".join(describe_index(tensor, c) for c in cols[:3])
    more = f" and {offsets.size - 3} more" if offsets.size > 3 else ""
    return [[int(v) for v in c] for c in cols], shown + more


def _neighbour(launch: LaunchInfo, address: int, owner: int) -> str:
    """The other tensor whose memory an address lies in, if any: a stray lane often lands there."""
    for area in launch.storages:
        if area.start <= address < area.start + area.nbytes:
            names = [launch.tensors[t].name for t in area.tensors if t != owner]
            if names and launch.tensors[owner].storage != launch.storages.index(area):
                return names[0]
    return ""


def _lane_positions(access: Access) -> list[int]:
    """The first lanes of the part, as flat positions in the access (for a finding's details)."""
    if access.mask is None:
        return list(range(min(SHOWN, access.addresses.size)))
    return np.flatnonzero(access.mask)[:SHOWN].tolist()


def _details(
    what: str, index: list[list[int]], offsets: np.ndarray, tensor: TensorArg, **middle: Any
) -> dict[str, Any]:
    """A bounds finding's details, in the order the report writes them: the access and its example
    index, the element offsets, what is particular to the finding (``middle``, in order), the view."""
    return {
        "access": what,
        "index": index[0] if index else None,
        "indices": index,
        "element_offsets": offsets[:SHOWN].tolist(),
        **middle,
        "shape": list(tensor.shape),
        "strides": list(tensor.strides),
    }


def outside(findings: Findings, launch: LaunchInfo, program: Program, seq: int, access: Access) -> None:
    """Lanes of ``access`` outside the allocation of their tensor (``access.tensor``, one int; -1:
    a pointer of no known origin that points into no live tensor), as one finding in the terms of
    that tensor: its shape and strides, the lanes' indices, and whose memory they land in."""
    kind, addresses, site, tensor_index = access.kind, access.addresses, access.site, int(access.tensor)
    what = ACCESS_NAMES[kind]
    if tensor_index < 0:
        shown = ", ".join(f"{int(a):#x}" for a in np.unique(addresses)[:4])
        findings.add(
            "out-of-bounds",
            launch,
            site,
            f"{what} of {addresses.size} lane(s) through a pointer that came from no tensor argument (read "
            f"from memory, or made from an integer) and points into no live tensor: address {shown}",
            seq=seq,
            program=program,
            tensor="<unknown pointer>",
            details={
                "access": what,
                "addresses": [int(a) for a in addresses[:SHOWN]],
                "lanes": _lane_positions(access),
            },
        )
        return
    tensor = launch.tensors[tensor_index]
    area = launch.storages[tensor.storage]
    offsets = (addresses.astype(np.int64) - np.int64(tensor.data_ptr)) // tensor.element_size
    first = (area.start - tensor.data_ptr) // tensor.element_size
    last = (area.start + area.nbytes - tensor.data_ptr) // tensor.element_size - 1
    span = (
        f"elements {first}..{last}" if (first, last) != (0, tensor.numel - 1) else f"{tensor.numel} elements"
    )
    index, shown = _indices(tensor, offsets)
    neighbour = _neighbour(launch, int(addresses[0]), tensor_index)
    lands = f"; it lands in {neighbour}'s memory" if neighbour else ""
    findings.add(
        "out-of-bounds",
        launch,
        site,
        f"{what} of {addresses.size} unmasked lane(s) outside {tensor.name} ({tensor.dtype}, shape "
        f"{tensor.shape}, strides {tensor.strides}; its memory holds {span}): "
        f"{shown}{lands}; element offsets from {tensor.name}'s first element {show(offsets)}",
        seq=seq,
        program=program,
        tensor=tensor.name,
        details={
            **_details(
                what,
                index,
                offsets,
                tensor,
                lanes=_lane_positions(access),
                valid_offsets=[int(first), int(last)],
            ),
            **({"lands_in": neighbour} if neighbour else {}),
        },
    )


def off_view(findings: Findings, launch: LaunchInfo, program: Program, seq: int, access: Access) -> None:
    """Lanes of ``access`` inside their tensor's allocation but off its view, as one finding."""
    kind, addresses, site, tensor_index = access.kind, access.addresses, access.site, int(access.tensor)
    what = ACCESS_NAMES[kind]
    tensor = launch.tensors[tensor_index]
    area = launch.storages[tensor.storage]
    offsets = (addresses.astype(np.int64) - np.int64(tensor.data_ptr)) // tensor.element_size
    in_memory = (addresses.astype(np.int64) - np.int64(area.start)) // tensor.element_size
    index, shown = _indices(tensor, offsets)
    findings.add(
        "outside-view",
        launch,
        site,
        f"{what} of {addresses.size} lane(s) inside {tensor.name}'s memory but outside its view "
        f"(shape {tensor.shape}, strides {tensor.strides}): {shown or show(offsets)}; the memory there "
        f"belongs to no element of the view (padding, or another row of a slice): a wrong stride or mask?",
        seq=seq,
        program=program,
        tensor=tensor.name,
        details=_details(
            what,
            index,
            offsets,
            tensor,
            memory_offsets=in_memory[:SHOWN].tolist(),
            lanes=_lane_positions(access),
        ),
    )
