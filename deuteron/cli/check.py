"""``deuteron check``: run a script, module or pytest with every Triton launch checked in the interpreter.

The target's own exit code is kept unless findings at or above ``--fail-on`` exist; then the
exit code is 1. The report goes to stderr, so the target's stdout stays its own.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from deuteron.check.errors import CheckError
from deuteron.check.findings import KINDS
from deuteron.check.recorder import DEFAULT_LIMIT
from deuteron.cli.program import USAGE, add_device_argument, add_target_arguments, choose_device, parse_target
from deuteron.formats.files import OutputError, check_writable
from deuteron.model.finding import SEVERITIES
from deuteron.process.signals import Deferred
from deuteron.process.terminal import printable, say


def add_parser(sub: Any) -> None:
    """Registers ``deuteron check``: one argparse table, read top to bottom in the order ``-h`` shows it.

    The target's words are split off before argparse sees them (:func:`deuteron.cli.program.split_target`),
    so options here never collide with the target's own.
    """
    p = sub.add_parser(
        "check",
        help="run a script, module or pytest in Triton's interpreter and check every kernel program",
        description=(
            "Run a Python script, a module (-m) or pytest with TRITON_INTERPRET=1 and check every program\n"
            "of every Triton launch. Errors: out-of-bounds (a lane outside the memory of the tensor its\n"
            "pointer came from), races between programs (accesses guarded by one spin lock excepted),\n"
            "locks never released, failed tl.device_assert. Warnings: lanes in a tensor's memory but\n"
            "outside its view, the op that first made a NaN/Inf from finite inputs. Info: outputs no\n"
            "program wrote. Kernels compute their real outputs; out-of-bounds lanes are masked off.\n"
            "Exit code: the target's, or 1 when findings at or above --fail-on exist.\n\n"
            "examples:\n"
            "  deuteron check examples/vector_add.py\n"
            "  deuteron check --json findings.json pytest tests/test_kernels.py -x\n"
            "  deuteron check --fail-on warning --checks out-of-bounds,race -m mypkg.train"
        ),
        usage=f"deuteron check [options] {USAGE}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    p.add_argument("--no-color", action="store_true", help="plain text report")
    add_device_argument(p)
    add_target_arguments(p)
    p.set_defaults(handler=check_command)


def check_command(args: argparse.Namespace) -> int:
    # The sanitizer's machinery is imported when it runs, so other commands start fast.
    from deuteron.check.api import CheckSession

    target = parse_target(args)
    choose_device(args)
    checks = [c.strip() for c in args.checks.split(",") if c.strip()]
    unknown = sorted(set(checks) - set(KINDS))
    if unknown or not checks:
        raise CheckError(
            f"--checks: unknown check {', '.join(unknown) or '(none given)'}; choose from {', '.join(KINDS)}"
        )
    # Checked before the target runs, and fixed as absolute paths (the target may chdir).
    json_path = check_writable(args.json, "--json") if args.json else None
    record_path = check_writable(args.record, "--record") if args.record else None
    if args.record_limit < 0:
        raise CheckError("--record-limit must be 0 or more")
    owner = os.getpid()
    with Deferred(redeliver=False, note="finishing the report first") as late:
        result = CheckSession.run(
            target,
            checks=checks,
            fail_fast=args.fail_fast,
            record=record_path,
            record_limit=args.record_limit,
        )
        if os.getpid() != owner:
            return result.exit_code  # a child the target forked: the report is the parent's
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
