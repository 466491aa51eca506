"""NVTX ranges as scopes: ``torch.cuda.nvtx.range_push("step")`` ... ``range_pop()`` (and
``torch.cuda.nvtx.range``) open and close a scope of that name in every recording session, as
Proton turns NVTX ranges into frames. The ranges still reach NVTX (Nsight sees them as before).

On unless Proton's switch says otherwise (``TRITON_ENABLE_NVTX=0`` or
``triton.knobs.proton.enable_nvtx = False``), read when a session starts. torch is patched only
once it is imported: a profile of a program without torch never imports it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from deuteron.process.patches import MANAGER, AttributePatch, Patch, after_import
from deuteron.triton import proton_knob

GROUP = "nvtx"
OFF = ("0", "false", "no", "off")


class _State:
    """The module's mutable state, one object so the patched functions read it at call time.

    ``users`` counts sessions (patched for the first, restored after the last); ``waiting`` undoes
    the import hook while torch is not imported yet; ``tls`` keeps, per open range on each thread,
    whether it opened a scope, so a range pushed before profiling pops without closing one of ours.
    """

    def __init__(self) -> None:
        self.users = 0
        self.enter: Callable[..., Any] | None = None
        self.leave: Callable[..., Any] | None = None
        self.waiting: Callable[[], None] | None = None
        self.tls = threading.local()  # per thread: for each open range, whether it opened a scope


_s = _State()


def enabled() -> bool:
    knob = proton_knob("enable_nvtx")
    if knob is not None:
        return bool(knob)
    return os.environ.get("TRITON_ENABLE_NVTX", "1").strip().lower() not in OFF


def _patches() -> list[Patch]:
    nvtx = sys.modules["torch.cuda.nvtx"]
    push, pop = nvtx.range_push, nvtx.range_pop

    def range_push(msg: str) -> Any:
        result = push(msg)
        opened = _s.enter(str(msg)) is not None if _s.enter is not None else False
        _s.tls.__dict__.setdefault("open", []).append(opened)
        return result

    def range_pop() -> Any:
        stack = _s.tls.__dict__.get("open")
        if stack and stack.pop() and _s.leave is not None:
            _s.leave()
        return pop()

    return [AttributePatch(nvtx, "range_push", range_push), AttributePatch(nvtx, "range_pop", range_pop)]


def _on_import() -> None:
    _s.waiting = None
    if _s.users:
        MANAGER.acquire(GROUP, _patches)


def acquire(enter: Callable[[str], Any], leave: Callable[[], Any]) -> None:
    """One more session that wants NVTX ranges as scopes (``enter``/``leave``: open and close one)."""
    _s.enter, _s.leave = enter, leave
    _s.users += 1
    if _s.users > 1:
        return
    if "torch.cuda.nvtx" in sys.modules:
        MANAGER.acquire(GROUP, _patches)
    elif "torch" in sys.modules:  # torch imports torch.cuda.nvtx itself; it may be lazy elsewhere
        import torch.cuda.nvtx  # noqa: F401

        MANAGER.acquire(GROUP, _patches)
    else:
        _s.waiting = after_import("torch.cuda.nvtx", _on_import)


def release() -> None:
    if _s.users == 0:
        return
    _s.users -= 1
    if _s.users:
        return
    if _s.waiting is not None:
        _s.waiting()
        _s.waiting = None
    MANAGER.release(GROUP)
