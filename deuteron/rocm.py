"""Proton's ``configure_runtime``: which ROCm runtime to load before the profiler's library.

Proton preloads one coherent ROCm runtime (TheRock's) so its AMD backends and PyTorch agree on
HSA. Deuteron has no AMD backend and loads no profiling library, so there is nothing to choose;
like Proton when it finds no TheRock runtime, this returns None.
"""

from __future__ import annotations


def configure_runtime() -> None:
    return None
