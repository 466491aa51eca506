"""Another CUPTI client started while Deuteron holds CUPTI: said in one line, never a silent empty profile.

CUPTI serves one subscriber per process (PyTorch issue 117935). Deuteron started second is refused
by CUPTI, and says so (:class:`~deuteron.collect.backends.cupti.library.CuptiConflictError`,
naming the other client and what to do). Started first, it keeps CUPTI, and a ``torch.profiler``
the program opens later records no GPU event at all, without a word from torch. So while the CUPTI
backend records, ``torch.profiler``'s start (``_KinetoProfile.start_trace``, what ``profile()``,
``__enter__`` and ``start()`` all reach) is watched: one that asks for CUDA activity gets one line
on stderr, once, saying why its GPU events will be missing and where they are.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from deuteron.process.terminal import say

MESSAGE = (
    "deuteron: torch.profiler started while Deuteron's cupti backend holds CUPTI (one CUPTI client per "
    "process): torch.profiler's GPU events will be empty; Deuteron's profile has every kernel (run "
    "torch.profiler without deuteron run, or deuteron run -b interpreter, to have them there)"
)
MODULE = "torch.profiler.profiler"

_holding: list[Callable[[], bool]] = []  # whether the cupti backend records now
_told: list[bool] = []


def watch(holding: Callable[[], bool]) -> None:
    """Watch torch.profiler's starts from now on (once per process; ``holding`` says whether CUPTI
    is Deuteron's at the time of a start)."""
    if _holding:
        _holding[0] = holding
        return
    _holding.append(holding)
    if MODULE in sys.modules:
        _wrap(sys.modules[MODULE])
        return
    from deuteron.process.patches import after_import

    after_import(MODULE, lambda: _wrap(sys.modules[MODULE]))


def _wrap(module: Any) -> None:
    kineto = getattr(module, "_KinetoProfile", None)
    start = getattr(kineto, "start_trace", None)
    if start is None or getattr(start, "_deuteron", False):
        return

    def start_trace(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _told and _holding and _holding[0]() and _asks_for_cuda(self):
            _told.append(True)
            say(MESSAGE)
        return start(self, *args, **kwargs)

    start_trace._deuteron = True  # type: ignore[attr-defined]
    kineto.start_trace = start_trace  # type: ignore[union-attr]


def _asks_for_cuda(profiler: Any) -> bool:
    activities = getattr(profiler, "activities", None) or ()
    return any(getattr(a, "name", str(a)).upper() == "CUDA" for a in activities)
