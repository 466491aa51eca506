"""Proton's ``state`` module: ``state``, ``enter_state``/``exit_state`` and ``metadata_state``,
from the engine's state source (:mod:`deuteron.collect.context.state`)."""

from deuteron.collect.context.state import (
    COMPUTE_METADATA_SCOPE_NAME,
    COMPUTE_METADATA_SCOPE_PREFIX,
    enter_state,
    exit_state,
    get_metadata_state_name,
    metadata_state,
    state,
)

__all__ = [
    "COMPUTE_METADATA_SCOPE_NAME",
    "COMPUTE_METADATA_SCOPE_PREFIX",
    "enter_state",
    "exit_state",
    "get_metadata_state_name",
    "metadata_state",
    "state",
]
