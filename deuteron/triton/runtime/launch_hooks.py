"""Triton's launch hook chains (``knobs.runtime``), for Proton's hook manager.

Triton (3.6 and later) calls ``knobs.runtime.launch_enter_hook`` just before each compiled
launch with a ``LazyDict`` holding the kernel's name and its ``launch_metadata`` (flops, bytes,
...), and ``launch_exit_hook`` just after; ``kernel_load_end_hook`` (and, from 3.9,
``kernel_unload_hook``) when a kernel's module is loaded and unloaded. The hook manager's entry
points go into these chains as one patch group (``launch_hook``), so they are added once and taken
out in reverse. Under the interpreter, :func:`call_enter`/:func:`call_exit` call the same chains
around each interpreted launch with the same ``LazyDict``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deuteron.process.patches import MANAGER, CallbackPatch, Patch
from deuteron.triton import unsupported

GROUP = "launch_hook"
_CHAINS = ("launch_enter_hook", "launch_exit_hook", "kernel_load_end_hook", "kernel_unload_hook")


def _runtime() -> Any:
    try:
        from triton import knobs
    except ImportError:
        raise unsupported("knobs.runtime (launch hooks need triton 3.6 or newer)") from None
    runtime = getattr(knobs, "runtime", None)
    if not hasattr(getattr(runtime, "launch_enter_hook", None), "add"):
        raise unsupported("knobs.runtime.launch_enter_hook (launch hooks need triton 3.6 or newer)")
    return runtime


def install_heads(
    enter: Callable[[Any], None],
    leave: Callable[[Any], None],
    load_end: Callable[..., None],
    unload: Callable[..., None],
) -> None:
    """Put the four entry points into Triton's chains (once; a second call does nothing)."""
    if MANAGER.holds(GROUP):
        return
    runtime = _runtime()

    def make() -> list[Patch]:
        patches: list[Patch] = []
        for attr, func in zip(_CHAINS, (enter, leave, load_end, unload), strict=True):
            chain = getattr(runtime, attr, None)
            if chain is not None and hasattr(chain, "add"):  # kernel_unload_hook is new in 3.9
                patches.append(CallbackPatch(_bind(chain.add, func), _bind(chain.remove, func)))
        return patches

    MANAGER.acquire(GROUP, make)


def _bind(method: Callable[[Any], None], func: Any) -> Callable[[], None]:
    return lambda: method(func)


def remove_heads() -> None:
    if MANAGER.holds(GROUP):
        MANAGER.release(GROUP)


def chains_in_use() -> tuple[Any, Any] | None:
    """Triton's enter and exit chains when something is in them (None otherwise, or without
    Triton's knobs): what an interpreted launch must call."""
    try:
        from triton import knobs
    except ImportError:
        return None
    runtime = getattr(knobs, "runtime", None)
    enter = getattr(runtime, "launch_enter_hook", None)
    if enter is None or not getattr(enter, "calls", None):
        return None
    return enter, getattr(runtime, "launch_exit_hook", None)
