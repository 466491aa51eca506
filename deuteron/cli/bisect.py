"""``deuteron bisect``: the first bad version between a good and a bad one, and the IR stage where
the kernel's code changed. The engine is :mod:`deuteron.bisect`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from deuteron.cli.arguments import add_command, number_in
from deuteron.process.terminal import printable

DESCRIPTION = """\
Find the first bad version between a good and a bad one: git commits of a local repository
(along the bad commit's first parents, each checked out into a temporary worktree: your checkout
is never touched), or Triton releases (triton==X, each installed once into a cache). Each step
runs SCRIPT at one version and says good or bad, as it goes; then the first bad version, the
last good one, and the first IR stage (ttir, ttgir, llir, ptx) where the kernel's code differs
between the two, compiled without a GPU as deuteron explain compiles it.

Bad is, with --wrong: the script exits non-zero or prints other output than the good version
(numbers within 1e-5, durations ignored: a reproducer's `--check` compares its own outputs);
with --check: `deuteron check SCRIPT` finds an error; with --slower X: its kernels take more
than X times the good version's GPU time, beyond the noise (needs a GPU). Without a GPU, the
script runs in Triton's interpreter. Options go before SCRIPT; the words after it are its own.

examples:
  deuteron bisect --good v1.2 --bad HEAD --wrong tests/repro_kernel.py
  deuteron bisect --good HEAD~20 --bad HEAD --repo ../mylib --wrong repro.py --check
  deuteron bisect --good triton==3.5.0 --bad triton==3.6.0 --wrong repro.py --check
  deuteron bisect --good v1.2 --bad HEAD --slower 1.1 bench.py"""

_ratio = number_in(
    float, "a ratio", lambda x: x > 1, "--slower {}: give a ratio over 1, e.g. 1.1 for 10% slower"
)
_seconds = number_in(float, "a number of seconds", lambda x: x > 0, "the time limit must be over 0 s, not {}")
_rounds = number_in(int, "a number of rounds", lambda n: 2 <= n <= 100, "rounds: 2 to 100, not {}")


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "bisect",
        "find the commit or Triton release that made a kernel wrong or slower, and the IR stage that changed",
        DESCRIPTION,
        usage="deuteron bisect --good REF --bad REF (--wrong | --check | --slower X) [options] "
        "SCRIPT [ARGS ...]",
    )
    p.add_argument(
        "--good", required=True, metavar="REF", help="a good version: a commit, a tag, a branch, or triton==X"
    )
    p.add_argument("--bad", required=True, metavar="REF", help="a bad version, of the same kind")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--wrong", action="store_true", help="bad: the script fails or its output differs from the good one's"
    )
    mode.add_argument("--check", action="store_true", help="bad: deuteron check of the script finds an error")
    mode.add_argument(
        "--slower",
        type=_ratio,
        metavar="X",
        help="bad: its kernels take more than X times the good one's GPU time",
    )
    p.add_argument(
        "--repo", metavar="DIR", help="the git repository of the commits (default: the one holding SCRIPT)"
    )
    p.add_argument(
        "--rounds",
        type=_rounds,
        default=5,
        metavar="N",
        help="--slower: timing rounds per comparison (default 5; more while unclear)",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=600.0,
        metavar="S",
        help="a run past S seconds is bad (default 600)",
    )
    p.add_argument(
        "--target",
        metavar="T",
        help="the GPU target the IR is compiled for (default: the local GPU, else cuda:90)",
    )
    p.add_argument("--kernel", metavar="NAME", help="compare only kernels whose name contains NAME")
    p.add_argument(
        "--no-stages", action="store_true", help="do not compile the kernels to find the stage that changed"
    )
    p.add_argument(
        "--triton-versions",
        metavar="V,V,...",
        help="the Triton releases to bisect (default: every one published between --good and --bad)",
    )
    p.add_argument(
        "--triton-folder",
        action="append",
        default=[],
        metavar="VERSION=DIR",
        help="a folder that already holds that Triton release (pip install --target DIR): not downloaded",
    )
    p.add_argument("script", metavar="SCRIPT", help="the script to run at each version")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="its own arguments")
    p.set_defaults(handler=bisect_command)


def _say(line: str) -> None:
    print(printable(line), flush=True)


def _folders(values: list[str]) -> dict[str, str]:
    from deuteron.bisect.errors import BisectError

    out = {}
    for value in values:
        version, sep, folder = value.partition("=")
        if not sep or not version.strip() or not folder.strip():
            raise BisectError(f"--triton-folder {value}: write VERSION=DIR, e.g. 3.6.0=.ci-triton36")
        out[version.strip().removeprefix("triton==")] = folder.strip()
    return out


def bisect_command(args: argparse.Namespace) -> int:
    """Bisect, print each verdict as it comes, then the first bad version and the changed stage.
    Exit 0 when a first bad version was found; bad input is one line and exit 2 (by main)."""
    try:
        result = _run(args)
    except KeyboardInterrupt:  # the worktrees are removed on the way out (run's finally)
        print("deuteron bisect: interrupted", file=sys.stderr)
        return 130
    _say(f"first bad: {result.first_bad.shown()}")
    _say(f"last good: {result.last_good.shown()}  ({result.verdicts} versions run)")
    change = result.change
    if change is not None and change.stage:
        also = f"; {', '.join(change.also)} differ too" if change.also else ""
        _say(f"changed stage: {change.stage} (the first that differs, kernel {change.kernel}{also})")
        for line in change.excerpt:
            _say(f"  {line}")
    elif change is not None:
        _say(f"changed: {change.note}")
    elif result.stage_note:
        _say(f"changed stage: none found ({result.stage_note})")
    sys.stdout.flush()
    return 0


def _run(args: argparse.Namespace) -> Any:
    from deuteron.bisect.api import run

    mode = "slower" if args.slower is not None else "check" if args.check else "wrong"
    versions = (
        [v.strip() for v in args.triton_versions.split(",") if v.strip()] if args.triton_versions else None
    )
    return run(
        args.script,
        list(args.args),
        good=args.good,
        bad=args.bad,
        mode=mode,
        repo=args.repo,
        threshold=args.slower or 1.1,
        rounds=args.rounds,
        target=args.target,
        kernel=args.kernel,
        stages=not args.no_stages,
        limit=args.timeout,
        triton_versions=versions,
        triton_folders=_folders(args.triton_folder),
        say=_say,
    )
