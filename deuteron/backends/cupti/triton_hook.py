"""Triton's launch hook, for ``hook="triton"`` under CUPTI: the one place that touches it.

Triton (3.6 and later) calls ``knobs.runtime.launch_enter_hook`` before each launch with a
``LazyDict`` holding the kernel's name and whatever its ``launch_metadata`` function returns
(flops, bytes, ...). The hook runs on the launching thread just before the launch API, so
the shim attaches the id handed to it here to that thread's next launch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SUPPORTED = "3.6 or newer (knobs.runtime.launch_enter_hook)"


class HookError(RuntimeError):
    """This Triton has no launch-hook chain Deuteron knows."""


def _chain() -> Any:
    try:
        from triton import knobs
    except ImportError as exc:
        raise HookError(f"hook='triton' needs triton {SUPPORTED}: {exc}") from None
    chain = getattr(getattr(knobs, "runtime", None), "launch_enter_hook", None)
    if chain is None or not hasattr(chain, "add"):
        raise HookError(f"hook='triton' needs triton {SUPPORTED}")
    return chain


def install(on_launch: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
    """Call ``on_launch(metadata)`` before each Triton launch; returns the uninstaller."""

    def enter(lazy: Any) -> None:
        data = lazy.get() if hasattr(lazy, "get") else lazy
        on_launch(data)

    chain = _chain()
    chain.add(enter)
    return lambda: chain.remove(enter)
