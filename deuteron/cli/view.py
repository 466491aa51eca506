"""``deuteron view``: a profile as a tree with raw and derived metrics, filtered, cut, or diffed."""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from typing import Any

from deuteron.cli.arguments import add_command, number_in
from deuteron.cli.kernel_diff import add_kernel_options, is_kernel_diff, run_kernel_diff
from deuteron.formats import profile_stream
from deuteron.model.devices import NAMED_DEVICES
from deuteron.model.errors import DeuteronError, MetricError
from deuteron.model.metrics import DERIVED_HELP, PROPERTY_METRICS
from deuteron.model.names import display_name
from deuteron.process.terminal import printable, say
from deuteron.render.console import render_flat, render_flat_ranks, render_profile
from deuteron.render.json_tree import render_json
from deuteron.view import advise, doctor, processors
from deuteron.view.build import ViewOptions, build, build_ranks, flat_inputs, kept_of_run, list_metrics
from deuteron.view.findings import findings as advice_findings
from deuteron.view.flat import flat_rows, spread_rows
from deuteron.view.job_summary import job_summary_lines, straggler_rank
from deuteron.view.jobs import check_one_job, rank_of
from deuteron.view.summary import summary_lines, unrelated

_non_negative = number_in(int, "a whole number", lambda value: value >= 0, "depth must be 0 or more")


VIEW_DESCRIPTION = """\
Show a profile as a tree of calling contexts with raw and derived metrics.

examples:
  deuteron view deuteron.hatchet -m time/ms,count,gbyte/s  # the tree with three columns
  deuteron view deuteron.hatchet --flat 20  # the 20 frame names with most time, over the tree
  deuteron view deuteron.hatchet -i attn --sort -d 6  # paths through frames holding attn, largest first
  deuteron view deuteron.rank*.hatchet  # ranks merged: min, median, max per frame
  deuteron view deuteron.rank*.hatchet --flat  # names over the ranks (--summary: the job's), the straggler
  deuteron view deuteron.rank*.hatchet --advise  # each rank's compute and waits; straggler
  deuteron view new.hatchet --diff old.hatchet  # old, new, ratio and change per frame
  deuteron view deuteron.hatchet --advise  # then what to look at, with evidence
  deuteron view deuteron.hatchet deuteron.chrome_trace --check  # do the numbers agree? (exit 1 if not)"""

DIFF_DESCRIPTION = """\
Compare NEW with OLD frame by frame: each metric as old, new, ratio (new / old) and change %
(the same as 'deuteron view NEW --diff OLD'; proton-viewer's NEW minus OLD is
'deuteron view NEW -diff OLD').

examples:
  deuteron diff before.hatchet after.hatchet -m time/ms,bytes
  deuteron diff before.hatchet after.hatchet --sort -t 0.01  # largest first, hide tiny frames
  deuteron diff before.hatchet after.hatchet --kernel matmul  # one kernel: time, calls, samples per line
  deuteron diff repro_a.py repro_b.py --kernel matmul_kernel  # two reproducers (deuteron repro):
      # registers, shared memory, occupancy, each IR stage's diff by source line, outputs compared"""


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "view",
        "show a profile (ours or Proton's) as a tree",
        VIEW_DESCRIPTION,
        epilog=DERIVED_HELP,
    )
    p.add_argument(
        "profile",
        nargs="+",
        help="a .hatchet file written by deuteron or Proton; several (one per rank: NAME.rank*.hatchet) "
        "are shown merged, each column as its min, median and max over them",
    )
    _add_view_options(p)
    p.add_argument(
        "--check",
        action="store_true",
        help="instead of the tree, check each file (a profile, ours or Proton's, or a Chrome trace) "
        "against the rules its numbers keep; several profiles also as one job's ranks (exit 1 on a break)",
    )
    p.add_argument(
        "--diff",
        metavar="OTHER",
        help="compare with OTHER, the baseline: old, new, ratio and change %% per metric",
    )
    p.add_argument(
        "--diff-profile",
        "-diff",
        dest="diff_profile",
        metavar="OTHER",
        help="proton-viewer's diff: this profile minus OTHER, one signed column per metric",
    )
    p.set_defaults(handler=run_view)


def add_diff_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "diff",
        "show the change from one profile to another",
        DIFF_DESCRIPTION,
        epilog=DERIVED_HELP,
    )
    p.add_argument("old", help="the baseline profile (or reproducer, .py)")
    p.add_argument(
        "profile", metavar="new", help="the profile (or reproducer, .py) to compare with the baseline"
    )
    _add_view_options(p)
    add_kernel_options(p)
    p.set_defaults(handler=run_diff)


