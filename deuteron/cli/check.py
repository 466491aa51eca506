"""``deuteron check``: run a script, module or pytest with every Triton launch checked in the interpreter.

The program's own exit code is kept unless findings at or above ``--fail-on`` exist; then the
exit code is 1. The report goes to stderr, so the program's stdout stays its own.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from deuteron.check.errors import CheckError
from deuteron.check.findings import KINDS
from deuteron.check.recorder import DEFAULT_LIMIT
from deuteron.cli.arguments import add_command
from deuteron.cli.program import (
    USAGE,
    add_device_argument,
    add_program_arguments,
    choose_device,
    parse_program,
)
from deuteron.formats.files import OutputError, check_writable
from deuteron.model.finding import SEVERITIES
from deuteron.process.signals import Deferred
from deuteron.process.terminal import printable, say

DESCRIPTION = """\
Run a Python script, a module (-m) or pytest with TRITON_INTERPRET=1 and check every program
of every Triton launch. Errors: out-of-bounds (a lane outside the memory of the tensor its
pointer came from), races between programs (accesses guarded by one spin lock excepted),
locks never released, failed tl.device_assert, int32 arithmetic that wraps, integer
division by zero. Warnings: lanes in a tensor's memory but
outside its view, the op that first made a NaN/Inf from finite inputs. Info: outputs no
program wrote. Kernels compute their real outputs; out-of-bounds lanes are masked off.
Exit code: the target's, or 1 when findings at or above --fail-on exist.

Debugging: --pdb stops in pdb at the kernel's line of each new error, in the failing
program, with its lanes as NumPy arrays (pid, bad_lanes, offsets, mask, value, finding);
--program X[,Y[,Z]][@LAUNCH] runs only that program (others skipped, their outputs
untouched), so breakpoint() and print in a kernel show one program.

examples:
  deuteron check examples/vector_add.py
  deuteron check --json findings.json pytest tests/test_kernels.py -x
  deuteron check --fail-on warning --checks out-of-bounds,race -m mypkg.train
  deuteron check --pdb examples/check_me.py          # stop at the bad lane in pdb
  deuteron check --pdb=all pytest tests/test_kernels.py   # warnings and info too
  deuteron check --program 3 examples/debug_me.py    # program (3, 0, 0) of every launch
  deuteron check --program 3,0,0@2 script.py          # ... of the second launch only

