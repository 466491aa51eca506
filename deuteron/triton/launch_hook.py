"""Triton's launch hook, for ``hook="triton"`` on a GPU.

Triton (3.6 and later) calls ``knobs.runtime.launch_enter_hook`` before each launch with a
``LazyDict`` holding the kernel's name and whatever its ``launch_metadata`` function returns
(flops, bytes, ...). The hook runs on the launching thread just before the launch API, so the
CUPTI shim attaches the id handed to it to that thread's next launch. The hook is added to and
removed from Triton's chain through the hook manager (group ``launch_hook``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import unsupported
from .hooks import MANAGER, CallbackPatch

GROUP = "launch_hook"


def _chain() -> Any:
    try:
        from triton import knobs
    except ImportError:
        raise unsupported(
            "knobs.runtime.launch_enter_hook (hook='triton' needs triton 3.6 or newer)"
        ) from None
    chain = getattr(getattr(knobs, "runtime", None), "launch_enter_hook", None)
    if chain is None or not hasattr(chain, "add"):
        raise unsupported("knobs.runtime.launch_enter_hook (hook='triton' needs triton 3.6 or newer)")
    return chain


def install(on_launch: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
    """Call ``on_launch(metadata)`` before each Triton launch; returns the uninstaller."""

    def enter(lazy: Any) -> None:
        data = lazy.get() if hasattr(lazy, "get") else lazy
        on_launch(data)

    chain = _chain()
    MANAGER.acquire(GROUP, lambda: [CallbackPatch(lambda: chain.add(enter), lambda: chain.remove(enter))])
    return lambda: MANAGER.release(GROUP)