def run_diff(args: argparse.Namespace) -> int:
    """``deuteron diff``: one kernel (``--kernel``, or two reproducers) or the two whole trees."""
    if is_kernel_diff(args):
        return run_kernel_diff(args)
    return run_view(args, diff_path=args.old)


def _add_view_options(p: argparse.ArgumentParser) -> None:
    """The options ``view`` and ``diff`` share, so the two commands cannot drift apart.

    Names and meanings follow proton-viewer's (``-m``, ``-i``, ``-e``, ``-d``, ``-t``, ``-f``,
    ``--print-sorted``) so its users' command lines work unchanged.
    """
    p.add_argument(
        "-m", "--metrics", default=None, help="comma-separated metrics (default: time/ms, or the first one)"
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "-i",
        "--include",
        metavar="PATTERN",
        help="keep only call paths through frames matching PATTERN: text or a regex found anywhere in "
        "a name, case ignored, as deuteron serve's filter (a C++ kernel matches by its shown short "
        "name, its full demangled name or its raw mangled name); ROOT shows the sum of what is kept",
    )
    group.add_argument(
        "-e",
        "--exclude",
        metavar="PATTERN",
        help="drop frames matching PATTERN and everything below (names matched as -i matches them)",
    )
    p.add_argument(
        "-d",
        "--depth",
        type=_non_negative,
        default=100,
        help="levels to show, ROOT the first (as proton-viewer)",
    )
    p.add_argument(
        "-t", "--threshold", type=float, default=None, help="hide frames whose first metric is below this"
    )
    p.add_argument("--sort", action="store_true", help="order children by the first metric, largest first")
    p.add_argument(
        "-f",
        "--format",
        dest="name_format",
        choices=sorted(processors.NAME_FORMATS),
        default="full",
        help="how much of a Python frame's name (path/file.py:line@function) to show, as proton-viewer",
    )
    p.add_argument(
        "--full-names",
        action="store_true",
        help="show C++ kernels' full demangled names (default: short, vectorized_elementwise_kernel<…>; "
        "the files keep the raw mangled names, --json prints those)",
    )
    p.add_argument(
        "--advise",
        action="store_true",
        help=(
            "after the tree, analyses with their evidence: GPU idle share and launch-bound ops, modules "
            "by backward/forward, ops to fuse, copies and waits (with --json: only the analyses, as JSON)"
        ),
    )
    p.add_argument(
        "--fold-repeats",
        action="store_true",
        help="repeated modules as one frame: layers.0, layers.1, ... become layers.* (-c torch profiles)",
    )
    p.add_argument(
        "--print-sorted",
        "--print_sorted",
        dest="print_sorted",
        action="store_true",
        help="after the tree, every frame by its first metric, largest first (proton-viewer's list)",
    )
    p.add_argument(
        "--device",
        metavar="NAME",
        help=f"device for util/roofline: {', '.join(NAMED_DEVICES)}",
    )
    p.add_argument(
        "-l",
        "--list",
        "--list-metrics",
        dest="list_metrics",
        action="store_true",
        help="list the metrics this profile has, then exit",
    )
    p.add_argument("--json", action="store_true", help="print the shown tree as JSON instead of text")
    p.add_argument(
        "--summary",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a few lines before the tree: GPU busy share, forward/backward/optimizer kernel time, top "
        "kernels; for several ranks the job's: each rank's ROOT as min/median/max, compute and "
        "communication, the straggler (default: on when printing to a terminal)",
    )
    p.add_argument(
        "--flat",
        nargs="?",
        const=30,
        type=_non_negative,
        metavar="N",
        help="instead of the tree, every frame name summed over the tree (total and self), the top N "
        "(default 30; 0: all), largest total first: e.g. all the time in one kernel, under any module; "
        "for several ranks, each as min/median/max over them, with the straggler marked",
    )


def run_view(args: argparse.Namespace, diff_path: str | None = None) -> int:
    # Trees are acyclic and short-lived here; the cycle collector would rescan every node each
    # time a few hundred more are allocated, which costs more than all the rest on big profiles.
    gc.disable()
    try:
        return _view(args, diff_path)
    finally:
        gc.enable()


