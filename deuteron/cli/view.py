"""``deuteron view``: a profile as a tree with raw and derived metrics, filtered, cut, or diffed."""

from __future__ import annotations

import argparse
import gc
import sys
from typing import Any

from ..formats import hatchet
from ..model.metrics import DERIVED_HELP
from ..render.console import render_profile
from ..render.json_tree import render_json
from ..viewer import ViewOptions, build, list_metrics


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "view",
        help="show a profile (ours or Proton's) as a tree",
        description="Show a profile as a tree of calling contexts with raw and derived metrics.",
        epilog=DERIVED_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("profile", help="a .hatchet file written by deuteron or Proton")
    _add_view_options(p)
    p.add_argument("--diff", metavar="OTHER", help="show PROFILE minus OTHER, node by node")
    p.set_defaults(handler=run_view)


def add_diff_parser(sub: Any) -> None:
    p = sub.add_parser(
        "diff",
        help="show the change from one profile to another",
        description="Show NEW minus OLD node by node (same as 'deuteron view NEW --diff OLD').",
        epilog=DERIVED_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("old", help="the baseline profile")
    p.add_argument("profile", metavar="new", help="the profile to compare with the baseline")
    _add_view_options(p)
    p.set_defaults(handler=lambda a: run_view(a, diff_path=a.old))


def _add_view_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-m", "--metrics", default=None, help="comma-separated metrics (default: time/ms, or the first one)"
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "-i", "--include", metavar="REGEX", help="keep only call paths through frames matching REGEX"
    )
    group.add_argument(
        "-e", "--exclude", metavar="REGEX", help="drop frames matching REGEX and everything below"
    )
    p.add_argument("-d", "--depth", type=_non_negative, default=100, help="deepest level to show (root is 0)")
    p.add_argument(
        "-t", "--threshold", type=float, default=None, help="hide frames whose first metric is below this"
    )
    p.add_argument("--sort", action="store_true", help="order children by the first metric, largest first")
    p.add_argument("--device", metavar="NAME", help="device for util/roofline: a100, l40s, h100, h200, b200")
    p.add_argument("--list-metrics", action="store_true", help="list the metrics this profile has, then exit")
    p.add_argument("--json", action="store_true", help="print the shown tree as JSON instead of text")


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("depth must be 0 or more")
    return value


def run_view(args: argparse.Namespace, diff_path: str | None = None) -> int:
    # Trees are acyclic and short-lived here; the cycle collector would rescan every node each
    # time a few hundred more are allocated, which costs more than all the rest on big profiles.
    gc.disable()
    try:
        return _view(args, diff_path)
    finally:
        gc.enable()


def _view(args: argparse.Namespace, diff_path: str | None) -> int:
    diff_path = diff_path or getattr(args, "diff", None)
    profile = hatchet.read(args.profile)
    if args.list_metrics:
        print(list_metrics(profile))
        return 0
    base = hatchet.read(diff_path) if diff_path else None
    options = ViewOptions(
        metrics=args.metrics.split(",") if args.metrics else None,
        include=args.include,
        exclude=args.exclude,
        depth=args.depth,
        threshold=args.threshold,
        sort=args.sort,
        device=args.device,
    )
    view = build(profile, options, base, source=args.profile)
    if args.json:
        render_json(view.tree, view.columns, sys.stdout)
    else:
        render_profile(view.tree, view.columns, signed=view.signed)
    return 0
