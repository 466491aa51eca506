"""``--slower X``: whether a version's kernels are slower than the good version's, from rounds
of timings taken in turn (good, candidate, candidate, good, ...), so a machine that warms up or
slows down during the run weighs on both alike.

Pure: the rounds in, a verdict out, tested with recorded numbers. The noise is each side's
spread (1.4826 × the median absolute deviation over the median: a standard deviation that one
wild round does not move); a candidate is slower when the ratio of the medians is over the
threshold and its slowdown is more than twice the noise. Over the threshold but within the
noise is unclear: more rounds are taken, and still unclear at the last round counts as not
slower, and says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

SLOWER, NOT_SLOWER, UNCLEAR = "slower", "not slower", "unclear"
MARGIN = 2.0  # the slowdown must be more than this many times the noise


def spread(times: list[float]) -> float:
    """The relative spread of ``times``: 1.4826 × MAD / median (0 for fewer than two)."""
    if len(times) < 2:
        return 0.0
    mid = statistics.median(times)
    if mid <= 0:
        return 0.0
    mad = statistics.median(abs(t - mid) for t in times)
    return 1.4826 * mad / mid


@dataclass(frozen=True)
class Timing:
    """The rounds of one comparison, in seconds (or any one unit), and the verdict they give."""

    good: tuple[float, ...]
    candidate: tuple[float, ...]
    threshold: float

    @property
    def ratio(self) -> float:
        good = statistics.median(self.good)
        return statistics.median(self.candidate) / good if good > 0 else float("inf")

    @property
    def noise(self) -> float:
        return max(spread(list(self.good)), spread(list(self.candidate)))

    @property
    def verdict(self) -> str:
        if not self.good or not self.candidate:
            return UNCLEAR
        ratio = self.ratio
        if ratio <= self.threshold:
            return NOT_SLOWER
        if ratio - 1 > MARGIN * self.noise:
            return SLOWER
        return UNCLEAR

    def describe(self) -> str:
        """One line: the medians, the ratio, the noise and the rounds."""
        good, cand = statistics.median(self.good), statistics.median(self.candidate)
        return (
            f"{cand * 1e3:.3f} ms against {good * 1e3:.3f} ms: {self.ratio:.3f}x "
            f"(noise ±{self.noise * 100:.1f}%, {len(self.candidate)} rounds, threshold {self.threshold:g}x)"
        )


def order(round_index: int) -> tuple[str, str]:
    """Which side runs first in a round: good first in even rounds, the candidate in odd ones."""
    return ("good", "candidate") if round_index % 2 == 0 else ("candidate", "good")


def decide(
    good: list[float], candidate: list[float], threshold: float, last_round: bool
) -> tuple[str, Timing]:
    """The verdict after these rounds: ``slower``, ``not slower``, or ``unclear`` (take more rounds);
    at the ``last_round``, unclear is not slower."""
    timing = Timing(tuple(good), tuple(candidate), threshold)
    verdict = timing.verdict
    if verdict == UNCLEAR and last_round:
        verdict = NOT_SLOWER
    return verdict, timing