def _view(args: argparse.Namespace, diff_path: str | None) -> int:
    """``view`` and ``diff`` after argparse: read the profiles, build the view, print it.

    One function so each combination (several ranks, ``--diff`` or ``-diff``, ``--advise`` with or
    without ``--json``) is refused or handled in one place, before any output is printed.
    """
    minus = getattr(args, "diff_profile", None)
    if minus and (diff_path or getattr(args, "diff", None)):
        raise DeuteronError("--diff and -diff/--diff-profile: give one of them")
    diff_path = diff_path or getattr(args, "diff", None) or minus
    sources = args.profile if isinstance(args.profile, list) else [args.profile]
    if getattr(args, "check", False):
        if diff_path:
            raise DeuteronError("--check reads each file as it is: give no --diff")
        lines, ok = doctor.report(*doctor.check_files(sources))
        for line in lines:
            print(printable(line))
        return 0 if ok else 1
    if len(sources) > 1 and diff_path:
        raise DeuteronError("--diff compares one profile with another: give one profile, not several")
    profiles = [profile_stream.read_profile(path) for path in sources]
    for path, read in zip(sources, profiles, strict=True):
        stream = read.metadata.get("stream")
        if isinstance(stream, dict):
            say(f"deuteron view: {_stream_note(path, stream)}")
    if len(profiles) > 1:
        for note in check_one_job(profiles, sources):
            say(f"deuteron view: {note}")
    profile = profiles[0]
    if args.list_metrics:
        print(list_metrics(processors.merge(profiles) if len(profiles) > 1 else profile))
        return 0
    base = profile_stream.read_profile(diff_path) if diff_path else None
    if base is not None:
        _warn_if_contexts_differ(base, diff_path or "", profile, sources[0])
        _warn_if_unrelated(base, diff_path or "", profile, sources[0])
    options = ViewOptions(
        metrics=args.metrics.split(",") if args.metrics else None,
        include=args.include,
        exclude=args.exclude,
        depth=args.depth,
        threshold=args.threshold,
        sort=args.sort,
        device=args.device,
        name_format=args.name_format,
        fold_repeats=args.fold_repeats,
    )
    if getattr(args, "flat", None) is not None:
        if base is not None:
            raise DeuteronError("--flat shows one profile or one job's ranks: give no --diff")
        if len(profiles) > 1:
            return _flat_ranks(profiles, sources, options, args)
        return _flat(profile, options, args)
    if len(profiles) > 1:
        view = build_ranks(profiles, options, source=", ".join(sources))
    else:
        view = build(profile, options, base, source=sources[0], minus=bool(minus))
    filtered = bool(args.include or args.exclude)
    filtered_out = filtered and not view.tree.root.children
    if base is None and len(profiles) == 1 and not filtered_out:  # an empty filter is said below
        _say_empty_columns(view, profile, filtered)
    which = f"-i {args.include!r}" if args.include else f"-e {args.exclude!r}"
    if filtered_out:
        say(
            f"deuteron view: {which} leaves no frame below ROOT (a pattern matches a name holding it "
            "as text or as a regular expression, case ignored)"
        )
    elif filtered and base is None and len(profiles) == 1 and not args.json:
        kept = kept_of_run(profile, options, view, source=sources[0])
        if kept is not None:
            say(f"deuteron view: {which} keeps {kept}")
    if args.advise:  # one file, or several ranks: side by side, and the straggler
        findings = advice_findings(profiles, sources)  # as deuteron serve's advice panel shows them
        if args.json:
            json.dump({"advice": [f.as_json() for f in findings]}, sys.stdout, indent=1)
            print()
            return 0
    if args.json:
        render_json(view.tree, view.columns, sys.stdout)
    else:
        full = bool(getattr(args, "full_names", False))
        wanted = getattr(args, "summary", None)
        if (sys.stdout.isatty() if wanted is None else wanted) and base is None:
            if len(profiles) == 1:
                lines = summary_lines(profile, full_names=full, source=sources[0])
            else:  # the job's: each rank's ROOT (min, median, max), compute, waits, the straggler
                ranks = [rank_of(p, i) for i, p in enumerate(profiles)]
                lines = job_summary_lines(profiles, ranks, view.labels, view.ranks)
            for line in lines:
                print(printable(line))
        render_profile(view.tree, view.columns, signed=view.signed, full_names=full)
        if args.print_sorted:
            _print_sorted(view.tree, view.columns[0], full)
        if args.advise:
            print()
            for line in advise.render(findings, full_names=full).splitlines():
                print(printable(line))
    return 0


def _stream_note(path: str, stream: dict[str, Any]) -> str:
    """What a run's stream (``deuteron run --flush-every``) holds: its run did not write its
    profile, so it was stopped (killed, or still running); a record cut mid-write is left out."""
    flushes = stream.get("flushes", 0)
    last = stream.get("last_flush_time")
    when = f", the last at {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(last))}" if last else ""
    note = f"{path} holds {flushes:,} flush{'es' if flushes != 1 else ''} of a run that has not ended{when}"
    cut = stream.get("cut_bytes", 0)
    if cut:
        note += f"; the record after it was cut mid-write ({cut:,} bytes) and is left out"
    return note


