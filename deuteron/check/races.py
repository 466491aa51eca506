"""Races between the programs of one launch: two programs store to one element (found at the
store), or one program reads an element another stores (found at the end of the launch, from the
shadow's first and last reader of each written element). GPU-scope atomics are never races (CTA-scope
ones are: :mod:`.atomic_scopes`), nor are accesses that all hold one lock (:mod:`.locks`) or that
an acquire orders after a release (:mod:`.happens_before`: those are dropped before they get here);
a race found where flags were used says which order is missing."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from deuteron.check.findings import Findings
from deuteron.check.happens_before import UNDECIDED
from deuteron.check.shadow_memory import SHOWN, Shadow, element_offsets, first_index, show, tensor_at
from deuteron.model.access import LaunchInfo


def store_store(
    findings: Findings,
    launch: LaunchInfo,
    pids: Sequence[tuple[int, int, int]],
    seq: int,
    shadow: Shadow,
    cells: np.ndarray,
    others: np.ndarray,
    site: int,
    missing: Callable[[int, int], str] | None = None,
    other_write: int | None = None,
) -> None:
    """Program ``seq`` stores to ``cells`` that programs ``others`` stored to (their store's site
    ``other_write``, else the shadow's)."""
    tensor = tensor_at(launch, shadow.area, int(cells[0]) * shadow.area.granule)
    other = int(others[0])
    other_site = launch.sites.get(
        other_write if other_write is not None else shadow.write_site(int(cells[0]))
    )
    offsets = element_offsets(shadow.area, tensor, cells)
    me = pids[seq]
    them = pids[other]
    where = f" (its store at line {other_site.line})" if other_site is not None else ""
    why = missing(seq, other) if missing is not None else ""
    other_line = other_site.line if other_site is not None else "?"
    mine = launch.sites.get(site)
    undecided = why.startswith(UNDECIDED)
    why = why.removeprefix(UNDECIDED)
    not_ordered = "cannot be told to be ordered" if undecided else "is not ordered"
    order = (
        f"; the store at line {mine.line if mine is not None else '?'} {not_ordered} after the store "
        f"at line {other_line}: {why}"
        if why
        else ""
    )
    findings.add(
        "race",
        launch,
        site,
        f"{'undecided: ' if undecided else ''}program {me} stores to {len(cells)} element(s) of "
        f"{tensor.name} that program {them} also stored to{where}: element offsets {show(offsets)}. "
        f"Which value survives depends on the order programs run in on the GPU{order}",
        seq=seq,
        program=me,
        tensor=tensor.name,
        details={
            "other_program": list(them),
            "index": first_index(tensor, offsets),
            "element_offsets": offsets[:SHOWN].tolist(),
            "access": "store/store",
            "verdict": "undecided" if undecided else "race",
        },
        severity="warning" if undecided else None,
    )


def load_store(
    findings: Findings,
    launch: LaunchInfo,
    pids: Sequence[tuple[int, int, int]],
    shadow: Shadow,
    missing: Callable[[int, int], str] | None = None,
    skip: frozenset[int] = frozenset(),
) -> None:
    """At the end of a launch: elements one program stored and another read, one finding per pair
    of (read line, store line). Found from the shadow's first and last reader of each written cell,
    so the cost follows the cells written, not the reads made. Pairs with a program in ``skip``
    (whose order is undecided) are left out."""
    reads = shadow.reads
    if reads is None or shadow.writes is None:
        return
    cells, writer, wsite = shadow.written_cells()
    stored = writer >= 0  # atomics alone are never races
    cells, writer, wsite = cells[stored], writer[stored], wsite[stored]
    rmin, rmax = reads.get("rmin", cells), reads.get("rmax", cells)
    other = (rmax >= 0) & ((rmin != writer) | (rmax != writer))
    if shadow.guards is not None:  # every access under one lock: the lock orders them
        other &= shadow.guarded(cells) < 0
    if skip and other.any():
        reader = np.where(rmin != writer, rmin, rmax)
        listed = np.array(sorted(skip), dtype=np.int64)
        other &= ~(np.isin(writer, listed) | np.isin(reader, listed))
    if not other.any():
        return
    cells, writer, wsite, rmin, rmax = cells[other], writer[other], wsite[other], rmin[other], rmax[other]
    rsite = reads.get("rsite", cells)
    # One finding per (read line, write line) pair, counted over the writing programs.
    pairs = np.stack([rsite, wsite], axis=1)
    _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
    for group, at in enumerate(first):
        members = cells[inverse.reshape(-1) == group]
        cell = int(cells[at])
        w = int(writer[at])
        r = int(rmin[at]) if int(rmin[at]) != w else int(rmax[at])
        tensor = tensor_at(launch, shadow.area, cell * shadow.area.granule)
        offsets = element_offsets(shadow.area, tensor, members)
        read_at = launch.sites.get(int(rsite[at]))
        read_line = read_at.line if read_at is not None else "?"
        writer_programs = np.unique(writer[inverse.reshape(-1) == group])
        write_at = launch.sites.get(int(wsite[at]))
        write_line = write_at.line if write_at is not None else "?"
        why = missing(max(r, w), min(r, w)) if missing is not None else ""
        later, earlier = f"read at line {read_line}", f"write at line {write_line}"
        if r < w:
            later, earlier = earlier, later
        undecided = why.startswith(UNDECIDED)
        why = why.removeprefix(UNDECIDED)
        not_ordered = "cannot be told to be ordered" if undecided else "is not ordered"
        order = f"; the {later} {not_ordered} after the {earlier}: {why}" if why else ""
        findings.add(
            "race",
            launch,
            int(wsite[at]),
            f"{'undecided: ' if undecided else ''}"
            f"{len(members)} element(s) of {tensor.name} are stored by one program and read by another: "
            f"element {offsets[0]} is stored by program {pids[w]} "
            f"and read by program {pids[r]} "
            f"(line {read_line}); element offsets {show(offsets)}. What the reader sees depends on the "
            f"order programs run in on the GPU{order}",
            program=pids[w],
            tensor=tensor.name,
            programs=int(writer_programs.size),
            details={
                "other_program": list(pids[r]),
                "index": first_index(tensor, offsets),
                "read_line": read_line,
                "element_offsets": offsets[:SHOWN].tolist(),
                "access": "load/store",
                "verdict": "undecided" if undecided else "race",
            },
            severity="warning" if undecided else None,
        )
