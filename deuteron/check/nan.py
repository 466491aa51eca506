"""Where a NaN or an infinity was born: the first op in a program that made one from finite inputs.

Programs compute masked-off lanes too (a load's ``other`` fills them), and those lanes may well
hold 0/0 that nobody stores. So an origin is only reported when the same program then stores a
non-finite value through an active lane, and lanes are followed where shapes allow: of the
program's births, the first whose lanes are among the stored non-finite lanes wins (elementwise
ops keep lanes in place). A birth of another shape (a dot, a reduction's input) is blamed only
if no birth of the stored shape exists. A NaN that was already in the input is not a finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from deuteron.check.findings import Findings
from deuteron.model.access import Access, LaunchInfo

_KEPT = 8  # births remembered per program


@dataclass
class _Origin:
    """A birth of NaN or Inf from finite inputs, kept until the program stores one (or not)."""

    op: str
    site: int
    produced: str
    lane_count: int
    example: str
    born: np.ndarray | None  # where, in the op's output shape; None when lanes cannot be told apart


def _finite_lanes(inputs: tuple[np.ndarray, ...], shape: tuple[int, ...]) -> np.ndarray | bool:
    ok: np.ndarray | bool = True
    for x in inputs:
        if x.dtype.kind not in "fc":
            continue
        finite = np.isfinite(x)
        try:
            ok = ok & np.broadcast_to(finite, shape)
        except ValueError:  # not lane-aligned (tl.dot's operands): judge the operand as a whole
            ok = ok & bool(finite.all())
    return ok


class NanOrigins:
    """The NaN-origin check of one launch at a time: births remembered per program (the first
    ``_KEPT``), blamed when the same program stores a non-finite value (see the module's text)."""

    def __init__(self, findings: Findings) -> None:
        self.findings = findings
        self.launch: LaunchInfo | None = None
        self.pids: Sequence[tuple[int, int, int]] = ()
        self.seq = -1
        self.origins: list[_Origin] = []
        self.reported = False

    def begin(self, launch: LaunchInfo, pids: Sequence[tuple[int, int, int]]) -> None:
        self.launch, self.pids = launch, pids
        self.program(-1)

    def program(self, seq: int) -> None:
        self.seq = seq
        self.origins = []
        self.reported = False

    def value(self, op: str, inputs: tuple[np.ndarray, ...], output: np.ndarray, site: int) -> None:
        if len(self.origins) >= _KEPT or self.reported:
            return
        bad = ~np.isfinite(output)
        born = bad & _finite_lanes(inputs, output.shape)
        if not np.any(born):
            return
        values = output[born] if isinstance(born, np.ndarray) else output.reshape(-1)
        nans = bool(np.isnan(values).any())
        produced = "NaN and inf" if nans and not np.isnan(values).all() else ("NaN" if nans else "inf")
        example = ""
        if isinstance(born, np.ndarray) and born.shape == output.shape:
            lane = tuple(int(i) for i in np.argwhere(born)[0])
            shown = []
            for x in inputs:
                try:
                    shown.append(f"{np.broadcast_to(x, output.shape)[lane]:g}")
                except (ValueError, TypeError):
                    shown.append("...")
            example = f" (e.g. {op}({', '.join(shown)}) = {output[lane]:g})"
        born_mask = born if isinstance(born, np.ndarray) and born.shape == output.shape else None
        self.origins.append(_Origin(op, site, produced, int(np.count_nonzero(born)), example, born_mask))

    def _blame(self, bad_lanes: np.ndarray) -> _Origin | None:
        same_shape = [o for o in self.origins if o.born is not None and o.born.shape == bad_lanes.shape]
        for origin in same_shape:
            if origin.born is not None and np.any(origin.born & bad_lanes):
                return origin
        if same_shape:  # births of the stored shape exist, but elsewhere: this NaN came in with the data
            return None
        return self.origins[0]

    def stored(self, access: Access, tensor: str) -> None:
        """A store of the running program to ``tensor`` (its name): if it writes a non-finite value
        through an active lane, report the birth that made it (once per program)."""
        if not self.origins or self.reported or self.launch is None:
            return
        values, lanes, store_site = access.values, access.mask, access.site
        if values is None or values.dtype.kind != "f":
            return
        full = values if lanes is None else np.broadcast_to(values, lanes.shape)
        bad_lanes = ~np.isfinite(full)
        if lanes is not None:
            bad_lanes &= lanes
        bad = int(np.count_nonzero(bad_lanes))
        if not bad:
            return
        origin = self._blame(bad_lanes)
        if origin is None:
            return
        self.reported = True
        store_at = self.launch.sites.get(store_site)
        store_line = store_at.line if store_at is not None else "?"
        program = self.pids[self.seq] if 0 <= self.seq < len(self.pids) else None
        self.findings.add(
            "nan",
            self.launch,
            origin.site,
            f"{origin.op} produced {origin.produced} from finite inputs{origin.example} "
            f"in {origin.lane_count} lane(s); "
            f"{bad} non-finite value(s) then reached {tensor} (store at line {store_line})",
            seq=self.seq,
            program=program,
            tensor=tensor,
            details={"op": origin.op, "produced": origin.produced, "stored": bad, "store_line": store_line},
        )
