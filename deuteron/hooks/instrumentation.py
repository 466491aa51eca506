"""Proton's ``hooks.instrumentation`` module: the instrumentation hook, from
:mod:`deuteron.collect.instrumentation_hook`."""

from deuteron.collect.instrumentation_hook import (
    InstrumentationHook,
)

__all__ = [
    "InstrumentationHook",
]
