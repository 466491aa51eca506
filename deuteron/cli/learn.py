"""``deuteron learn``: Triton exercises that check themselves (list, show, start, check, hint, and
``--notebook`` to write them all as a Jupyter notebook). The engine is :mod:`deuteron.learn`."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from deuteron.cli.arguments import add_command
from deuteron.learn.errors import LearnError
from deuteron.learn.exercises import all_exercises, find
from deuteron.learn.grade import DEFAULT_TIMEOUT, MAX_TIMEOUT
from deuteron.learn.progress import Progress

EXAMPLES = """\
examples:
  deuteron learn                          # the exercises, each done / tried / new
  deuteron learn show 3                   # statement, signature, what is checked
  deuteron learn start 3                  # writes learn/03_outer_add.py, the starter
  deuteron learn check 3                  # checks learn/03_outer_add.py (or: check 3 FILE)
  deuteron learn hint 3                   # one more hint each time (--all: every hint)
  deuteron learn check 3 --record rec     # also access records: deuteron serve rec/03_outer_add.*
  deuteron learn --notebook learn.ipynb   # every exercise as a Jupyter notebook

Progress is kept in $XDG_DATA_HOME/deuteron/learn/progress.json (~/.local/share when unset;
$DEUTERON_DATA_DIR/learn/progress.json when that is set). Everything runs on the CPU, in
Triton's interpreter."""


DESCRIPTION = """\
Twelve Triton exercises, from a vector add to a fused attention forward. Each has a
statement, a starter file and a checker: it runs your kernel in Triton's interpreter under
deuteron check on several shapes (some not multiples of the block), compares it with torch,
and turns the checker's findings (the exact program and lane) into hints.

"""


def add_parser(sub: Any) -> None:
    """Registers ``deuteron learn`` and its actions; no action lists the exercises."""
    p = add_command(
        sub,
        "learn",
        "Triton exercises that check themselves, from a vector add to a fused attention",
        DESCRIPTION + EXAMPLES,
    )
    p.add_argument("--notebook", metavar="FILE", help="write every exercise as a Jupyter notebook to FILE")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=_intermixed(type(p)))
    listed = actions.add_parser("list", help="the exercises and your progress (also: no action)")
    show = actions.add_parser("show", help="an exercise's statement, signature and what is checked")
    show.add_argument("exercise", metavar="N", help="the exercise's number or name")
    show.add_argument("--solution", action="store_true", help="print the reference solution instead")
    start = actions.add_parser("start", help="write an exercise's starter file")
    start.add_argument("exercise", metavar="N", help="the exercise's number or name")
    start.add_argument("folder", metavar="DIR", nargs="?", default="learn", help="where (default: ./learn)")
    start.add_argument("--force", action="store_true", help="overwrite the file if it exists")
    check = actions.add_parser(
        "check",
        help="check your kernel: every shape against torch, findings as hints",
        description="Check your kernel for exercise N on every shape; exit 0 when all pass, 1 when not.",
    )
    check.add_argument("exercise", metavar="N", help="the exercise's number or name")
    check.add_argument(
        "file", metavar="FILE", nargs="?", help="your kernel's file (default: learn/NN_name.py)"
    )
    check.add_argument(
        "--record",
        metavar="DIR",
        help="also write access records of your kernel and of the reference into DIR (deuteron serve DIR/*)",
    )
    check.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"stop a shape's launch after S seconds (more than 0, at most {MAX_TIMEOUT:g}; default "
        f"{DEFAULT_TIMEOUT:g})",
    )
    check.add_argument(
        "--solution",
        action="store_true",
        help="check the reference solution instead (progress is not touched)",
    )
    hint = actions.add_parser("hint", help="the next hint for an exercise")
    hint.add_argument("exercise", metavar="N", help="the exercise's number or name")
    hint.add_argument("--all", action="store_true", help="every hint at once")
    for action in (listed, show, start, check, hint):
        action.formatter_class = argparse.RawDescriptionHelpFormatter
        action.epilog = EXAMPLES.split("\n\n")[0]
    p.set_defaults(handler=learn_command)


