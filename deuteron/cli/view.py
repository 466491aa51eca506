"""``deuteron view``: a profile as a tree with raw and derived metrics, filtered, cut, or diffed."""

from __future__ import annotations

import argparse
import gc
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any

from .. import processors
from ..formats import hatchet
from ..metrics import (
    DERIVED_HELP,
    PROPERTY_METRICS,
    TIME,
    DeviceSpec,
    MetricError,
    MetricSpec,
    device_from_table_row,
    named_device,
    parse_metric,
)
from ..render.console import render_profile
from ..render.json_tree import render_json
from ..tree import Profile


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


def _device_lookup(
    p: Profile, override: DeviceSpec | None
) -> Callable[[Mapping[str, Any]], DeviceSpec | None]:
    if override is not None:
        return lambda _m: override
    rows: dict[str, DeviceSpec] = {}
    for dtype, table in p.devices.items():
        for dev_id, row in table.items():
            if isinstance(row, dict) and "arch" in row:
                rows.setdefault(str(dev_id), device_from_table_row(dtype, row))
    if not rows:
        return lambda _m: None
    first = next(iter(rows.values()))
    return lambda m: rows.get(str(m.get("device_id", "")), first)


def _prepare(p: Profile, args: argparse.Namespace) -> Profile:
    if args.include:
        p = processors.include(p, args.include)
    if args.exclude:
        p = processors.exclude(p, args.exclude)
    return p


def list_metrics(p: Profile) -> str:
    names = sorted(p.metric_names())
    lines = ["metrics in this profile:"]
    for n in names:
        kind = p.kind(n)
        lines.append(
            f"  {n}  ({'inclusive' if kind == 'inc' else 'exclusive' if kind == 'exc' else 'property'})"
        )
    lines.append("")
    lines.append(DERIVED_HELP)
    if not p.devices:
        lines.append("this profile has no device table: pass --device NAME for util and roofline_time")
    return "\n".join(lines)


def _parse_columns(
    names: list[str], available: set[str], device: str | None, has_table: bool
) -> tuple[list[MetricSpec], DeviceSpec | None]:
    """The columns asked for, and the device to judge util/roofline by (None: the profile's own)."""
    specs = [parse_metric(n, available - PROPERTY_METRICS) for n in names]
    override = named_device(device) if device else None
    needs_device = [s.label for s in specs if s.kind in ("util", "roofline")]
    if needs_device and override is None and not has_table:
        raise MetricError(
            f"{', '.join(needs_device)} needs a device: "
            "this profile has no device table, so pass --device (e.g. --device h100)"
        )
    return specs, override


def show(profile: Profile, metrics: list[str], device: str | None = None, file: Any = None) -> None:
    """Print a profile as ``deuteron view`` would (used by ``deuteron.profile().show()``)."""
    specs, override = _parse_columns(metrics, profile.metric_names(), device, bool(profile.devices))
    shown = processors.derive(profile, specs, _device_lookup(profile, override))
    render_profile(shown, [s.label for s in specs], file=file)


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
    other = hatchet.read(diff_path) if diff_path else None
    available = profile.metric_names() | (other.metric_names() if other else set())
    available -= PROPERTY_METRICS
    if args.metrics:
        names = [m for m in args.metrics.split(",") if m.strip()]
    elif TIME in available:
        names = ["time/ms"]
    elif available:
        names = [sorted(available)[0]]
    else:
        raise MetricError(f"{args.profile}: the profile has no metrics to show")
    specs, override = _parse_columns(names, available, args.device, bool(profile.devices))
    shown = processors.derive(_prepare(profile, args), specs, _device_lookup(profile, override))
    signed = False
    if other is not None:
        before = processors.derive(_prepare(other, args), specs, _device_lookup(other, override))
        shown = processors.diff(shown, before)
        signed = True
    first = specs[0].label
    if args.threshold is not None:
        t = args.threshold

        def above(n: Any, _depth: int) -> bool:
            v = n.metrics.get(first)
            return isinstance(v, (int, float)) and not math.isnan(v) and abs(v) >= t

        shown = processors.prune(shown, above)
    if processors.max_depth(shown) > args.depth:
        shown = processors.prune(shown, lambda _n, depth: depth <= args.depth)
    if args.sort:
        shown = processors.sort_children(shown, first)
    columns = [s.label for s in specs]
    if args.json:
        render_json(shown, columns, sys.stdout)
    else:
        render_profile(shown, columns, signed=signed)
    return 0
