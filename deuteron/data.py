"""Proton's ``data`` module: a session's profile while it runs, phase by phase, from
:mod:`deuteron.collect.phases`."""

from deuteron.collect.phases import (
    advance_phase,
    clear,
    get,
    get_msgpack,
    is_phase_complete,
)

__all__ = [
    "advance_phase",
    "clear",
    "get",
    "get_msgpack",
    "is_phase_complete",
]
