"""The search itself, over an ordered list of versions: index 0 is known good, the last known bad.

Pure: it asks ``is_bad(i)`` and keeps the two indices between which the change lies, so it is
tested without a repository, a Triton or a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable


def steps_left(low: int, high: int) -> int:
    """How many more verdicts a bisection between ``low`` (good) and ``high`` (bad) needs at most."""
    return math.ceil(math.log2(high - low)) if high - low > 1 else 0


def bisect(count: int, is_bad: Callable[[int, int, int], bool]) -> tuple[int, int]:
    """The last good and the first bad index of ``count`` versions (0 good, ``count - 1`` bad).

    ``is_bad(i, step, steps)`` judges version ``i`` as the ``step``-th verdict of about ``steps``
    (the estimate shrinks or grows as the search goes, so progress can say where it stands).
    """
    low, high = 0, count - 1
    step = 0
    while high - low > 1:
        step += 1
        mid = (low + high) // 2
        if is_bad(mid, step, step - 1 + steps_left(low, high)):
            high = mid
        else:
            low = mid
    return low, high
