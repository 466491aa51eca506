"""Whether a version's output is the good version's: line by line, numbers within a tolerance,
durations ignored (a reproducer prints how long its launch took, different every run)."""

from __future__ import annotations

import math
import re

RTOL, ATOL = 1e-5, 1e-8
_DURATION = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\s?(?:ns|us|µs|ms|s)\b")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?:nan|inf)\b")


def _split(line: str) -> tuple[list[str], list[str]]:
    """The line's words between numbers, and its numbers, durations masked."""
    line = _DURATION.sub("<duration>", line.rstrip())
    return _NUMBER.split(line), _NUMBER.findall(line)


def _same_number(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return abs(x - y) <= ATOL + RTOL * abs(y)


def same_line(good: str, got: str) -> bool:
    words_a, numbers_a = _split(good)
    words_b, numbers_b = _split(got)
    return (
        words_a == words_b
        and len(numbers_a) == len(numbers_b)
        and all(_same_number(b, a) for a, b in zip(numbers_a, numbers_b, strict=True))
    )


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def first_difference(good: str, got: str) -> str | None:
    """None when ``got`` is ``good``'s output; else where it first differs, in a few words."""
    good_lines = [line for line in good.splitlines() if line.strip()]
    got_lines = [line for line in got.splitlines() if line.strip()]
    for number, (a, b) in enumerate(zip(good_lines, got_lines, strict=False), start=1):
        if not same_line(a, b):
            return f"output line {number} is {_clip(b.strip())!r}, the good one's {_clip(a.strip())!r}"
    if len(good_lines) != len(got_lines):
        return f"{len(got_lines)} lines of output, the good one's {len(good_lines)}"
    return None
