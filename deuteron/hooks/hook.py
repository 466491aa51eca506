"""Proton's ``hooks.hook`` module: the hook protocol and the manager that follows the sessions, from
:mod:`deuteron.collect.hook_manager`."""

from deuteron.collect.hook_manager import (
    Hook,
    HookManager,
)

__all__ = [
    "Hook",
    "HookManager",
]
