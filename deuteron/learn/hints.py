"""Hints: the exercise's own, shown one more at each ``deuteron learn hint``, and the ones that
come from the checker's findings (the exercise's word on that kind of finding, else a general
one)."""

from __future__ import annotations

from deuteron.learn.catalog import Exercise
from deuteron.model.finding import Finding

GENERAL = {
    "out-of-bounds": "A lane reached outside its tensor: the example names the program and the element. "
    "Which mask should have switched that lane off?",
    "race": "Two programs touch the same element and one of them writes: give each element one owner, "
    "or make the update one atomic (tl.atomic_add, ...).",
    "lock": "A program waits on a lock nobody will release: release every lock you take "
    "(tl.atomic_xchg(lock, 0)).",
    "assert": "A tl.device_assert failed: the example shows the program and the lanes.",
    "outside-view": "A lane is inside the tensor's memory but outside its view: use the strides given, "
    "and mask every dimension.",
    "nan": "An op made NaN or Inf from finite numbers (0 / 0, inf - inf, log of a negative): look at "
    "what the masked-off lanes hold.",
    "store-coverage": "Some elements of an output were never written: does every program store its "
    "whole block, and does the grid cover the output?",
}


def for_finding(exercise: Exercise, finding: Finding) -> str:
    return exercise.finding_hints.get(finding.kind) or GENERAL.get(finding.kind, "")


def next_hints(exercise: Exercise, seen: int, all_hints: bool = False) -> tuple[list[str], int]:
    """The hints to show now and how many are then seen: those seen before and one more (all of
    them with ``all_hints``), numbered from 1."""
    total = len(exercise.hints)
    upto = total if all_hints else min(total, seen + 1)
    return [f"hint {i + 1} of {total}: {exercise.hints[i]}" for i in range(upto)], upto
