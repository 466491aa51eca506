"""The error ``deuteron repro`` raises for bad input (a kernel or launch not recorded, a missing file)."""

from __future__ import annotations

from deuteron.model.errors import DeuteronError


class ReproError(DeuteronError, ValueError):
    """A reproducer cannot be written from what was given; the message says why and what to do."""
