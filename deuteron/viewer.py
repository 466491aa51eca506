"""What ``deuteron view`` shows, as a library: the columns asked for, the device that judges
``util`` and the roofline, and the processor chain (filter, derive, diff, cut, sort) that turns a
recorded profile into the tree a renderer prints. The command line, ``deuteron.profile().show()``
and the web UI all go through here, so they show the same numbers."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import processors
from .model.devices import DeviceSpec, device_from_table_row, named_device
from .model.errors import MetricError
from .model.metrics import DERIVED_HELP, PROPERTY_METRICS, TIME, MetricSpec, parse_metric
from .model.tree import Node, Profile
from .render.text import printable


@dataclass
class ViewOptions:
    metrics: list[str] | None = None  # None: time/ms, or the profile's first metric
    include: str | None = None  # keep only call paths through frames matching this regex
    exclude: str | None = None  # drop frames matching this regex and everything below
    depth: int = 100  # deepest level shown (root is 0)
    threshold: float | None = None  # hide frames whose first column is below this
    sort: bool = False  # children by the first column, largest first
    device: str | None = None  # a named device for util/roofline instead of the profile's


@dataclass
class View:
    """The tree to print: each node's metrics are the columns, computed from inclusive values."""

    tree: Profile
    columns: list[str]
    signed: bool  # a diff: values carry a sign


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
    first = next(iter(rows.values()))
    return lambda m: rows.get(str(m.get("device_id", "")), first)


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
    return View(shown, [s.label for s in specs], signed=False)


def _filtered(p: Profile, options: ViewOptions) -> Profile:
    if options.include:
        p = processors.include(p, options.include)
    if options.exclude:
        p = processors.exclude(p, options.exclude)
    return p


def build(
    profile: Profile, options: ViewOptions, base: Profile | None = None, source: str = "profile"
) -> View:
    """The view of ``profile`` (minus ``base`` node by node, when given) under ``options``."""
    available = profile.metric_names() | (base.metric_names() if base else set())
    available -= PROPERTY_METRICS
    if options.metrics is not None:
        names = [m for m in options.metrics if m.strip()]
        if not names:
            raise MetricError("-m names no metric; give one or more, e.g. -m time/ms,count")
    elif TIME in available:
        names = ["time/ms"]
    elif available:
        names = [sorted(available)[0]]
    else:
        raise MetricError(f"{source}: the profile has no metrics to show")
    specs, override = parse_columns(names, available, options.device, bool(profile.devices))
    shown = processors.derive(_filtered(profile, options), specs, device_lookup(profile, override))
    signed = False
    if base is not None:
        before = processors.derive(_filtered(base, options), specs, device_lookup(base, override))
        shown = processors.diff(shown, before)
        signed = True
    first = specs[0].label
    if options.threshold is not None:
        t = options.threshold

        def above(n: Node, _depth: int) -> bool:
            v = n.metrics.get(first)
            return isinstance(v, (int, float)) and not math.isnan(v) and abs(v) >= t

        shown = processors.prune(shown, above)
    if processors.max_depth(shown) > options.depth:
        shown = processors.prune(shown, lambda _n, depth: depth <= options.depth)
    if options.sort:
        shown = processors.sort_children(shown, first)
    return View(shown, [s.label for s in specs], signed)
