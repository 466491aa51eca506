"""Deuteron's own torch work, unseen by ``-c torch``: the copies ``--record-launches`` makes of a
launch's tensors are not the program's ops, and must not show in its profile as if they were.

``-c torch`` observes aten ops through torch's RecordFunction callbacks, and torch turns those
off for the calling thread with ``torch.autograd._enable_record_function(False)`` (thread-local;
torch's own tests use it the same way, and on again with ``True``). Never imports torch: a program
that has not imported it has no op to hide.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def unobserved() -> Iterator[None]:
    """No torch op run inside is seen by RecordFunction's observers (``-c torch``, torch's profiler)."""
    torch = sys.modules.get("torch")
    enable = getattr(getattr(torch, "autograd", None), "_enable_record_function", None)
    if enable is None:
        yield
        return
    enable(False)
    try:
        yield
    finally:
        enable(True)
