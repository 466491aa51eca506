"""The exercises of ``deuteron learn``, in order: from a vector add to a fused attention forward.

Each module holds a few specs (:class:`deuteron.learn.catalog.Exercise`), each its code: how its
tensors are made, the torch reference, the launch. Their data (kernel name, shapes, tolerances, the
texts shown), statements, starters and reference solutions are package data in
``deuteron/learn/data/NN_slug/``.
"""

from __future__ import annotations

from deuteron.learn.catalog import Exercise
from deuteron.learn.errors import LearnError
from deuteron.learn.exercises.basics import OUTER_ADD, TRANSPOSE, VECTOR_ADD
from deuteron.learn.exercises.dot import ATTENTION, MATMUL
from deuteron.learn.exercises.memory import BLUR_BOUNDS, COLUMN_SUM_RACE, GATHER, HISTOGRAM
from deuteron.learn.exercises.reductions import LAYER_NORM, ROW_SUM, SOFTMAX

EXERCISES: tuple[Exercise, ...] = (
    VECTOR_ADD,
    TRANSPOSE,
    OUTER_ADD,
    ROW_SUM,
    SOFTMAX,
    MATMUL,
    LAYER_NORM,
    GATHER,
    HISTOGRAM,
    COLUMN_SUM_RACE,
    BLUR_BOUNDS,
    ATTENTION,
)


def all_exercises() -> list[Exercise]:
    return list(EXERCISES)


def find(ref: str | int) -> Exercise:
    """An exercise by number (``3``, ``03``), name (``03_outer_add``) or slug (``outer_add``)."""
    exercises = all_exercises()
    text = str(ref).strip()
    for ex in exercises:
        if text.isdigit() and int(text) == ex.number or text in (ex.name, ex.slug):
            return ex
    return_range = f"{exercises[0].number} to {exercises[-1].number}"
    raise LearnError(
        f"no exercise {text!r}: give a number from {return_range} or a name ('deuteron learn' lists them)"
    )
