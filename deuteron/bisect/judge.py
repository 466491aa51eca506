"""Running a version and judging it: ``--wrong`` (the script fails, or its output is not the good
version's), ``--check`` (``deuteron check`` of the script finds something) or ``--slower X`` (its
kernels take more than X times the good version's GPU time, beyond the noise).

Every run is a fresh ``python`` in the version's :class:`~deuteron.bisect.versions.Place`. On a
machine without a GPU the script runs in Triton's interpreter (``TRITON_INTERPRET=1``, unless the
environment sets it already); ``--slower`` refuses to start there.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from deuteron.bisect import timing
from deuteron.bisect.errors import BisectError
from deuteron.bisect.outputs import first_difference
from deuteron.bisect.versions import Place

WRONG, CHECK, SLOWER = "wrong", "check", "slower"


def has_gpu() -> bool:
    """Whether this machine shows a GPU to its programs (an NVIDIA or AMD device file)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return bool(glob.glob("/dev/nvidia[0-9]*")) or os.path.exists("/dev/kfd")


@dataclass
class Outcome:
    """One run: the exit code (None when it ran past the time limit), what it printed, how long."""

    code: int | None
    stdout: str
    stderr: str
    seconds: float


@dataclass
class Verdict:
    bad: bool
    why: str


def run_in(place: Place, argv: list[str], extra: dict[str, str], limit: float) -> Outcome:
    """``python ARGV`` in ``place``, its output captured, killed past ``limit`` seconds."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, *argv],
            cwd=place.cwd,
            env=place.environment(extra),
            capture_output=True,
            text=True,
            errors="replace",
            timeout=limit,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return Outcome(None, out, "", time.perf_counter() - start)
    return Outcome(done.returncode, done.stdout, done.stderr, time.perf_counter() - start)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[-1] if lines else ""
    return line if len(line) <= 100 else line[:99] + "…"


def _failed(outcome: Outcome, limit: float) -> str:
    if outcome.code is None:
        return f"ran past the time limit ({limit:g} s)"
    said = _last_line(outcome.stderr) or _last_line(outcome.stdout)
    return f"exit {outcome.code}" + (f": {said}" if said else "")


class Judge:
    """Judges versions against the good one, in one of the three modes."""

    def __init__(
        self,
        mode: str,
        args: list[str],
        limit: float,
        threshold: float = 1.1,
        rounds: int = 5,
        max_rounds: int = 15,
        say: Callable[[str], None] = print,
    ) -> None:
        if mode == SLOWER and not has_gpu():
            raise BisectError(
                "--slower times the kernels on a GPU, and this machine has none: "
                "bisect with --wrong or --check here"
            )
        if mode == SLOWER and threshold <= 1:
            raise BisectError(f"--slower {threshold:g}: give a ratio over 1, e.g. 1.1 for 10% slower")
        self.mode, self.args, self.limit = mode, args, limit
        self.threshold, self.rounds, self.max_rounds = threshold, rounds, max_rounds
        self.say = say
        interpret = mode == WRONG and not has_gpu() and "TRITON_INTERPRET" not in os.environ
        self.extra = {"TRITON_INTERPRET": "1"} if interpret else {}
        self.good_output = ""
        self.good_place: Place | None = None
        self.folder = tempfile.mkdtemp(prefix="deuteron-bisect-runs-")
        self.runs = 0

    def where(self) -> str:
        """How the versions run, for the first lines of the output."""
        if self.mode == CHECK:
            return "each version under deuteron check"
        if self.mode == SLOWER:
            return (
                f"each version's kernels timed against the good one's, {self.rounds} rounds or more, in turn"
            )
        return "in Triton's interpreter (no GPU here)" if self.extra else "as it is"

    def _argv(self, place: Place) -> list[str]:
        if self.mode == CHECK:
            return ["-m", "deuteron", "check", place.script, *self.args]
        return [place.script, *self.args]

    def endpoints(self, good: Place, bad: Place) -> tuple[Verdict, Verdict]:
        """The good version's verdict (it must succeed: its output is then what the others must
        print) and the bad one's. Both run at once, except when timing (``--slower``)."""
        self.good_place = good
        if self.mode == SLOWER:
            self._kernel_time(good)
            return Verdict(False, "its kernels run"), self._slower(bad)
        with ThreadPoolExecutor(2) as pool:
            runs = [pool.submit(run_in, p, self._argv(p), self.extra, self.limit) for p in (good, bad)]
            first, last = (run.result() for run in runs)
        if first.code != 0:
            return Verdict(True, _failed(first, self.limit)), Verdict(False, "not judged")
        self.good_output = first.stdout
        lines = len(first.stdout.splitlines())
        return Verdict(False, f"exit 0, {lines} lines of output"), self._verdict(last)

    def judge(self, place: Place) -> Verdict:
        """Whether the version at ``place`` is bad, and why in a few words."""
        if self.mode == SLOWER:
            return self._slower(place)
        return self._verdict(run_in(place, self._argv(place), self.extra, self.limit))

    def _verdict(self, outcome: Outcome) -> Verdict:
        if outcome.code != 0:
            return Verdict(True, _failed(outcome, self.limit))
        if self.mode == CHECK:
            return Verdict(False, "deuteron check finds nothing")
        differs = first_difference(self.good_output, outcome.stdout)
        if differs:
            return Verdict(True, differs)
        return Verdict(False, "same output")

    # --- --slower --------------------------------------------------------------------------------
    def _kernel_time(self, place: Place) -> float:
        """Seconds of GPU time of the script's kernels, as ``deuteron run`` profiles them."""
        from deuteron.formats import hatchet
        from deuteron.model.metrics import TIME

        self.runs += 1
        name = os.path.join(self.folder, f"run{self.runs}")
        argv = ["-m", "deuteron", "run", "-n", name, place.script, *self.args]
        outcome = run_in(place, argv, {}, self.limit)
        if outcome.code != 0:
            raise BisectError(f"{place.script} failed while being timed ({_failed(outcome, self.limit)})")
        profile = hatchet.read(name + ".hatchet")
        total = sum(
            float(v) for node in profile.root.walk() if isinstance(v := node.metrics.get(TIME), (int, float))
        )
        os.remove(name + ".hatchet")
        if total <= 0:
            raise BisectError(f"{place.script} launched no kernel that could be timed")
        return total * 1e-9

    def _slower(self, place: Place) -> Verdict:
        assert self.good_place is not None
        good: list[float] = []
        candidate: list[float] = []
        taken = 0
        while True:
            for _ in range(self.rounds):
                for side in timing.order(taken):
                    if side == "good":
                        good.append(self._kernel_time(self.good_place))
                    else:
                        candidate.append(self._kernel_time(place))
                taken += 1
            verdict, measured = timing.decide(good, candidate, self.threshold, taken >= self.max_rounds)
            if verdict != timing.UNCLEAR:
                break
            self.say(f"  within the noise after {taken} rounds ({measured.describe()}): {self.rounds} more")
        if verdict == timing.SLOWER:
            return Verdict(True, f"slower: {measured.describe()}")
        within = measured.ratio > self.threshold
        return Verdict(False, ("within the noise: " if within else "not slower: ") + measured.describe())

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
