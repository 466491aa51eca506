"""Proton's ``hooks.launch`` module: the launch hook (``hook="triton"``), from
:mod:`deuteron.collect.launch_hook`."""

from deuteron.collect.launch_hook import (
    COMPUTE_METADATA_SCOPE_NAME,
    LaunchHook,
    LaunchListener,
    id,
    op_name,
)

__all__ = [
    "COMPUTE_METADATA_SCOPE_NAME",
    "LaunchHook",
    "LaunchListener",
    "id",
    "op_name",
]
