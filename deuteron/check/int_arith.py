"""Integer arithmetic that goes wrong on the launch that runs: a signed int32 ``+``, ``-`` or ``*``
whose true result does not fit in int32 (``int-overflow``: the kernel silently gets the wrapped
value, and an offset that wraps points far outside its tensor), and an integer ``//`` or ``%`` by
zero (``div-by-zero``: undefined on a GPU). The interpreter's side
(:mod:`deuteron.triton.interpreter.integers`) computes each int32 op's true result in int64 and
tells only the ops that differ, so a correct kernel pays one comparison per integer op.

Each finding has its witness: the program, the first bad lane (its index in the op's result), the
operands there, and the launch's scalar arguments. One finding per line (however many programs hit
it, as for every check); the message is made for the first program of each launch only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deuteron.check.findings import Findings
from deuteron.model.access import LaunchInfo
from deuteron.triton.interpreter.integers import IntFault

INT64_HINT = (
    "compute it in int64 (e.g. tl.program_id(0).to(tl.int64) * BLOCK, or cast an operand with .to(tl.int64))"
)


def first_lane(fault: IntFault) -> tuple[int, ...]:
    """The first bad lane of the op's result, as an index (``()`` for a scalar)."""
    where = np.argwhere(fault.bad)
    return tuple(int(i) for i in where[0]) if where.size else ()


def _at(values: np.ndarray, shape: tuple[int, ...], lane: tuple[int, ...]) -> int:
    try:
        return int(np.broadcast_to(values, shape)[lane])
    except (ValueError, IndexError, TypeError):
        return int(np.asarray(values).reshape(-1)[0])


def witness(fault: IntFault) -> dict[str, Any]:
    """The first bad lane and the values there: lane, lhs, rhs, and (a wrap) the true and wrapped results."""
    shape = fault.bad.shape
    lane = first_lane(fault)
    found: dict[str, Any] = {
        "op": fault.op,
        "lane": list(lane),
        "lhs": _at(fault.lhs, shape, lane),
        "rhs": _at(fault.rhs, shape, lane),
        "lanes": int(np.count_nonzero(fault.bad)),
    }
    if fault.true is not None:
        found["true"] = _at(fault.true, shape, lane)
        found["wrapped"] = _at(fault.result, shape, lane)
    return found


def describe(w: dict[str, Any]) -> str:
    """``2097152 * 1024 = 2,147,483,648, past int32 (the kernel gets -2,147,483,648)``, or ``7 // 0``."""
    if "true" in w:
        return (
            f"{w['lhs']:,} {w['op']} {w['rhs']:,} = {w['true']:,}, past int32 "
            f"(the kernel gets {w['wrapped']:,})"
        )
    return f"{w['lhs']:,} {w['op']} {w['rhs']:,}"


def lane_text(lane: list[int]) -> str:
    return f"lane {lane[0]}" if len(lane) == 1 else f"lane {lane}" if lane else "its scalar"


def program_text(program: tuple[int, int, int] | None) -> str:
    if program is None:
        return "a program"
    return f"program ({program[0]:,}, {program[1]:,}, {program[2]:,})"


def arguments_text(scalars: dict[str, Any]) -> str:
    shown = [
        f"{k}={v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{k}={v}"
        for k, v in scalars.items()
    ]
    return ", ".join(shown)


class IntChecks:
    """Integer faults of the running launch, one finding per line (see the module's text)."""

    def __init__(self, findings: Findings, overflow: bool = True, zero: bool = True) -> None:
        self.findings = findings
        self.overflow, self.zero = overflow, zero
        self.launch: LaunchInfo | None = None
        self.told: set[tuple[str, int]] = set()  # (kind, site) made into a message this launch

    def begin(self, launch: LaunchInfo) -> None:
        self.launch = launch
        self.told = set()

    def fault(
        self, fault: IntFault, scalars: dict[str, Any], seq: int, program: tuple[int, int, int] | None
    ) -> None:
        launch = self.launch
        wrap = fault.kind == "wrap"
        if launch is None or not (self.overflow if wrap else self.zero):
            return
        kind = "int-overflow" if wrap else "div-by-zero"
        key = (kind, fault.site)
        if key in self.told:  # the message is made once a launch; later programs only count
            self.findings.add(kind, launch, fault.site, "", seq=seq, program=program)
            return
        self.told.add(key)
        w = witness(fault)
        args = arguments_text(scalars)
        where = f"in {program_text(program)}, {lane_text(w['lane'])}"
        if wrap:
            message = (
                f"int32 {fault.op} wraps: {describe(w)} {where}; {w['lanes']} lane(s) wrap"
                + (f" (arguments {args})" if args else "")
                + f"; {INT64_HINT}"
            )
        else:
            message = (
                f"integer {fault.op} by zero: {describe(w)} {where}; {w['lanes']} lane(s) divide by zero"
                + (f" (arguments {args})" if args else "")
                + "; the result is undefined on a GPU"
            )
        details = dict(w, arguments={k: v for k, v in scalars.items()})
        self.findings.add(kind, launch, fault.site, message, seq=seq, program=program, details=details)
