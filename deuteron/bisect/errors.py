"""Bisect's one error: bad input (a ref that is not there, good equal to bad, good already bad, bad
not bad), said in one line by the command line."""

from __future__ import annotations

from deuteron.model.errors import DeuteronError


class BisectError(DeuteronError):
    """A bisection that cannot start or go on; ``str(error)`` is the line the user reads."""
