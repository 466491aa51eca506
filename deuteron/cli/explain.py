"""``deuteron explain``: run a script, capture each kernel specialization it launches, cross-compile it
for a GPU target (no GPU needed), and report registers, spills, shared memory, occupancy, the SASS
mix, the IR stages mapped to source lines, and findings with concrete fixes.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..explain.errors import ExplainError
from ..explain.report import ExplainReport, render_passes, render_stage
from ..explain.targets import default_target, parse_target
from .target import (
    USAGE,
    add_target_arguments,
    run_to_end,
    unwritable,
)
from .target import parse_target as parse_run

STAGES = ("ttir", "ttgir", "llir", "ptx", "sass", "amdgcn")
# Named devices to judge a profile against when it carries no device table, by target.
_DEVICE_FOR = {"cuda:80": "a100", "cuda:89": "l40s", "cuda:90": "h100", "cuda:100": "b200"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "explain",
        help="show what Triton's compiler made of each kernel a script launches, and what to change",
        description=(
            "Run a Python script, a module (-m) or pytest; capture every distinct kernel specialization it\n"
            "launches (signature, constexprs, 16-divisibility of pointers and integers, num_warps,\n"
            "num_stages), cross-compile each for --target (no GPU needed: without one the kernels run in\n"
            "Triton's interpreter), and report registers, spills, shared memory, occupancy, the SASS\n"
            "instruction mix and findings with concrete fixes. With --stage and --line, print the IR a\n"
            "source line became; with --passes, the compiler passes; with --profile, rank kernels by the\n"
            "time a recorded profile says they took."
        ),
        usage=f"deuteron explain [options] {USAGE}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        "(a100, h100, h200, b200, l40s; default: the target's)",
    )
    p.add_argument("--kernel", metavar="NAME", help="only kernels whose name contains NAME")
    p.add_argument("--no-color", action="store_true", help="plain text report")
    add_target_arguments(p)
    p.set_defaults(handler=explain_command)


def _writable(path: str | None, option: str) -> None:
    problem = unwritable(path, option)
    if problem is not None:
        raise ExplainError(problem)


def _load_profile(path: str, device_name: str | None, target_name: str) -> tuple[dict[str, Any], str | None]:
    from ..explain.roofline import kernel_costs, profile_device
    from ..formats import hatchet
    from ..metrics import DeviceSpec, named_device

    profile = hatchet.read(path)
    recorded = profile_device(profile)
    device: DeviceSpec | None
    label: str | None
    if recorded is not None:
        device, label = recorded, f"sm_{recorded.arch}, {recorded.num_sms} SMs (from the profile)"
    else:
        name = device_name or _DEVICE_FOR.get(target_name)
        device = named_device(name) if name else None
        label = name
    return kernel_costs(profile, device), label


def explain_command(args: argparse.Namespace) -> int:
    kind, target, rest = parse_run(args)
    targets = (
        [parse_target(t) for t in args.gpu_target.split(",") if t.strip()]
        if args.gpu_target
        else [default_target()]
    )
    if not targets:
        raise ExplainError("--target: give at least one target, e.g. cuda:90")
    if args.line is not None and args.line < 1:
        raise ExplainError("--line must be 1 or more")
    _writable(args.json, "--json")
    if args.device and not args.profile:
        raise ExplainError("--device only applies with --profile")
    if args.profile and not os.path.isfile(args.profile):
        raise ExplainError(f"--profile {args.profile}: no such file")
    # Kernels must be compiled-mode JIT functions: the interpreter runs them launch by launch.
    os.environ.pop("TRITON_INTERPRET", None)
    # Without line info nothing maps back to source (Triton reads this once per process).
    os.environ.pop("TRITON_DISABLE_LINE_INFO", None)
    from ..explain.capture import Capture

    capture = Capture(targets)
    with capture:
        code, ended_by = run_to_end(kind, target, rest)
    for note in capture.errors:
        print(f"deuteron explain: {note}", file=sys.stderr)
    specs = [s for s in capture.specs.values() if not args.kernel or args.kernel in s.name]
    if not specs:
        what = f" named like {args.kernel!r}" if args.kernel else ""
        raise ExplainError(
            f"no Triton kernel{what} was launched by {target}"
            + (f" ({ended_by})" if ended_by else "")
            + "; explain needs the script to launch at least one @triton.jit kernel"
        )
    costs: dict[str, Any] = {}
    device_label = None
    if args.profile:
        costs, device_label = _load_profile(
            args.profile, args.device, (capture.targets or [default_target()])[0].name
        )
    report = _compile_all(specs, args, costs, device_label)
    out = sys.stdout
    if args.stage or args.line is not None or args.passes or args.pass_name:
        _render_views(report, args, out)
    else:
        report.render(file=out, color=False if args.no_color else None)
    if args.json:
        print(f"deuteron explain: wrote {report.write_json(args.json)}", file=sys.stderr)
    if ended_by:
        print(
            f"deuteron explain: {ended_by}; the report covers the kernels launched until then",
            file=sys.stderr,
        )
    if report.errors:
        for e in report.errors:
            print(f"deuteron: error: {e}", file=sys.stderr)
        return 2
    return 1 if ended_by else code


def _compile_all(
    specs: list[Any], args: argparse.Namespace, costs: dict[str, Any], device: str | None
) -> ExplainReport:
    from rich.console import Console

    from ..explain.analysis import analyse
    from ..explain.compiler import compile_spec

    report = ExplainReport(costs=costs, device=device)
    console = Console(file=sys.stderr)
    with console.status("") as status:
        for i, spec in enumerate(specs, start=1):
            status.update(f"compiling {spec.name} for {spec.target.name} ({i}/{len(specs)})")
            try:
                compiled = compile_spec(spec, passes=bool(args.passes or args.pass_name))
                report.kernels.append(analyse(compiled))
            except ExplainError as exc:  # this kernel only; the others are still explained
                report.errors.append(str(exc))
            except Exception as exc:  # a tool or format we did not expect: say which kernel, go on
                report.errors.append(
                    f"{spec.name} on {spec.target.name}: analysis failed ({type(exc).__name__}: {exc}); "
                    "please report this with the kernel"
                )
    return report


def _render_views(report: ExplainReport, args: argparse.Namespace, out: Any) -> None:
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
