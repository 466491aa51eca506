"""``deuteron check --program``: run only some grid programs (pids) of each launch, and say what was skipped.

A spec is ``X[,Y[,Z]][@LAUNCH]``: the program id (missing axes are 0, so ``3`` is ``(3, 0, 0)``),
and optionally which launches it applies to: ``@2`` the second launch of the run (launches are
numbered from 1 across the run, as the report and the access record number them) or ``@NAME``
every launch of the kernel NAME. Several specs (``--program`` given again) select the union.
Launches no spec applies to run every program. In a launch a spec applies to, the other programs
are skipped: not run at all, so what they would have stored stays as it was, and stores they
would have made cannot be checked. The selection is the guard's (:class:`Selection`, asked before
each program), so nothing here knows Triton.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from deuteron.check.errors import CheckError
from deuteron.model.access import LaunchInfo

_SPEC = re.compile(r"^\s*(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?\s*(?:@\s*([A-Za-z_][\w.]*|\d+))?\s*$")
SHOWN = 4  # ran programs named per launch in the summary


@dataclass(frozen=True)
class ProgramSpec:
    """One ``--program`` value: a program id, and the launch number or kernel name it is limited to."""

    pid: tuple[int, int, int]
    launch: int | None = None
    kernel: str | None = None
    text: str = ""

    def applies(self, launch: LaunchInfo) -> bool:
        if self.launch is not None:
            return launch.index == self.launch
        return self.kernel is None or launch.kernel == self.kernel


def parse_spec(text: str) -> ProgramSpec:
    """A spec as typed; a one-line CheckError for anything else."""
    found = _SPEC.match(text)
    if found is None:
        raise CheckError(
            f"--program {text!r}: expected X[,Y[,Z]][@LAUNCH], whole numbers of at most three axes "
            "(e.g. 3, 3,0,0 or 3,0,0@2; @NAME for every launch of kernel NAME)"
        )
    x, y, z, where = found.groups()
    launch = kernel = None
    if where is not None and where.isdigit():
        launch = int(where)
        if launch < 1:
            raise CheckError(f"--program {text!r}: launches are numbered from 1")
    elif where is not None:
        kernel = where
    pid = (int(x), int(y or 0), int(z or 0))
    return ProgramSpec(pid, launch, kernel, text.strip())


@dataclass
class LaunchRun:
    """What one selected launch ran: the programs the grid loop reached, and which of them ran."""

    index: int
    kernel: str
    grid: tuple[int, int, int]
    reached: int = 0
    ran: list[tuple[int, int, int]] = field(default_factory=list)


class Selection:
    """The programs ``--program`` asks for: :meth:`runs` answers the guard before each program and
    keeps count, :meth:`summary` says per launch what ran and what was skipped."""

    def __init__(self, specs: list[ProgramSpec]) -> None:
        if not specs:
            raise CheckError("--program: no program given")
        self.specs = specs
        self.launches: dict[int, LaunchRun] = {}
        self.matched: set[ProgramSpec] = set()

    @staticmethod
    def parse(texts: list[str]) -> Selection:
        return Selection([parse_spec(t) for t in texts])

    def runs(self, launch: LaunchInfo, pid: tuple[int, int, int]) -> bool:
        """Whether program ``pid`` of ``launch`` runs: every program of a launch no spec applies to."""
        specs = [s for s in self.specs if s.applies(launch)]
        if not specs:
            return True
        record = self.launches.get(launch.index)
        if record is None:
            record = self.launches[launch.index] = LaunchRun(launch.index, launch.kernel, launch.grid)
        record.reached += 1
        chosen = [s for s in specs if s.pid == pid]
        if not chosen:
            return False
        self.matched.update(chosen)
        record.ran.append(pid)
        return True

    def summary(self, launches: int) -> list[str]:
        """One line per launch that skipped programs, then one per spec that selected nothing
        (``launches``: how many the run made)."""
        lines = []
        for run in self.launches.values():
            total = run.grid[0] * run.grid[1] * run.grid[2]
            skipped = run.reached - len(run.ran)
            if not skipped and run.reached == total:
                continue
            ran = ", ".join(str(p) for p in run.ran[:SHOWN]) + (" ..." if len(run.ran) > SHOWN else "")
            which = f" {ran}" if ran else ""
            lines.append(
                f"launch {run.index} of {run.kernel}: ran {len(run.ran)} of {total} program"
                f"{'s' if total != 1 else ''}{which}; {skipped} skipped, their outputs untouched"
            )
        for spec in self.specs:
            if spec not in self.matched:
                grids = sorted({r.grid for r in self.launches.values()})
                where = (
                    f"launch {spec.launch}"
                    if spec.launch is not None
                    else f"kernel {spec.kernel}"
                    if spec.kernel is not None
                    else "any launch"
                )
                known = f" (grids there: {', '.join(str(g) for g in grids)})" if grids else ""
                if spec.launch is not None and spec.launch > launches:
                    known = f" (the run made {launches} launch{'es' if launches != 1 else ''})"
                lines.append(f"--program {spec.text} matched no program in {where}{known}")
        return lines
