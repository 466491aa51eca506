"""Proton's ``hooks`` package: the hook protocol, its manager and the launch hook."""

from .hook import Hook, HookManager
from .instrumentation import InstrumentationHook
from .launch import LaunchHook

__all__ = ["Hook", "HookManager", "InstrumentationHook", "LaunchHook"]
