"""``deuteron check --at-size NAME=VALUE`` / ``--scale K``: the same kernels at argument sizes too
large to run on the CPU, for int32 index arithmetic that wraps there.

After each checked launch, the kernel is run again with its size arguments replaced (NAME set to
VALUE; with ``--scale``, every integer argument above 1 multiplied by K) in the grid those sizes
give, but only a few of that grid's programs and without touching memory
(:mod:`deuteron.triton.interpreter.probing`: loads read zeros, stores are dropped, so the real
buffers' sizes do not matter). Each int32 ``+``, ``-``, ``*`` whose true result leaves int32 is
recorded (:mod:`deuteron.triton.interpreter.integers`). Index arithmetic is monotone in the program
id and in the sizes in nearly every kernel, so:

- the programs run are the corners of the scaled grid (first and last along each axis): where an
  offset is largest or smallest;
- a corner that wraps is narrowed, axis by axis, by bisection to the first program that wraps
  (the witness: that program, its first wrapping lane, the operands there);
- the size at which that op first wraps is found by bisection between the launch's own value and
  VALUE (each step: the corners of the grid at that size), and checked at both ends.

Every finding is a real execution of the kernel's own code at those argument values (no
approximation of the arithmetic); what bisection assumes is monotonicity, and a kernel whose index
arithmetic is not monotone (a swizzled grid) can wrap in a program between corners that is
not run: then nothing is said (no false alarm, a possible miss).

The grid at the new size: a callable grid (``lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)``)
is called with the new arguments; a tuple grid (or a callable that ignores its argument) is
rescaled: a dimension equal to a scaled argument, or to ``cdiv(argument, C)`` for a constexpr ``C``
of the launch, is recomputed from the new value; other dimensions are kept.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from functools import partial
from itertools import product
from typing import Any

from deuteron.check.errors import CheckError
from deuteron.check.findings import Findings
from deuteron.check.int_arith import INT64_HINT, arguments_text, describe, lane_text, program_text, witness
from deuteron.model.access import LaunchInfo
from deuteron.triton.interpreter import probing
from deuteron.triton.interpreter.integers import IntFault

BUDGET_S = 10.0  # seconds of probing per launch, at most
_SUFFIXES = {
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
    "ki": 2**10,
    "mi": 2**20,
    "gi": 2**30,
    "ti": 2**40,
}
_MAX = 2**63 - 1

Grid = tuple[int, int, int]


class ProbeBudget(Exception):  # noqa: N818 - a stop signal
    """The probe of one launch ran past its time budget (a loop over a scaled size)."""


def parse_value(text: str, what: str) -> int:
    """``3e9``, ``3_000_000_000``, ``2**31``, ``2^31``, ``4G``, ``2Gi``: a positive integer below 2**63."""
    t = text.strip().replace("_", "").replace(",", "")
    value: float | int | None = None
    power = re.fullmatch(r"(\d+)\s*(?:\*\*|\^)\s*(\d+)", t)
    suffix = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kKmMgGtT]i?)", t)
    if power:
        base, exp = int(power.group(1)), int(power.group(2))
        value = base**exp if exp < 80 else _MAX + 1
    elif suffix:
        value = float(suffix.group(1)) * _SUFFIXES[suffix.group(2).lower()]
    else:
        try:
            value = int(t)
        except ValueError:
            try:
                value = float(t)
            except ValueError:
                value = None
    if value is None or (isinstance(value, float) and (not math.isfinite(value) or value != int(value))):
        raise CheckError(f"{what}: {text!r} is not a whole number (e.g. 3e9, 3_000_000_000, 2**31, 4G)")
    value = int(value)
    if not 1 <= value <= _MAX:
        raise CheckError(f"{what}: {text!r} is out of range (1 to 2**63-1)")
    return value


def parse_sizes(specs: list[str] | None) -> dict[str, int]:
    """``--at-size`` values: ``NAME=VALUE`` each (also comma-separated in one)."""
    sizes: dict[str, int] = {}
    for spec in specs or []:
        for part in (p for p in spec.split(";") if p.strip()):
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or not name.isidentifier():
                raise CheckError(
                    f"--at-size: {part.strip()!r} is not NAME=VALUE "
                    "(a kernel argument's name, e.g. n_elements=3e9)"
                )
            sizes[name] = parse_value(value, f"--at-size {name}")
    return sizes


def parse_scale(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        scale = float(text)
    except ValueError:
        raise CheckError(f"--scale: {text!r} is not a number (e.g. 1000)") from None
    if not math.isfinite(scale) or scale <= 1:
        raise CheckError(f"--scale: {text!r} must be a number above 1")
    return scale


class _Probe:
    """What one probe run saw: the first wrap at each site (its program and witness)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.hits: dict[int, tuple[Grid, dict[str, Any]]] = {}
        self.pid: Grid = (0, 0, 0)
        self.ops = 0

    def program(self, pid: Grid) -> None:
        self.pid = pid

    def tick(self) -> None:
        self.ops += 1
        if not self.ops & 1023 and time.monotonic() > self.deadline:
            raise ProbeBudget

    def integer_fault(self, fault: IntFault) -> None:
        # Divisions are not judged here: loads read zeros while probing, so a zero divisor may
        # come from memory that holds something else
        if fault.kind == "wrap" and fault.site not in self.hits:
            self.hits[fault.site] = (self.pid, witness(fault))