def _flat(profile: Any, options: ViewOptions, args: argparse.Namespace) -> int:
    """``--flat``: the tree's frames summed by name (with -i/-e applied first)."""
    specs, columns, device_for, tree = flat_inputs(profile, options, source=str(args.profile[0]))
    rows = flat_rows(tree, specs, device_for)
    if args.flat:
        rows = rows[: args.flat]
    if args.json:
        shown = [{"name": r.name, "total": r.total, "self": r.own, "places": r.places} for r in rows]
        json.dump({"columns": columns, "rows": shown}, sys.stdout, indent=1, default=str)
        print()
        return 0
    render_flat(rows, columns, full_names=bool(getattr(args, "full_names", False)))
    return 0


def _flat_ranks(
    profiles: list[Any], sources: list[str], options: ViewOptions, args: argparse.Namespace
) -> int:
    """``--flat`` of one job's ranks: each rank's flat view (``-i``/``-e`` applied first), then per
    name its min, median and max over the ranks, the rank with the largest total beside, the
    straggler's marked."""
    per_rank = []
    columns: list[str] = []
    for profile, source in zip(profiles, sources, strict=True):
        specs, columns, device_for, tree = flat_inputs(profile, options, source=source)
        per_rank.append(flat_rows(tree, specs, device_for))
    ranks = [rank_of(p, i) for i, p in enumerate(profiles)]
    rows = spread_rows(per_rank, ranks)
    if args.flat:
        rows = rows[: args.flat]
    straggler = straggler_rank(profiles)
    if args.json:
        stats = processors.SPREAD

        def named(values: list[tuple[float, float, float]]) -> dict[str, dict[str, float]]:
            return {c: dict(zip(stats, v, strict=True)) for c, v in zip(columns, values, strict=True)}

        shown = [
            {
                "name": r.name,
                "total": named(r.total),
                "self": named(r.own),
                "places": r.places,
                "max_rank": r.max_rank,
            }
            for r in rows
        ]
        doc = {"columns": columns, "ranks": ranks, "straggler": straggler, "rows": shown}
        json.dump(doc, sys.stdout, indent=1, default=str)
        print()
        return 0
    render_flat_ranks(rows, columns, straggler, full_names=bool(getattr(args, "full_names", False)))
    return 0


def _say_empty_columns(view: Any, profile: Any, filtered: bool = False) -> None:
    """A column with no value in any frame is said, in one line, with what the profile does have;
    when every column is empty that is the error (exit 2), not a tree of dashes, unless ``-i``/``-e``
    chose frames without it (then the tree is shown and the line says so)."""
    empty = [
        c
        for c in view.columns
        if not any(isinstance(n.metrics.get(c), (int, float)) and n.metrics.get(c) == n.metrics.get(c)
                   for n in view.tree.root.walk())
    ]  # fmt: skip
    if not empty:
        return
    has = sorted(profile.metric_names() - PROPERTY_METRICS)
    hint = ""
    if "cpu_time (ns)" in has:
        hint = "; for its CPU time: -m cpu_time/ms" + (",calls" if "calls" in has else "")
    elif "time (ns)" in has:
        hint = "; for its time: -m time/ms"
    if filtered:
        say(f"deuteron view: no frame that -i/-e leave in view has {', '.join(empty)}")
        return
    text = f"no frame has {', '.join(empty)}: this profile has {', '.join(has)}{hint}"
    if len(empty) == len(view.columns):
        raise MetricError(text)
    say(f"deuteron view: {text}")


def _print_sorted(tree: Any, column: str, full_names: bool = False) -> None:
    """proton-viewer's ``--print-sorted``: every frame but ROOT by the first column, largest first."""
    rows = []
    for n in tree.root.walk():
        value = n.metrics.get(column)
        if n is not tree.root and isinstance(value, (int, float)) and value == value:  # not NaN
            rows.append((value, display_name(n.name, full_names)))
    rows.sort(key=lambda r: -r[0])
    print(f"Sorted frames by {printable(column)}")
    for value, name in rows:
        shown = name if len(name) <= 100 else name[:100] + "..."
        print(f"{printable(shown):105} {value:.4g}")


def _warn_if_unrelated(old: Any, old_path: str, new: Any, new_path: str) -> None:
    """Two profiles of different programs pair no frame: every row would show as added or removed,
    which reads like a result; say so first."""
    if unrelated(old, new):
        say(
            f"deuteron: warning: {old_path} and {new_path} share no frame name: they look like profiles of "
            "different programs, so every row shows as added or removed"
        )


def _warn_if_contexts_differ(old: Any, old_path: str, new: Any, new_path: str) -> None:
    """Profiles made with different contexts (scopes vs Python call paths) have different frames:
    their diff pairs nothing below ROOT, so say why before showing it."""
    a, b = old.metadata.get("context"), new.metadata.get("context")
    if a and b and a != b:
        say(
            f"deuteron: warning: {old_path} was recorded with context {a!r} and {new_path} with {b!r}: "
            "their frames differ, so most rows show as added or removed"
        )
