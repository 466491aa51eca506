"""The library entry of ``deuteron learn``, as the command line and a notebook call it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO

from deuteron.learn.catalog import Exercise
from deuteron.learn.exercises import find
from deuteron.learn.grade import DEFAULT_TIMEOUT, Grade, grade
from deuteron.learn.progress import Progress
from deuteron.learn.text import verdict


def check(
    exercise: int | str | Exercise,
    path: str | Path | None,
    *,
    record: str | Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    keep_progress: bool = True,
    file: IO[str] | None = None,
) -> Grade:
    """Check the kernel in ``path`` for ``exercise`` (a number, a name or a spec; ``path`` None
    checks the reference solution), print the verdict to ``file`` (stdout by default) and, for a
    learner's file, note it in the progress file.

    ``deuteron.learn.check(3, "learn/03_outer_add.py").passed``
    """
    ex = exercise if isinstance(exercise, Exercise) else find(exercise)
    result = grade(ex, path, record=record, timeout=timeout)
    out = sys.stdout if file is None else file
    print(verdict(result), file=out)
    for note in result.notes:
        print(f"deuteron learn: {note}", file=out)
    if keep_progress and path is not None:
        progress = Progress.load()
        progress.record_check(ex.name, result.passed)
        warning = progress.take_warning()  # the file's trouble and the save's, as one line
        if warning:
            print(f"deuteron learn: warning: {warning}", file=sys.stderr)
    return result
