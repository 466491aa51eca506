"""Proton's process-wide flags (``deuteron.flags.flags``), kept true to what is happening.

``profiling_on``: some session is open; ``command_line``: the program runs under ``deuteron run``;
``instrumentation_on``: always False (Deuteron has no instrumentation mode yet). Unlike Proton,
``command_line`` does not make the program's own ``start()`` a no-op: under ``deuteron run`` a
program's own sessions are written where it says.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ProfilerFlags:
    """Proton's ``flags`` object, field for field: programs read and set these names directly.

    One instance per process (:data:`flags`); the session API and ``deuteron run`` keep it current.
    """

    profiling_on: bool = False
    instrumentation_on: bool = False
    command_line: bool = False


flags = ProfilerFlags()
