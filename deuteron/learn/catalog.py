"""What an exercise is, and where its files are.

An exercise is a spec (a Python object: how its tensors are made, the torch reference, how the
kernel is launched) and four files of package data in ``data/NN_slug/``: ``exercise.json`` (the
kernel's name, the shapes it is checked on, the tolerances, the texts shown: title, launch,
reference, hints), ``statement.md``, ``starter.py.txt`` and ``solution.py.txt``.
The kernels are kept as ``.py.txt`` because they import ``triton``, which only
``deuteron/triton/`` may (``tests/test_layout.py`` reads every ``.py`` of the package); they are
loaded by path, never imported as modules of the package.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deuteron.learn.errors import LearnError

DATA = Path(__file__).resolve().parent / "data"

Tensors = dict[str, Any]  # name -> torch.Tensor: every tensor a launch takes, outputs included


@dataclass(frozen=True)
class Case:
    """One shape an exercise is checked on: its sizes by name (``n``, ``M``, ``N``, ...)."""

    sizes: tuple[tuple[str, int], ...]

    def __getitem__(self, name: str) -> int:
        return dict(self.sizes)[name]

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.sizes)


@dataclass(frozen=True)
class Exercise:
    """One exercise's spec. ``make`` builds every tensor of one case from a seeded generator
    (outputs filled with NaN where a missed element must show, zeros where the kernel
    accumulates); ``reference`` gives the expected outputs by name from the inputs, in torch;
    ``launch`` launches the learner's kernel on them (the learner writes the kernel, the checker
    picks the grid and the blocks, so every shape, non-multiples of the block included, is
    tried). ``buggy_starter``: the starter is a whole kernel with a bug that only the checker's
    finding reveals (its output is right in the interpreter); ``finding`` is that finding's kind."""

    number: int
    slug: str
    title: str
    kernel: str
    cases: tuple[Case, ...]
    make: Callable[[Case, Any], Tensors]
    reference: Callable[[Tensors], Tensors]
    launch: Callable[[Any, Tensors, Case], None]
    launch_text: str
    reference_text: str
    hints: tuple[str, ...]
    finding_hints: dict[str, str] = field(default_factory=dict)
    atol: float = 1e-5
    rtol: float = 1e-5
    buggy_starter: bool = False
    finding: str | None = None

    @property
    def name(self) -> str:
        """``03_outer_add``: the data folder's name and the starter file's stem."""
        return f"{self.number:02d}_{self.slug}"

    @property
    def folder(self) -> Path:
        return DATA / self.name

    def statement(self) -> str:
        return (self.folder / "statement.md").read_text(encoding="utf-8")

    def starter(self) -> str:
        return (self.folder / "starter.py.txt").read_text(encoding="utf-8")

    @property
    def solution_path(self) -> Path:
        return self.folder / "solution.py.txt"

    def signature(self) -> str:
        """The kernel's ``def`` line as the starter has it, on one line."""
        tree = ast.parse(self.starter())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == self.kernel:
                return f"{node.name}({ast.unparse(node.args)})"
        raise LearnError(f"exercise {self.name}: the starter has no function {self.kernel}")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def exercise(
    name: str,
    make: Callable[[Case, Any], Tensors],
    reference: Callable[[Tensors], Tensors],
    launch: Callable[[Any, Tensors, Case], None],
) -> Exercise:
    """The exercise of folder ``name`` (``04_row_sum``): its code as given, the rest read from the
    folder's ``exercise.json``, so that each spec is its three functions and nothing else (twelve
    specs of the same sixteen fields read alike; their data is the folder's, beside the statement)."""
    number, slug = name.split("_", 1)
    data = json.loads((DATA / name / "exercise.json").read_text(encoding="utf-8"))
    return Exercise(
        number=int(number),
        slug=slug,
        title=data["title"],
        kernel=data["kernel"],
        cases=tuple(Case(tuple(sizes.items())) for sizes in data["cases"]),
        make=make,
        reference=reference,
        launch=launch,
        launch_text=data["launch_text"],
        reference_text=data["reference_text"],
        hints=tuple(data["hints"]),
        finding_hints=dict(data.get("finding_hints", {})),
        atol=data.get("atol", Exercise.atol),
        rtol=data.get("rtol", Exercise.rtol),
        buggy_starter=data.get("buggy_starter", False),
        finding=data.get("finding"),
    )
