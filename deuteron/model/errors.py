"""The one error base every user-facing Deuteron error derives from.

It lives in ``model/`` (which imports nothing else of ours) so that every layer, the model
included, can raise it; ``deuteron.errors`` re-exports it for users. The command line maps any
``DeuteronError`` to one line, ``deuteron: error: <message>``, and exit code 2: so the message
must name the cause and the way out in one sentence, never a traceback.
"""

from __future__ import annotations


class DeuteronError(Exception):
    """Bad input or a setting that cannot work here; ``str(error)`` is the one line a user reads."""


class MetricError(DeuteronError, ValueError):
    """A metric name or value the user gave cannot be used."""
