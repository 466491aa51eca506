"""Proton's ``flags`` module: the process-wide profiler flags, from :mod:`deuteron.collect.flags`."""

from deuteron.collect.flags import (
    ProfilerFlags,
    flags,
)

__all__ = [
    "ProfilerFlags",
    "flags",
]