def _seconds(text: str) -> float:
    """``--timeout``'s value: a finite number of seconds, more than 0 and at most a day (the timer
    takes no more, and nan or inf would reach it as an exception)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= MAX_TIMEOUT:  # also false for nan
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds more than 0 and at most {MAX_TIMEOUT:g}"
        )
    return seconds


def _intermixed(base: type[argparse.ArgumentParser]) -> type[argparse.ArgumentParser]:
    """The actions' parser: options and positionals in any order (``check 3 --record rec FILE``
    as well as ``check 3 FILE --record rec``), which argparse gives only to a parser without
    subparsers and only through ``parse_intermixed_args``. The subparsers action calls
    ``parse_known_args``; it is routed through the intermixed parse once (which calls it again,
    on Python before 3.13)."""

    class Intermixed(base):  # type: ignore[valid-type,misc]
        inside = False

        def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
            if self.inside:
                return super().parse_known_args(args, namespace)
            self.inside = True
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self.inside = False

    return Intermixed


def learn_command(args: argparse.Namespace) -> int:
    if args.notebook:
        from deuteron.formats.files import check_writable
        from deuteron.learn.notebook import write_notebook

        if args.action:
            raise LearnError("--notebook writes every exercise; give it without an action")
        write_notebook(check_writable(args.notebook, "--notebook"), all_exercises())
        print(
            f"deuteron learn: wrote {args.notebook} ({len(all_exercises())} exercises); open it with Jupyter"
        )
        return 0
    action = args.action or "list"
    return int(_ACTIONS[action](args))


def _warn(progress: Progress) -> None:
    """The progress file's warning, if one is pending (each is shown once)."""
    warning = progress.take_warning()
    if warning:
        print(f"deuteron learn: warning: {warning}", file=sys.stderr)


def _list(args: argparse.Namespace) -> int:
    from deuteron.learn.text import listing

    progress = Progress.load()
    _warn(progress)
    print(listing(all_exercises(), progress))
    return 0


def _show(args: argparse.Namespace) -> int:
    from deuteron.learn.text import page

    ex = find(args.exercise)
    if args.solution:
        print(ex.solution_path.read_text(encoding="utf-8").rstrip())
        return 0
    progress = Progress.load()
    _warn(progress)
    print(page(ex, progress.status(ex.name)))
    return 0


def _start(args: argparse.Namespace) -> int:
    ex = find(args.exercise)
    folder = Path(args.folder)
    target = folder / f"{ex.name}.py"
    if target.exists() and not args.force:
        raise LearnError(f"{target} exists; keep your work, or give --force to start it over")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target.write_text(ex.starter().replace("THIS_FILE", str(target)), encoding="utf-8")
    except OSError as exc:
        raise LearnError(f"cannot write {target} ({exc.strerror or exc})") from None
    print(f"deuteron learn: wrote {target}, the starter of exercise {ex.number} ({ex.title})")
    print(f"deuteron learn: edit it, then: deuteron learn check {ex.number} {target}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from deuteron.learn.api import check

    ex = find(args.exercise)
    if args.solution and args.file:
        raise LearnError("give FILE or --solution, not both")
    path = None if args.solution else (args.file or f"learn/{ex.name}.py")
    if path is not None and args.file is None and not Path(path).exists():
        raise LearnError(f"{path}: no such file; write the starter with 'deuteron learn start {ex.number}'")
    result = check(ex, path, record=args.record, timeout=args.timeout)
    return 0 if result.passed else 1


def _hint(args: argparse.Namespace) -> int:
    from deuteron.learn.hints import next_hints

    ex = find(args.exercise)
    progress = Progress.load()
    _warn(progress)
    lines, seen = next_hints(ex, progress.hints_seen(ex.name), args.all)
    progress.see_hints(ex.name, seen)
    _warn(progress)
    print("\n".join(lines))
    if seen >= len(ex.hints):
        print(f"(that is every hint; the reference solution: deuteron learn show {ex.number} --solution)")
    return 0


_ACTIONS = {"list": _list, "show": _show, "start": _start, "check": _check, "hint": _hint}
