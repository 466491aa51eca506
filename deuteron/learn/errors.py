"""The one error of ``deuteron learn``: bad input a learner can fix, said in one line."""

from __future__ import annotations

from deuteron.model.errors import DeuteronError


class LearnError(DeuteronError):
    """An unknown exercise, a file that is missing or does not load, a starter that would be
    overwritten: ``str(error)`` is the one line the learner reads (the CLI exits with 2)."""
