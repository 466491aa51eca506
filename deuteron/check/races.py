"""Races between the programs of one launch: two programs store to one element (found at the
store), or one program reads an element another stores (found at the end of the launch, from the
shadow's first and last reader of each written element). Atomics are never races."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..model.access import LaunchInfo
from .findings import Findings
from .shadow import SHOWN, Shadow, element_offsets, show, tensor_at


def store_store(
    findings: Findings,
    launch: LaunchInfo,
    pids: Sequence[tuple[int, int, int]],
    seq: int,
    shadow: Shadow,
    cells: np.ndarray,
    others: np.ndarray,
    site: int,
) -> None:
    assert shadow.wsite is not None
    tensor = tensor_at(launch, shadow.area, int(cells[0]) * shadow.area.granule)
    other = int(others[0])
    other_site = launch.sites.get(int(shadow.wsite[cells[0]]))
    offsets = element_offsets(shadow.area, tensor, cells)
    me = pids[seq]
    them = pids[other]
    where = f" (its store at line {other_site.line})" if other_site is not None else ""
    findings.add(
        "race",
        launch,
        site,
        f"program {me} stores to {len(cells)} element(s) of {tensor.name} that program {them} "
        f"also stored to{where}: element offsets {show(offsets)}. Which value survives depends on "
        "the order programs run in on the GPU",
        seq=seq,
        program=me,
        tensor=tensor.name,
        details={
            "other_program": list(them),
            "element_offsets": offsets[:SHOWN].tolist(),
            "access": "store/store",
        },
    )


def load_store(
    findings: Findings, launch: LaunchInfo, pids: Sequence[tuple[int, int, int]], shadow: Shadow
) -> None:
    writer, rmin, rmax = shadow.writer, shadow.rmin, shadow.rmax
    if writer is None or rmin is None or rmax is None or shadow.rsite is None or shadow.wsite is None:
        return
    read_and_written = (writer >= 0) & (rmax >= 0)
    other = read_and_written & ((rmin != writer) | (rmax != writer))
    cells = np.flatnonzero(other)
    if cells.size == 0:
        return
    # One finding per (read line, write line) pair, counted over the writing programs.
    pairs = np.stack([shadow.rsite[cells], shadow.wsite[cells]], axis=1)
    _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
    for group, at in enumerate(first):
        members = cells[inverse.reshape(-1) == group]
        cell = int(cells[at])
        w = int(writer[cell])
        r = int(rmin[cell]) if int(rmin[cell]) != w else int(rmax[cell])
        rsite, wsite = int(shadow.rsite[cell]), int(shadow.wsite[cell])
        tensor = tensor_at(launch, shadow.area, cell * shadow.area.granule)
        offsets = element_offsets(shadow.area, tensor, members)
        read_at = launch.sites.get(rsite)
        read_line = read_at.line if read_at is not None else "?"
        writer_programs = np.unique(writer[members])
        findings.add(
            "race",
            launch,
            wsite,
            f"{len(members)} element(s) of {tensor.name} are stored by one program and read by another: "
            f"element {offsets[0]} is stored by program {pids[w]} "
            f"and read by program {pids[r]} "
            f"(line {read_line}); element offsets {show(offsets)}. What the reader sees depends on the "
            "order programs run in on the GPU",
            program=pids[w],
            tensor=tensor.name,
            programs=int(writer_programs.size),
            details={
                "other_program": list(pids[r]),
                "read_line": read_line,
                "element_offsets": offsets[:SHOWN].tolist(),
                "access": "load/store",
            },
        )
