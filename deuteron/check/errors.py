"""The error ``deuteron check`` raises for bad input (an unknown check, a bad option value)."""

from __future__ import annotations

from deuteron.model.errors import DeuteronError


class CheckError(DeuteronError, ValueError):
    """Bad input to the sanitizer; the message says which and what is allowed."""