def _dims(g: Any) -> Grid | None:
    if isinstance(g, int):
        g = (g,)
    if not isinstance(g, (tuple, list)) or not 1 <= len(g) <= 3:
        return None
    dims = [int(d) for d in g] + [1] * (3 - len(g))
    return (dims[0], dims[1], dims[2])


def corners(grid: Grid) -> list[Grid]:
    """The first and last program along each axis; the last program first (where offsets peak)."""
    axes = [sorted({0, max(d - 1, 0)}, reverse=True) for d in grid]
    return [(x, y, z) for x, y, z in product(*axes)]


class AtSize:
    """The ``--at-size``/``--scale`` probe of every checked launch (see the module's text)."""

    def __init__(self, findings: Findings, sizes: dict[str, int], scale: float | None = None) -> None:
        self.findings = findings
        self.sizes = sizes
        self.scale = scale
        self.matched: set[str] = set()
        self.probed = 0
        self.notes: list[str] = []
        self._done: set[Any] = set()

    def summary(self) -> list[str]:
        """Notes for the report: names that matched no kernel argument, probes that stopped early."""
        notes = list(self.notes)
        missing = sorted(set(self.sizes) - self.matched)
        if missing:
            notes.append(f"--at-size: no launched kernel has an integer argument named {', '.join(missing)}")
        return notes

    def after_launch(
        self, launch: LaunchInfo, fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]
    ) -> None:
        try:
            with probing.Runner(fn) as runner:
                self._probe(launch, runner, args, grid, kwargs)
        except ProbeBudget:
            self._note(
                f"--at-size: {launch.kernel}: probing stopped after {BUDGET_S:g} s "
                "(a loop over a scaled size?)"
            )
        except Exception as exc:  # the kernel at the new size may fail in ways the real one does not
            self._note(
                f"--at-size: {launch.kernel}: could not run at the new size ({type(exc).__name__}: {exc})"
            )

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def _targets(self, bound: dict[str, Any], constexprs: set[str]) -> dict[str, tuple[int, int]]:
        targets: dict[str, tuple[int, int]] = {}
        for name, value in bound.items():
            if name in constexprs or isinstance(value, bool) or not isinstance(value, int):
                continue
            if name in self.sizes:
                self.matched.add(name)
                targets[name] = (value, self.sizes[name])
            elif self.scale is not None and value > 1:
                targets[name] = (value, min(_MAX, round(value * self.scale)))
        return {n: t for n, t in targets.items() if t[0] != t[1]}

    def _probe(
        self,
        launch: LaunchInfo,
        runner: probing.Runner,
        args: tuple[Any, ...],
        grid: Any,
        kwargs: dict[str, Any],
    ) -> None:
        bound = probing.bound_arguments(runner.fn, args, kwargs)
        constexprs = runner.constexprs
        targets = self._targets(bound, constexprs)
        if not targets:
            return
        fixed = tuple(sorted((k, repr(v)) for k, v in bound.items() if k in constexprs or k in targets))
        key = (launch.kernel, fixed, launch.grid, tuple(sorted(targets.items())))
        if key in self._done:
            return
        self._done.add(key)
        self.probed += 1
        deadline = time.monotonic() + BUDGET_S
        driver = max(targets, key=lambda n: (targets[n][1] / max(targets[n][0], 1), n))
        d_old, d_new = targets[driver]
        if d_new < d_old:  # smaller sizes: no threshold to look for upwards
            return
        factors = sorted(
            {
                v
                for k, v in bound.items()
                if k in constexprs and isinstance(v, int) and not isinstance(v, bool) and v > 1
            }
        )

        def values(v: int) -> dict[str, int]:
            f = (v - d_old) / (d_new - d_old)
            return {n: v if n == driver else round(o + (w - o) * f) for n, (o, w) in targets.items()}

        sizes = {
            k: v
            for k, v in bound.items()
            if k not in constexprs and isinstance(v, int) and not isinstance(v, bool)
        }

        def explains(d: int, value: int) -> int | None:
            """The divisor (1 or a constexpr) for which ``d`` is ``cdiv(value, divisor)``, if any."""
            return next((c for c in (1, *factors) if d == -(-value // c)), None)

        def rescaled(vals: dict[str, int]) -> Grid:
            out = []
            for d in launch.grid:
                new = {d}
                if d > 1:
                    # every integer argument this dimension could come from: recomputed only when
                    # all of them are scaled and agree (else it is kept: a callable grid says better)
                    found = [(n, c) for n, v in sizes.items() if (c := explains(d, v)) is not None]
                    if found and all(n in vals for n, _ in found):
                        new = {-(-vals[n] // c) for n, c in found}
                out.append(new.pop() if len(new) == 1 else d)
            return (out[0], out[1], out[2])

        def grid_at(vals: dict[str, int]) -> Grid:
            if callable(grid):
                try:
                    new, real = _dims(grid({**bound, **vals})), _dims(grid(dict(bound)))
                except Exception:
                    new = real = None
                if new is not None and new != real:
                    return new
            return rescaled(vals)

        def run(
            vals: dict[str, int], programs: list[Grid], g: Grid
        ) -> dict[int, tuple[Grid, dict[str, Any]]]:
            if time.monotonic() > deadline:
                raise ProbeBudget
            hits: dict[int, tuple[Grid, dict[str, Any]]] = {}
            # each program gets a share of what is left: a long loop in one corner leaves time for the others
            for i, pid in enumerate(programs):
                left = deadline - time.monotonic()
                probe = _Probe(time.monotonic() + left / (len(programs) - i))
                try:
                    runner.run({**bound, **vals}, g, [pid], probe)
                except ProbeBudget:
                    stopped.append(True)  # what it saw before its time ran out still stands
                for site, hit in probe.hits.items():
                    hits.setdefault(site, hit)
            return hits

        stopped: list[bool] = []

        def at_corner(vals: dict[str, int], corner: Grid, seen_in: Grid) -> dict[int, Any]:
            """Run the corner of the grid at ``vals`` that is where ``corner`` is in ``seen_in``."""
            g = grid_at(vals)
            pid = [0 if c == 0 or s <= 1 else d - 1 for c, s, d in zip(corner, seen_in, g, strict=True)]
            return run(vals, [(pid[0], pid[1], pid[2])], g)

        hi_vals = values(d_new)
        hi_grid = grid_at(hi_vals)
        hits = run(hi_vals, corners(hi_grid), hi_grid)
        if not hits:
            return
        lo_vals = values(d_old)
        lo_grid = grid_at(lo_vals)
        try:
            at_launch = run(lo_vals, corners(lo_grid), lo_grid)
        except ProbeBudget:
            at_launch, stopped[:] = {}, [True]
        for site, (corner, _) in sorted(hits.items()):
            try:
                program = self._first_program(site, corner, lambda pid: run(hi_vals, [pid], hi_grid))
                first = run(hi_vals, [program], hi_grid).get(site)
            except ProbeBudget:
                first = None
            if first is None:  # not monotone after all (or no time left): keep the corner's witness
                program, w = hits[site]
            else:
                w = first[1]
            if stopped or time.monotonic() > deadline:
                since = f"(probing stopped after {BUDGET_S:g} s: where it starts to wrap was not looked for)"
            elif site in at_launch:
                since = "it wraps at the launch's own sizes already"
            else:
                try:
                    v = self._threshold(
                        site, d_old, d_new, partial(lambda c, v: at_corner(values(v), c, hi_grid), corner)
                    )
                    if len(targets) == 1:
                        since = "it first wraps when " + self._sizes_text(values(v), driver, first=True)
                    else:
                        since = f"it first wraps at about ×{v / d_old:,.4g} ({self._sizes_text(values(v))})"
                except ProbeBudget:
                    stopped.append(True)
                if stopped:  # a run cut short may have missed the wrap: no threshold rather than a wrong one
                    since = "(the size where it starts to wrap was not found in time)"
            scalars = {k: v for k, v in bound.items() if isinstance(v, int) and not hasattr(v, "data_ptr")}
            scalars.update(hi_vals)
            message = (
                f"at {self._sizes_text(hi_vals)} (grid {hi_grid[0]:,}×{hi_grid[1]:,}×{hi_grid[2]:,}): "
                f"int32 {w['op']} wraps: {describe(w)} in {program_text(program)}, {lane_text(w['lane'])} "
                f"(arguments {arguments_text(scalars)}); {since}; {INT64_HINT}"
            )
            details = dict(w, arguments=scalars, at_size=dict(hi_vals), grid=list(hi_grid), since=since)
            self.findings.add("int-overflow", launch, site, message, program=program, details=details)

    @staticmethod
    def _sizes_text(vals: dict[str, int], only: str | None = None, first: bool = False) -> str:
        if only is not None:
            return f"{only} ≥ {vals[only]:,}" if first else f"{only}={vals[only]:,}"
        return ", ".join(f"{k}={v:,}" for k, v in vals.items())

    @staticmethod
    def _first_program(site: int, corner: Grid, hits_of: Callable[[Grid], dict[int, Any]]) -> Grid:
        """The first program along each axis (bisection from 0 to the corner) that wraps at ``site``."""
        pid = list(corner)
        for axis in range(3):
            hi = pid[axis]
            if hi == 0:
                continue
            probe = list(pid)
            probe[axis] = 0
            if site in hits_of((probe[0], probe[1], probe[2])):
                pid[axis] = 0
                continue
            lo = 0
            while hi - lo > 1:
                mid = (lo + hi) // 2
                probe[axis] = mid
                if site in hits_of((probe[0], probe[1], probe[2])):
                    hi = mid
                else:
                    lo = mid
            pid[axis] = hi
        return (pid[0], pid[1], pid[2])

    @staticmethod
    def _threshold(site: int, lo: int, hi: int, hits_at: Callable[[int], dict[int, Any]]) -> int:
        """The least driver value in (lo, hi] at which ``site`` wraps (it does at hi, not at lo)."""
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if site in hits_at(mid):
                hi = mid
            else:
                lo = mid
        return hi
