"""Proton's ``hooks`` package: the hook protocol, its manager and the launch hook."""

from deuteron.collect.hook_manager import Hook, HookManager
from deuteron.collect.instrumentation_hook import InstrumentationHook
from deuteron.collect.launch_hook import LaunchHook

__all__ = ["Hook", "HookManager", "InstrumentationHook", "LaunchHook"]
