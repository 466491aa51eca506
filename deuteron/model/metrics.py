"""Metric names, their aggregation kinds, and the metrics derived from them for viewing.

Names and suffix rules follow Proton so that profiles move freely between the two tools:
a metric is inclusive by default (summed at a node and propagated to its ancestors);
a name ending in ``(exc)`` is exclusive (summed at a node, never propagated); a name ending
in ``(pty)`` is a property (the last value wins, never propagated). Files store names
without the suffix; the kind travels in the profile's metadata.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from deuteron.model.devices import DeviceSpec
from deuteron.model.errors import MetricError

INC, EXC, PTY = "inc", "exc", "pty"
KINDS = (INC, EXC, PTY)

TIME = "time (ns)"
CPU_TIME = "cpu_time (ns)"
COUNT = "count"
CALLS = "calls"  # how many times a module, op or scope frame was entered (exclusive: the frame's own)
BYTES = "bytes"
FLOPS = "flops"
FLOPS_WIDTHS = (8, 16, 32, 64)

# Metrics that measure a frame's whole span (its nested frames inside it), recorded exclusive in
# Proton's sense (never summed upward, since the frames below are already inside): a frame's
# inclusive value is its own, or its children's sum where that is larger (children on other
# threads, a backward filed under its module) or where it has none (ROOT, an untimed frame). So
# every summable metric obeys one rule: a frame covers its children, and ROOT holds the run's total.
SPAN_METRICS = frozenset({CPU_TIME})

# Kernel metrics that describe where a kernel ran rather than what it cost.
PROPERTY_METRICS = frozenset({"device_id", "device_type", "stream_id", "grid"})


def span_names(kinds: Mapping[str, str]) -> frozenset[str]:
    """The span metrics of a profile with these kinds (a file that sums cpu_time as inclusive
    keeps the plain rule)."""
    return frozenset(n for n in SPAN_METRICS if kinds.get(n, INC) == EXC)


def split_kind(name: str) -> tuple[str, str]:
    """Strip a Proton-style ``(exc)``/``(pty)`` suffix and say which kind it denotes."""
    stripped = name.rstrip()
    for kind in (EXC, PTY):
        suffix = f"({kind})"
        if stripped.endswith(suffix):
            return stripped[: -len(suffix)].rstrip(), kind
    return stripped, INC


# --- derived metrics -----------------------------------------------------------------------------

_TIME_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
_RATE_PREFIX = {"": 1.0, "g": 1e9, "t": 1e12}
_RATE_RE = re.compile(r"^(?P<prefix>[gt]?)(?P<what>flop|byte)(?P<width>8|16|32|64)?/s$")
_TIME_RE = re.compile(r"^(?P<avg>avg_)?(?P<which>time|cpu_time|roofline_time)/(?P<unit>s|ms|us|ns)$")


@dataclass(frozen=True)
class MetricSpec:
    """A metric the viewer can show: a raw metric or one derived from raw ones."""

    label: str
    kind: str  # "raw", "time", "rate", "util", "percent", "roofline"
    raw: str = ""
    factor: float = 1.0
    average: bool = False
    time: str = TIME  # what a rate divides by: GPU time, or CPU time in a profile without GPU time


def parse_metric(name: str, available: set[str]) -> MetricSpec:
    """Turn a user's metric name (case and units ignored, as proton-viewer does) into a spec."""
    text = name.strip().lower()
    if not text:
        raise MetricError("empty metric name")
    m = _TIME_RE.match(text)
    if m:
        unit = _TIME_UNITS[m["unit"]]
        which = m["which"]
        if which == "roofline_time":
            return MetricSpec(text, "roofline", factor=unit)
        raw = TIME if which == "time" else CPU_TIME
        return MetricSpec(text, "time", raw=raw, factor=unit, average=bool(m["avg"]))
    m = _RATE_RE.match(text)
    if m:
        raw = BYTES if m["what"] == "byte" else FLOPS + (m["width"] or "")
        if m["what"] == "byte" and m["width"]:
            raise MetricError(f"unknown metric {name!r}: byte rates take no width")
        # A CPU profile (-c torch without a GPU) has flops but no GPU time: its rates are per CPU second.
        time = CPU_TIME if TIME not in available and CPU_TIME in available else TIME
        return MetricSpec(text, "rate", raw=raw, factor=_RATE_PREFIX[m["prefix"]], time=time)
    if text == "util":
        return MetricSpec(text, "util")
    if text.endswith("/%"):
        raw = _match_raw(text[:-2], available, name)
        return MetricSpec(text, "percent", raw=raw)
    raw = _match_raw(text, available, name)
    return MetricSpec(raw, "raw", raw=raw)


def _match_raw(text: str, available: set[str], original: str) -> str:
    for raw in sorted(available):
        if text in (raw.lower(), raw.split("(")[0].strip().lower()):
            return raw
    listing = ", ".join(sorted(available)) or "none"
    hint = _closest(text, available)
    guess = f"did you mean {hint!r}? " if hint else ""
    raise MetricError(
        f"unknown metric {original!r}; {guess}this profile has: {listing} (see --list-metrics)"
    )


