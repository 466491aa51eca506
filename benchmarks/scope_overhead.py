"""Cost of one ``with deuteron.scope("x"):`` enter/exit pair, outside and inside a session.

Why this exists: scopes are meant to stay in production code. Outside a session they must
cost next to nothing (the API promises a cheap no-op), and inside a session they must be
cheap enough to wrap fine-grained regions without distorting what is measured. This script
times the pair with ``timeit`` (several repeats; the best and median per-pair cost are
reported in microseconds) and checks, against the best of the repeats by default (timeit's
advice: the best is the least disturbed by other processes; ``--check median`` is stricter):

* outside any session: < 0.3 us per pair;
* inside a session started with ``backend="interpreter"``: < 3 us per pair.

``enter_scope``/``exit_scope`` inside a session is timed for information only (no target).
Each in-session measurement gets a fresh session, finalized with ``output_format=None`` so
no file is written. Like ``timeit`` itself, the garbage collector is off while timing unless
``--gc`` is given.

Usage: ``python benchmarks/scope_overhead.py [--number N] [--repeat R] [--check best|median] [--gc]
[--no-check]``
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import timeit
from collections.abc import Callable
from dataclasses import dataclass

import deuteron
from deuteron.collect.start_options import disabled

OUTSIDE_TARGET_US = 0.3
INSIDE_TARGET_US = 3.0


@dataclass
class Result:
    case: str
    best_us: float
    median_us: float
    target_us: float | None

    def ok(self, statistic: str) -> bool:
        value = self.best_us if statistic == "best" else self.median_us
        return self.target_us is None or value < self.target_us


def _time_stmt(stmt: str, number: int, repeat: int, use_gc: bool) -> tuple[float, float]:
    """Best and median seconds per execution of ``stmt`` over ``repeat`` runs of ``number``."""
    setup = "import gc; gc.enable()" if use_gc else "pass"
    timer = timeit.Timer(stmt, setup=setup, globals={"deuteron": deuteron})
    runs = [t / number for t in timer.repeat(repeat=repeat, number=number)]
    return min(runs), statistics.median(runs)


def _in_session(body: Callable[[], tuple[float, float]]) -> tuple[float, float]:
    sid = deuteron.start("bench", backend="interpreter")
    try:
        return body()
    finally:
        deuteron.finalize(sid, output_format=None)


def run(number: int, repeat: int, use_gc: bool) -> list[Result]:
    with_stmt = 'with deuteron.scope("x"):\n    pass'
    pair_stmt = 'deuteron.enter_scope("x"); deuteron.exit_scope("x")'
    results: list[Result] = []

    # Warm-up: the first start() imports Triton's interpreter; keep that out of every timing.
    deuteron.finalize(deuteron.start("warmup", backend="interpreter"), output_format=None)

    best, med = _time_stmt("pass", number, repeat, use_gc)
    results.append(Result("empty statement (timeit loop baseline)", best * 1e6, med * 1e6, None))

    best, med = _time_stmt(with_stmt, number, repeat, use_gc)
    results.append(Result("with scope(), outside any session", best * 1e6, med * 1e6, OUTSIDE_TARGET_US))

    best, med = _in_session(lambda: _time_stmt(with_stmt, number, repeat, use_gc))
    results.append(Result("with scope(), inside a session", best * 1e6, med * 1e6, INSIDE_TARGET_US))

    best, med = _in_session(lambda: _time_stmt(pair_stmt, number, repeat, use_gc))
    results.append(Result("enter_scope/exit_scope, inside a session", best * 1e6, med * 1e6, None))
    return results


def print_table(results: list[Result], number: int, repeat: int, use_gc: bool, statistic: str) -> None:
    print(f"deuteron {deuteron.__version__}, Python {platform.python_version()} on {platform.machine()}")
    gc_state = "on" if use_gc else "off"
    print(f"timeit: {repeat} repeats x {number} pairs each, gc {gc_state}; per-pair cost in us")
    print(f"targets are checked against the {statistic} of the repeats")
    width = max(len(r.case) for r in results)
    print(f"{'case':<{width}}  {'best us':>9}  {'median us':>9}  {'target':>8}  status")
    for r in results:
        target = f"< {r.target_us:g}" if r.target_us is not None else "-"
        status = ("ok" if r.ok(statistic) else "MISSED") if r.target_us is not None else "info"
        print(f"{r.case:<{width}}  {r.best_us:>9.3f}  {r.median_us:>9.3f}  {target:>8}  {status}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--number", type=int, default=100_000, help="pairs per timing run (default 100000)")
    parser.add_argument("--repeat", type=int, default=7, help="timing runs per case (default 7)")
    parser.add_argument(
        "--check",
        choices=["best", "median"],
        default="best",
        help="statistic compared with the targets (default best: timeit's advice, the least noisy)",
    )
    parser.add_argument("--gc", action="store_true", help="leave the garbage collector on while timing")
    parser.add_argument("--no-check", action="store_true", help="always exit 0, even if a target is missed")
    args = parser.parse_args()
    if args.number < 1 or args.repeat < 1:
        parser.error("--number and --repeat must be at least 1")
    if disabled():
        parser.error("DEUTERON_DISABLE is set: the in-session cases would measure nothing")
    results = run(args.number, args.repeat, args.gc)
    print_table(results, args.number, args.repeat, args.gc, args.check)
    missed = [r for r in results if not r.ok(args.check)]
    if missed and not args.no_check:
        print(f"target missed: {', '.join(r.case for r in missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
