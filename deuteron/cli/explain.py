"""``deuteron explain``: run a script, capture each kernel specialization it launches, cross-compile it
for a GPU target (no GPU needed), and report registers, spills, shared memory, occupancy, the SASS
mix, the IR stages mapped to source lines, and findings with concrete fixes.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from deuteron.cli.arguments import add_command
from deuteron.cli.program import USAGE, add_program_arguments, parse_program
from deuteron.explain.errors import ExplainError
from deuteron.formats.files import OutputError, check_writable
from deuteron.model.devices import NAMED_DEVICES
from deuteron.process.terminal import say

if TYPE_CHECKING:
    from deuteron.explain.report import ExplainReport

STAGES = ("ttir", "ttgir", "llir", "ptx", "sass", "amdgcn")


DESCRIPTION = """\
Run a Python script, a module (-m) or pytest; capture every distinct kernel specialization it
launches (signature, constexprs, 16-divisibility of pointers and integers, num_warps,
num_stages), cross-compile each for --target (no GPU needed: without one the kernels run in
Triton's interpreter), and report registers, spills, shared memory, occupancy, the SASS
instruction mix and findings with concrete fixes. With --stage and --line, print the IR a
source line became; with --passes, the compiler passes; with --profile, rank kernels by the
time a recorded profile says they took.

examples:
  deuteron explain examples/vector_add.py  # every kernel, for the local GPU or sm90
  deuteron explain --target cuda:80,cuda:90 kernel.py  # the same kernels on two GPUs
  deuteron explain --stage ptx --line 21 kernel.py  # the PTX that source line 21 became
  deuteron explain --profile deuteron.hatchet train.py  # kernels ranked by their measured time"""


def add_parser(sub: Any) -> None:
    """Registers ``deuteron explain``: one argparse table, in the order ``-h`` shows it.

    ``--device`` here names the peaks for ``--profile``, not the GPU the emulated driver answers for,
    so this command does not take :func:`deuteron.cli.program.add_device_argument`.
    """
    p = add_command(
        sub,
        "explain",
        "show what Triton's compiler made of each kernel a script launches, and what to change",
        DESCRIPTION,
        usage=f"deuteron explain [options] {USAGE}",
    )
    p.add_argument(
        "--target",
        dest="gpu_target",
        metavar="T",
        help="cuda:80, cuda:90, cuda:100, hip:gfx942, ...; several with "
        "commas (default: the local GPU, else cuda:90)",
    )
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE")
    p.add_argument(
        "--stage", choices=STAGES, help="print this IR stage, each line tagged with its source line"
    )
    p.add_argument(
        "--line",
        type=int,
        metavar="N",
        help="only what source line N became (with --stage; alone, every stage)",
    )
    p.add_argument("--passes", action="store_true", help="list the MLIR passes the compiler ran, in order")
    p.add_argument(
        "--pass",
        dest="pass_name",
        metavar="PASS",
        help="the IR before and after one pass (a name such as TritonGPUCoalesce, or an index from --passes)",
    )
    p.add_argument(
        "--profile",
        metavar="FILE",
        help="a hatchet profile (deuteron run or Proton) to rank kernels by time × (1 − util)",
    )
    p.add_argument(
        "--device",
        metavar="NAME",
        help="device peaks for --profile when it has no device table "
        f"({', '.join(NAMED_DEVICES)}; default: the target's)",
    )
    p.add_argument("--kernel", metavar="NAME", help="only kernels whose name contains NAME")
    p.add_argument("--no-color", action="store_true", help="plain text report")
    add_program_arguments(p)
    p.set_defaults(handler=explain_command)


def _note(text: str) -> None:
    say(f"deuteron explain: {text}")


class _Spinner:
    """Says which kernel is compiling; shown only once compiling starts, not while the script runs."""

    def __init__(self) -> None:
        self.status: Any = None

    def __call__(self, i: int, n: int, spec: Any) -> None:
        if self.status is None:
            from rich.console import Console

            self.status = Console(file=sys.stderr).status("")
            self.status.start()
        self.status.update(f"compiling {spec.name} for {spec.target.name} ({i}/{n})")

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()


def explain_command(args: argparse.Namespace) -> int:
    """Run the program with capture, compile what it launched, print the report, write ``--json``.

    Exit code: 2 when a kernel could not be explained, 1 when the program ended early or ``--json``
    failed, else the program's own. A child the program forked returns at once: the report is the
    parent's, and printing it twice would interleave two reports on one terminal.
    """
    # The explainer's machinery is imported when it runs, so other commands start fast.
    from deuteron.explain.runner import run as explain_run
    from deuteron.render.explain_report import render

    program = parse_program(args)
    targets = [t for t in args.gpu_target.split(",") if t.strip()] if args.gpu_target else None
    if args.line is not None and args.line < 1:
        raise ExplainError("--line must be 1 or more")
    json_path = check_writable(args.json, "--json") if args.json else None  # before the program runs
    spinner = _Spinner()
    owner = os.getpid()
    try:
        result = explain_run(
            program,
            targets=targets,
            kernel=args.kernel,
            profile=args.profile,
            device=args.device,
            passes=bool(args.passes or args.pass_name),
            note=_note,
            progress=spinner,
        )
    finally:
        spinner.stop()
    if os.getpid() != owner:
        return result.exit_code  # a child the program forked: the report is the parent's
    report = result.report
    if args.profile:
        from deuteron.explain.roofline import no_match

        unmatched = no_match(report.costs, (a.spec.name for a in report.kernels), f"--profile {args.profile}")
        if unmatched:
            _note(unmatched)
    out = sys.stdout
    if args.stage or args.line is not None or args.passes or args.pass_name:
        _render_views(report, args, out)
    else:
        render(report.as_json(), file=out, color=False if args.no_color else None)
    failed = ""
    if json_path is not None:
        try:
            report.write_json(json_path)
            say(f"deuteron explain: wrote {args.json}")
        except OutputError as exc:
            failed = str(exc)
    if result.ended_by:
        print(
            f"deuteron explain: {result.ended_by}; the report covers the kernels launched until then",
            file=sys.stderr,
        )
    if report.errors:
        for e in report.errors:
            say(f"deuteron: error: {e}")
        return 2
    if failed:
        say(f"deuteron: error: {failed}")
        return result.exit_code or 1
    return 1 if result.ended_by else result.exit_code


def _render_views(report: ExplainReport, args: argparse.Namespace, out: Any) -> None:
    from deuteron.explain.views import render_passes, render_stage

    for a in report.kernels:
        if args.passes or args.pass_name:
            try:
                render_passes(a, args.pass_name, out)
            except LookupError as exc:
                raise ExplainError(str(exc).strip("'\"")) from None
        if args.stage or args.line is not None:
            stages = [args.stage] if args.stage else [s for s in STAGES if s in a.stages]
            for stage in stages:
                if stage not in a.stages:
                    have = ", ".join(a.stages)
                    raise ExplainError(
                        f"--stage {stage}: {a.spec.target.name} has no {stage} (it has {have})"
                    )
                render_stage(a, stage, args.line, out)
