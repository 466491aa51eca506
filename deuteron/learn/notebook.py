"""``deuteron learn --notebook FILE``: every exercise as notebook cells (the statement, the starter
in a ``%%writefile`` cell the learner edits and runs, and a cell that checks it), written as
nbformat 4 JSON by hand: no Jupyter package is needed to write it, only to open it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deuteron.formats.files import atomic_write
from deuteron.learn.catalog import Exercise

FOLDER = "learn"  # where the %%writefile cells put the kernels, beside the notebook

SETUP = (
    "# Run this first. The kernels run in Triton's interpreter on the CPU, checked by deuteron.\n"
    "import os\n"
    "\n"
    "from deuteron.learn import check\n"
    "\n"
    f"os.makedirs({FOLDER!r}, exist_ok=True)"
)


def _lines(text: str) -> list[str]:
    """nbformat's multiline string: a list of lines, each but the last ending with a newline."""
    lines = text.splitlines(keepends=True)
    if lines and lines[-1].endswith("\n"):
        lines[-1] = lines[-1][:-1]
    return lines


def _markdown(text: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": _lines(text)}


def _code(text: str) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": _lines(text),
    }


def starter_file(ex: Exercise) -> str:
    return f"{FOLDER}/{ex.name}.py"


def notebook(exercises: list[Exercise]) -> dict[str, Any]:
    cells = [
        _markdown(
            "# Triton exercises, checked by deuteron\n\n"
            "Each exercise has a statement, a starter cell and a check cell. Edit the starter cell, "
            "run it (it writes the kernel to a file), then run the check cell: it runs your kernel in "
            "Triton's interpreter under `deuteron check` on several shapes, compares it with torch, and "
            "shows any finding (out of bounds, race, ...) with the exact program and lane. Progress is "
            "kept as with `deuteron learn`. Hints: `deuteron learn hint N` in a terminal."
        ),
        _code(SETUP),
    ]
    for ex in exercises:
        statement = ex.statement().rstrip()
        cells.append(
            _markdown(
                f"{statement.replace('# ', f'## {ex.number}. ', 1)}\n\n"
                f"The checker launches it as `{ex.launch_text}` and compares with torch: "
                f"`{ex.reference_text}`, on the shapes {'; '.join(c.label for c in ex.cases)}."
            )
        )
        starter = ex.starter().replace("THIS_FILE", starter_file(ex))
        cells.append(_code(f"%%writefile {starter_file(ex)}\n{starter.rstrip()}"))
        cells.append(_code(f"check({ex.number}, {starter_file(ex)!r});"))
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write_notebook(path: str | Path, exercises: list[Exercise]) -> Path:
    document = notebook(exercises)
    for i, cell in enumerate(document["cells"]):  # nbformat 4.5 wants an id on every cell
        cell["id"] = f"cell-{i:03d}"
    return atomic_write(path, json.dumps(document, indent=1) + "\n")