# Derived names a user may mean, beside the profile's own (a typo in one of them lands here too).
_DERIVED_NAMES = (
    "time/s", "time/ms", "time/us", "time/ns", "avg_time/ms", "cpu_time/ms", "flop/s", "gflop/s",
    "tflop/s", "byte/s", "gbyte/s", "tbyte/s", "util", "roofline_time/us",
)  # fmt: skip


def _closest(text: str, available: set[str]) -> str | None:
    """The likeliest intended name: a raw metric of this profile or a derived one, by spelling."""
    import difflib

    names = {raw.split("(")[0].strip().lower(): raw for raw in available}
    names.update({d: d for d in _DERIVED_NAMES})
    hits = difflib.get_close_matches(text, list(names), n=1, cutoff=0.6)
    return names[hits[0]] if hits else None


def flop_widths(metrics: Mapping[str, object]) -> list[int]:
    return [w for w in FLOPS_WIDTHS if f"{FLOPS}{w}" in metrics]


def roofline_seconds(metrics: Mapping[str, float], device: DeviceSpec) -> float:
    """The least time the device could take for this work: its flops or its bytes at peak."""
    flop_time = 0.0
    widths = flop_widths(metrics)
    for w in widths:
        flop_time += float(metrics.get(f"{FLOPS}{w}", 0.0)) / device.peak_flops(w)
    if not widths and FLOPS in metrics:
        # Width unknown: assume 16-bit operands, the common tensor-core case.
        flop_time = float(metrics[FLOPS]) / device.peak_flops(16)
    byte_time = float(metrics.get(BYTES, 0.0)) / device.peak_bytes_per_s()
    return max(flop_time, byte_time)


def _number(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _has_work(m: Mapping[str, Any]) -> bool:
    return BYTES in m or FLOPS in m or bool(flop_widths(m))


def compile_spec(
    spec: MetricSpec, total: Mapping[str, Any], device_for: Callable[[Mapping[str, Any]], DeviceSpec | None]
) -> Callable[[Mapping[str, Any]], float]:
    """A function from a node's inclusive metrics to the value of ``spec`` there (NaN where undefined).

    Built once per column, called once per node: the viewer's inner loop.
    """
    nan = math.nan
    raw, factor = spec.raw, spec.factor
    if spec.kind == "raw":  # a text property (a note, a device type) is shown as itself

        def value(m: Mapping[str, Any]) -> Any:
            v = m.get(raw)
            n = _number(v)
            return n if n is not None else (v if isinstance(v, str) else nan)

        return value
    if spec.kind == "time":
        if not spec.average:
            return lambda m: v / factor if (v := _number(m.get(raw))) is not None else nan

        # Per call: GPU time over the kernel launches (Proton's count), CPU time over the frame's
        # own entries (calls: a module's time per forward, not per kernel below it).
        per = COUNT if raw == TIME else CALLS

        def average(m: Mapping[str, Any]) -> float:
            v, count = _number(m.get(raw)), _number(m.get(per))
            return v / factor / count if v is not None and count else nan

        return average
    if spec.kind == "rate":

        per_time = spec.time

        def rate(m: Mapping[str, Any]) -> float:
            t, v = _number(m.get(per_time)), _number(m.get(raw))
            return v / (t * 1e-9) / factor if t and t > 0 and v is not None else nan

        return rate
    if spec.kind == "percent":
        whole = _number(total.get(raw))
        return lambda m: v / whole * 100.0 if (v := _number(m.get(raw))) is not None and whole else nan
    if spec.kind == "roofline":

        def roofline(m: Mapping[str, Any]) -> float:
            device = device_for(m)
            if device is None or not _has_work(m):
                return nan
            return roofline_seconds(m, device) * 1e9 / factor

        return roofline
    if spec.kind == "util":

        def util(m: Mapping[str, Any]) -> float:
            device, t = device_for(m), _number(m.get(TIME))
            if device is None or not t or t <= 0:
                return nan
            if not _has_work(m):
                return nan  # no bytes or flops counted: unknown, not 0 (proton-viewer prints 0)
            return roofline_seconds(m, device) / (t * 1e-9)

        return util
    raise MetricError(f"unknown metric kind {spec.kind!r}")


def evaluate(
    spec: MetricSpec, inc: Mapping[str, Any], total: Mapping[str, Any], device: DeviceSpec | None
) -> float:
    """The value of ``spec`` at one node (``compile_spec`` for many)."""
    return compile_spec(spec, total, lambda _m: device)(inc)


DERIVED_HELP = """\
derived metrics (case and units ignored):
  time/s|ms|us|ns, avg_time/*, cpu_time/*, avg_cpu_time/*   time (avg_: per kernel launch, per call for CPU)
  flop/s, gflop/s, tflop/s, and flop8|16|32|64 variants     flops / time (CPU time without GPU time)
  byte/s, gbyte/s, tbyte/s                                  bytes / time (CPU time without GPU time)
  util                                                      roofline time / time (needs a device)
  roofline_time/s|ms|us|ns                                  max(flops/peak, bytes/bandwidth) (needs a device)
  <metric>/%                                                share of the profile's total"""
