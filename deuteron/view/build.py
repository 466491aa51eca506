"""What ``deuteron view`` shows, as a library: the columns asked for, the device that judges
``util`` and the roofline, and the processor chain (filter, derive, diff, cut, sort) that turns a
recorded profile into the tree a renderer prints. The command line, ``deuteron.profile().show()``
and the web UI all go through here, so they show the same numbers."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from deuteron.model.devices import DeviceSpec, device_from_table_row, named_device
from deuteron.model.errors import MetricError
from deuteron.model.metrics import CPU_TIME, DERIVED_HELP, PROPERTY_METRICS, TIME, MetricSpec, parse_metric
from deuteron.model.tree import LAUNCH_METADATA_STATE, Node, Profile
from deuteron.process.terminal import printable
from deuteron.view import processors


@dataclass
class ViewOptions:
    """One view's settings, as ``deuteron view``'s options name them (proton-viewer's, mostly).

    A dataclass rather than argparse's namespace, so the web UI and library callers ask for a view
    as the command does; the defaults are the command's.
    """

    metrics: list[str] | None = None  # None: time/ms, or the profile's first metric
    include: str | None = None  # keep only call paths through frames matching this regex
    exclude: str | None = None  # drop frames matching this regex and everything below
    depth: int = 100  # levels shown, ROOT the first (proton-viewer's -d)
    threshold: float | None = None  # hide frames whose first column is below this
    sort: bool = False  # children by the first column, largest first
    device: str | None = None  # a named device for util/roofline instead of the profile's
    name_format: str = "full"  # proton-viewer's -f: how much of a Python frame's name to show
    fold_repeats: bool = False  # layers.0, layers.1, ... as one frame layers.* (torch context)


@dataclass
class View:
    """The tree to print: each node's metrics are the columns, computed from inclusive values."""

    tree: Profile
    columns: list[str]
    signed: tuple[str, ...] = ()  # columns whose values carry a sign (a diff's changes)
    ranks: list[Profile] = field(default_factory=list)  # merged ranks: each one's tree of columns
    labels: list[str] = field(default_factory=list)  # merged ranks: the columns before min/median/max


def device_lookup(
    p: Profile, override: DeviceSpec | None
) -> Callable[[Mapping[str, Any]], DeviceSpec | None]:
    """Which device judges a node: ``override``, else the profile's row for the node's device_id."""
    if override is not None:
        return lambda _m: override
    rows: dict[str, DeviceSpec] = {}
    for dtype, table in p.devices.items():
        for dev_id, row in table.items():
            if isinstance(row, dict) and "arch" in row:
                rows.setdefault(str(dev_id), device_from_table_row(dtype, row))
    if not rows:
        return lambda _m: None
    # Only frames that ran on a device (kernels: they carry device_id) are judged by one, as in
    # proton-viewer; a scope's util would mix devices and count host time.
    return lambda m: rows.get(str(m["device_id"])) if "device_id" in m else None


def list_metrics(p: Profile) -> str:
    names = sorted(p.metric_names())
    lines = ["metrics in this profile:"]
    for n in names:
        kind = {"inc": "inclusive", "exc": "exclusive"}.get(p.kind(n), "property")
        lines.append(f"  {printable(n)}  ({kind})")
    lines.append("")
    lines.append(DERIVED_HELP)
    if not p.devices:
        lines.append("this profile has no device table: pass --device NAME for util and roofline_time")
    return "\n".join(lines)


def parse_columns(
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


def columns_of(profile: Profile, metrics: list[str], device: str | None = None) -> View:
    """The profile with just these columns, unfiltered (``deuteron.profile().show()``)."""
    if not metrics:
        raise MetricError("no metric to show; give one or more, e.g. time/ms,count")
    specs, override = parse_columns(metrics, profile.metric_names(), device, bool(profile.devices))
    shown = processors.derive(profile, specs, device_lookup(profile, override))
    return View(shown, [s.label for s in specs])


# Frames of Proton's launch-metadata state (work done to compute a kernel's launch metadata, not
# the workload): left out of every view, as proton-viewer leaves them out.
LAUNCH_METADATA_FRAMES = "^" + LAUNCH_METADATA_STATE


def _prepared(p: Profile, options: ViewOptions) -> Profile:
    """Before any sums: launch-metadata work out (it is not the workload), repeats folded."""
    if any(n.name.startswith(LAUNCH_METADATA_STATE) for n in p.root.walk()):
        p = processors.exclude(p, LAUNCH_METADATA_FRAMES)
    if options.fold_repeats:
        p = processors.fold_repeats(p)
    return p


def _renamed(p: Profile, options: ViewOptions) -> Profile:
    """Names formatted (``-f``) after ``-i``/``-e``, so a pattern matches a frame's whole name
    whatever the display shows, as in proton-viewer."""
    if options.name_format != "full":
        p = processors.rename(p, processors.NAME_FORMATS[options.name_format])
    return p


def _derived(
    p: Profile, specs: list[MetricSpec], override: DeviceSpec | None, options: ViewOptions
) -> Profile:
    """``-i``/``-e``, then the columns: every value is of what is left in view (a frame's time,
    ROOT's total), except a ``/%`` column, which is each frame's share of the whole run, so a
    filtered view still says how much of the run it shows. proton-viewer (Triton 3.9, llnl-hatchet
    2026.2.0) mixes the two: its raw columns (count, bytes) are of what is left, its derived ones
    (time/ms, avg_time, gbyte/s, %) of the whole run, so ``-m time/ms,count -i foo`` gives ROOT the
    run's time and the filtered count; docs/viewing.md lists the cases."""
    prepared = _prepared(p, options)
    filtered = _filtered(prepared, options)
    totals = None
    if filtered is not prepared and any(s.kind == "percent" for s in specs):
        totals = processors.run_totals(prepared)
    return processors.derive(_renamed(filtered, options), specs, device_lookup(p, override), totals)


def _filtered(p: Profile, options: ViewOptions) -> Profile:
    if options.include:
        p = processors.include(p, options.include)
    if options.exclude:
        p = processors.exclude(p, options.exclude)
    return p


def flat_inputs(
    profile: Profile, options: ViewOptions, source: str = "profile"
) -> tuple[list[MetricSpec], list[str], Any, Profile]:
    """What the flat view needs: the columns (as ``build`` picks them), the device lookup, and the
    tree after ``-i``/``-e`` and name formatting, before any sums."""
    available = profile.metric_names()
    specs, override = parse_columns(_column_names(options, available, source), available, options.device,
                                    bool(profile.devices))  # fmt: skip
    return (
        specs,
        [s.label for s in specs],
        device_lookup(profile, override),
        _renamed(_filtered(_prepared(profile, options), options), options),
    )


def _column_names(options: ViewOptions, available: set[str], source: str) -> list[str]:
    if not available:  # say why the profile is empty, whatever metrics were asked for
        raise MetricError(
            f"{source}: nothing was recorded in this profile (no kernel ran, no scope had metrics); "
            "for a PyTorch script on the CPU profile with -c torch (CPU time and flops per module and "
            "op); -c jax records GPU kernels, so it needs an NVIDIA GPU"
        )
    if options.metrics is not None:
        names = [m for m in options.metrics if m.strip()]
        if not names:
            raise MetricError("-m names no metric; give one or more, e.g. -m time/ms,count")
        return names
    if TIME in available:
        return ["time/ms"]
    if CPU_TIME in available:  # a CPU profile (-c torch without a GPU): its time, not its first name
        return ["cpu_time/ms"]
    return [sorted(available)[0]]


def build(
    profile: Profile,
    options: ViewOptions,
    base: Profile | None = None,
    source: str = "profile",
    minus: bool = False,
) -> View:
    """The view of ``profile`` under ``options``; against ``base``, when given, each column as old,
    new, ratio and change, or (``minus``, proton-viewer's diff) as one signed difference."""
    available = profile.metric_names() | (base.metric_names() if base else set())
    available -= PROPERTY_METRICS
    names = _column_names(options, available, source)
    specs, override = parse_columns(names, available, options.device, bool(profile.devices))
    shown = _derived(profile, specs, override, options)
    labels = [s.label for s in specs]
    if base is None:
        return _shaped(shown, labels, labels[0], options, signed=())
    before = _derived(base, specs, override, options)
    if minus:
        return _shaped(processors.diff(shown, before), labels, labels[0], options, signed=tuple(labels))
    shown = processors.compare(shown, before, labels)
    columns = [f"{label} ({what})" for label in labels for what in processors.COMPARE]
    changes = tuple(f"{label} (change %)" for label in labels)
    return _shaped(shown, columns, f"{labels[0]} (new)", options, signed=changes)


def build_ranks(profiles: list[Profile], options: ViewOptions, source: str = "profiles") -> View:
    """Several profiles of one job (a file per rank) as one tree: each column's min, median and
    max over them, frame by frame. Cuts and sorting follow the first column's max, so a frame hot
    on any rank stays in view."""
    available: set[str] = set()
    for p in profiles:
        available |= p.metric_names()
    available -= PROPERTY_METRICS
    names = _column_names(options, available, source)
    specs, override = parse_columns(names, available, options.device, any(p.devices for p in profiles))
    derived = [_derived(p, specs, override, options) for p in profiles]
    labels = [s.label for s in specs]
    shown = processors.spread(derived, labels)
    columns = [f"{label} ({stat})" for label in labels for stat in processors.SPREAD]
    view = _shaped(shown, columns, f"{labels[0]} (max)", options, signed=())
    view.ranks, view.labels = derived, labels
    return view


def _shaped(
    shown: Profile, columns: list[str], first: str, options: ViewOptions, signed: tuple[str, ...]
) -> View:
    """Threshold, depth and order applied to a tree of columns."""
    if options.threshold is not None:
        t = options.threshold

        def above(n: Node) -> bool:
            v = n.metrics.get(first)
            return isinstance(v, (int, float)) and not math.isnan(v) and abs(v) >= t

        shown = processors.keep_paths_to(shown, above)
    if processors.max_depth(shown) >= options.depth:  # -d N: N levels, ROOT the first (proton-viewer's)
        shown = processors.prune(shown, lambda _n, depth: depth < max(options.depth, 1))
    if options.sort:
        shown = processors.sort_children(shown, first)
    return View(shown, columns, signed)


def kept_of_run(profile: Profile, options: ViewOptions, view: View, source: str = "profile") -> str | None:
    """What a filtered view's ROOT holds beside the run's total, in its first column (``12.300 of
    the run's 311.206 time/ms (4.0%)``); None where that column is no number at ROOT."""
    from dataclasses import replace

    from deuteron.render.console import format_cell

    label = view.columns[0]
    whole = build(
        profile, replace(options, include=None, exclude=None, depth=1, threshold=None), source=source
    )
    kept, total = view.tree.root.metrics.get(label), whole.tree.root.metrics.get(label)
    if (
        not isinstance(kept, (int, float))
        or not isinstance(total, (int, float))
        or kept != kept
        or total != total
    ):
        return None
    share = f" ({kept / total:.1%})" if total else ""
    return f"{format_cell(kept, label)} of the run's {format_cell(total, label)} {label}{share}"