Sizes too large to run: --at-size n_elements=3e9 (or --scale 1000) probes each kernel's int32
index arithmetic at that size after its launch, and reports each op that wraps with its witness
(program, lane, operands) and the size at which it first wraps.
  deuteron check --at-size n=3e9 examples/vector_add.py"""


def add_parser(sub: Any) -> None:
    """Registers ``deuteron check``: one argparse table, read top to bottom in the order ``-h`` shows it.

    The program's words are split off before argparse sees them (:func:`deuteron.cli.program.split_program`),
    so options here never collide with the program's own.
    """
    p = add_command(
        sub,
        "check",
        "run a script, module or pytest in Triton's interpreter and check every kernel program",
        DESCRIPTION,
        usage=f"deuteron check [options] {USAGE}",
    )
    p.add_argument("--json", metavar="FILE", help="also write the findings as JSON to FILE")
    p.add_argument(
        "--record",
        metavar="FILE",
        help="also write compact access records (.npz; format in deuteron/formats/access_record.py)",
    )
    p.add_argument(
        "--record-limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="LANES",
        help=f"most lanes kept in --record, 8 bytes each (default {DEFAULT_LIMIT:,})",
    )
    p.add_argument("--fail-fast", action="store_true", help="stop at the first error")
    p.add_argument(
        "--checks",
        default=",".join(KINDS),
        metavar="LIST",
        help=f"comma-separated checks to run (default: all of {','.join(KINDS)})",
    )
    p.add_argument(
        "--fail-on",
        default="error",
        choices=[*SEVERITIES, "never"],
        help="exit 1 when a finding this severe or worse exists (default: error; warnings and info "
        "are reported without failing)",
    )
    p.add_argument(
        "--pdb",
        nargs="?",
        const="error",
        type=_pdb_level,
        metavar="LEVEL",
        help="stop in pdb at the first occurrence of each error, in the kernel's frame of the failing "
        f"program; --pdb=warning also at warnings, --pdb=all at every finding ({', '.join(PDB_LEVELS)})",
    )
    p.add_argument(
        "--program",
        action="append",
        metavar="X[,Y[,Z]][@LAUNCH]",
        help="run only this program id (3 is (3, 0, 0)) of each launch, or of launch LAUNCH (numbered "
        "from 1) or of every launch of kernel NAME (@NAME); the others are skipped and their outputs "
        "left untouched. Repeat for more programs",
    )
    p.add_argument(
        "--at-size",
        action="append",
        metavar="NAME=VALUE",
        help="also probe each kernel with its integer argument NAME set to VALUE (3e9, 2**31, 4G), in "
        "the grid that size gives, for int32 index arithmetic that wraps: only the first and last "
        "programs run, without touching memory. Repeat for more arguments",
    )
    p.add_argument(
        "--scale",
        metavar="K",
        help="like --at-size, with every integer argument above 1 (sizes, strides) multiplied by K",
    )
    p.add_argument("--no-color", action="store_true", help="plain text report")
    add_device_argument(p)
    add_program_arguments(p)
    p.set_defaults(handler=check_command)


PDB_LEVELS = ("error", "warning", "all")  # deuteron.check.debugger.LEVELS, without importing the checker


def _pdb_level(text: str) -> str:
    """``--pdb=LEVEL``'s value: one of the debugger's levels (:func:`deuteron.check.debugger.level_of`
    says which, in one line); the debugger is imported only where it is asked for."""
    from deuteron.check.debugger import level_of

    try:
        return level_of(text)
    except CheckError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def check_command(args: argparse.Namespace) -> int:
    # The sanitizer's machinery is imported when it runs, so other commands start fast.
    from deuteron.check.api import CheckSession
    from deuteron.check.at_size import parse_scale, parse_sizes
    from deuteron.check.grid_programs import Selection

    program = parse_program(args)
    choose_device(args)
    checks = [c.strip() for c in args.checks.split(",") if c.strip()]
    unknown = sorted(set(checks) - set(KINDS))
    if unknown or not checks:
        raise CheckError(
            f"--checks: unknown check {', '.join(unknown) or '(none given)'}; choose from {', '.join(KINDS)}"
        )
    # Checked before the program runs, and fixed as absolute paths (the program may chdir).
    json_path = check_writable(args.json, "--json") if args.json else None
    record_path = check_writable(args.record, "--record") if args.record else None
    if args.record_limit < 0:
        raise CheckError("--record-limit must be 0 or more")
    selection = Selection.parse(args.program) if args.program else None
    sizes = parse_sizes(args.at_size) if args.at_size else None  # bad input: one line, before the run
    scale = parse_scale(args.scale)
    if (args.pdb or selection is not None) and program.kind == "pytest" and _parallel(program.args):
        what = "--pdb" if args.pdb else "--program"
        raise CheckError(
            f"{what} needs the tests in this process: drop pytest's -n (xdist workers have no terminal)"
        )
    owner = os.getpid()
    with Deferred(redeliver=False, note="finishing the report first") as late:
        result = CheckSession.run(
            program,
            checks=checks,
            fail_fast=args.fail_fast,
            record=record_path,
            record_limit=args.record_limit,
            pdb=args.pdb,
            programs=selection,
            at_size=sizes,
            scale=scale,
        )
        if os.getpid() != owner:
            return result.exit_code  # a child the program forked: the report is the parent's
        code = _report(result, json_path, args)
    return late.exit_code if late.exit_code is not None else code


def _report(result: Any, json_path: Any, args: argparse.Namespace) -> int:
    from deuteron.formats import check_json
    from deuteron.render.check_report import render

    report = result.report
    render(report, file=sys.stderr, color=False if args.no_color else None)
    if report.launches == 0 and result.ended_by:
        print("deuteron check: the program ended before any Triton kernel ran", file=sys.stderr)
    elif report.launches == 0:
        print(
            "deuteron check: no Triton kernel ran in the interpreter (none launched, or triton was "
            "imported with TRITON_INTERPRET unset before the check began)",
            file=sys.stderr,
        )
    for note in result.skipped:
        print(printable(f"deuteron check: {note}"), file=sys.stderr)
    errors = list(result.errors)
    written = [str(args.record)] if args.record and not errors else []
    if json_path is not None:
        try:
            check_json.write(report, json_path)
            written.insert(0, str(args.json))
        except OutputError as exc:
            errors.append(str(exc))
    if written:
        say(f"deuteron check: wrote {', '.join(written)}")
    if result.ended_by:
        print(
            printable(f"deuteron check: {result.ended_by}; the report covers what ran until then"),
            file=sys.stderr,
        )
    for error in errors:
        say(f"deuteron: error: {error}")
    if args.fail_on != "never" and report.at_least(args.fail_on):
        return 1
    return result.exit_code or (1 if errors else 0)


def _parallel(words: tuple[str, ...] | list[str]) -> bool:
    """pytest's words ask xdist for worker processes (-n 2, -n auto, --numprocesses=2, -n2)."""
    for i, word in enumerate(words):
        if word in ("-n", "--numprocesses") and i + 1 < len(words) and words[i + 1] not in ("0",):
            return True
        if word.startswith("--numprocesses=") and word.split("=", 1)[1] != "0":
            return True
        short = word[2:] if word.startswith("-n") and not word.startswith("--") else ""
        if short not in ("", "0") and short.isalnum():
            return True
    return False
