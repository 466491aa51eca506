"""Proton's ``language`` module (``import deuteron.language as pl``): ``pl.scope`` and friends inside
kernels, from :mod:`deuteron.triton.language`. Triton 3.6 has no event calls (``allocate_event``,
``start_event``, ``end_event`` arrived later), so neither does this module."""

from deuteron.triton.language import (
    disable_semantic,
    enable_semantic,
    enter_scope,
    exit_scope,
    record,
    scope,
)

__all__ = ["disable_semantic", "enable_semantic", "enter_scope", "exit_scope", "record", "scope"]
