"""Proton's viewer functions (``triton.profiler.viewer``) on llnl-hatchet GraphFrames.

Scripts written for Proton read profiles with ``viewer.get_raw_metrics``, ``derive_metrics``,
``filter_frames`` and friends, and then use hatchet's GraphFrame API (``gf.filter("MATCH ...")``,
``gf.dataframe``). ``deuteron.viewer`` hands out these functions (imported on first use), with
Proton's signatures and results, so such scripts run unchanged on Deuteron's files and Proton's.
They need ``llnl-hatchet`` (``pip install 'deuteron[hatchet]'``); ``deuteron view`` itself does not.
The numbers come from the same device models ``deuteron view`` uses (:mod:`deuteron.specs`).
"""

from __future__ import annotations

import json
import sys
from collections import namedtuple
from typing import Any

from deuteron.model.devices import max_bps, max_flops
from deuteron.model.errors import DeuteronError
from deuteron.model.metrics import FLOPS_WIDTHS
from deuteron.model.tree import LAUNCH_METADATA_STATE
from deuteron.view.processors import NAME_FORMATS

COMPUTE_METADATA_SCOPE_NAME = LAUNCH_METADATA_STATE  # Proton's names for the launch-metadata state
COMPUTE_METADATA_SCOPE_PREFIX = LAUNCH_METADATA_STATE + ":"


class HatchetMissing(DeuteronError, ImportError):
    """Proton's viewer functions work on llnl-hatchet GraphFrames, which are not installed."""


def _hatchet() -> Any:
    try:
        import hatchet
    except ImportError:
        raise HatchetMissing(
            "Proton's viewer functions need llnl-hatchet: pip install 'deuteron[hatchet]' "
            "(deuteron view does not)"
        ) from None
    return hatchet


FactorDict = namedtuple("FactorDict", ["name", "factor"])
_SECONDS = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
time_factor_dict = FactorDict("time", {f"time/{u}": f for u, f in _SECONDS.items()})
avg_time_factor_dict = FactorDict("avg_time", {f"avg_time/{u}": f for u, f in _SECONDS.items()})
cpu_time_factor_dict = FactorDict("cpu_time", {f"cpu_time/{u}": f for u, f in _SECONDS.items()})
avg_cpu_time_factor_dict = FactorDict("avg_cpu_time", {f"avg_cpu_time/{u}": f for u, f in _SECONDS.items()})
bytes_factor_dict = FactorDict("bytes", {"byte/s": 1, "gbyte/s": 1e9, "tbyte/s": 1e12})

derivable_metrics: dict[str, FactorDict] = {key: bytes_factor_dict for key in bytes_factor_dict.factor}
for _width in ("", *(str(w) for w in FLOPS_WIDTHS)):
    _flops = FactorDict(
        f"flops{_width}", {f"flop{_width}/s": 1, f"gflop{_width}/s": 1e9, f"tflop{_width}/s": 1e12}
    )
    derivable_metrics.update({key: _flops for key in _flops.factor})


def match_available_metrics(
    metrics: Any, inclusive_metrics: list[str], exclusive_metrics: list[str]
) -> list[str]:
    """The file's column for each asked metric (case and unit ignored); inclusive ones as
    ``"<name> (inc)"``. RuntimeError names the first metric not found."""
    asked = metrics if isinstance(metrics, list) else [metrics]
    found = []
    for metric in asked:
        wanted = str(metric).lower()
        for raw in inclusive_metrics + exclusive_metrics:
            if wanted in (raw, raw.split("(")[0].strip().lower()):
                found.append(raw + (" (inc)" if raw in inclusive_metrics else ""))
                break
        else:
            raise RuntimeError(f"Metric {metric} is not found. Use the --list flag to list available metrics")
    return found


def _bookkeeping(name: str) -> bool:
    return name == COMPUTE_METADATA_SCOPE_NAME or name.startswith(COMPUTE_METADATA_SCOPE_PREFIX)


def remove_frames(database: list[Any]) -> list[Any]:
    """The document without launch-metadata frames (with what is below them), frames with no
    metrics and no children, and parents left with only such children."""

    def keep(node: dict[str, Any]) -> dict[str, Any] | None:
        if "frame" not in node:  # the device table
            return node
        if _bookkeeping(node["frame"]["name"]) or (not node["metrics"] and not node["children"]):
            return None
        children = node.get("children", [])
        kept = [c for c in (keep(child) for child in children) if c is not None]
        if children and not kept:
            return None
        node["children"] = kept
        return node

    return [n for n in (keep(node) for node in database) if n is not None]


def get_raw_metrics(database: Any) -> tuple[Any, list[str], list[str], dict[str, Any]]:
    """(GraphFrame, inclusive metric names, exclusive ones, device table) of a hatchet document:
    the parsed list, or an open file holding one."""
    if hasattr(database, "read"):
        database = json.load(database)
    database = remove_frames(list(database))
    device_info = database.pop(1) if len(database) > 1 else {}
    gf = _hatchet().GraphFrame.from_literal(database)
    inclusive = gf.show_metric_columns()
    exclusive = [m for m in gf.dataframe.columns if m not in inclusive]
    return gf, inclusive, exclusive, device_info


def _frames_on(df: Any, device: str) -> Any:
    return df["device_id"] == device


def get_min_time_flops(df: Any, device_info: dict[str, Any]) -> Any:
    """Per frame: the seconds its flops take at the device's peak, summed over operand widths."""
    import pandas as pd

    out = pd.DataFrame(0.0, index=df.index, columns=["min_time"])
    for device_type, devices in device_info.items():
        for device, row in devices.items():
            on = _frames_on(df, device)
            for width in FLOPS_WIDTHS:
                column = f"flops{width}"
                if column in df.columns:
                    peak = max_flops(device_type, row["arch"], width, row["num_sms"], row["clock_rate"])
                    out.loc[on, "min_time"] += df.loc[on, column].fillna(0) / peak
    return out


def get_min_time_bytes(df: Any, device_info: dict[str, Any]) -> Any:
    """Per frame: the seconds its bytes take at the device's peak bandwidth."""
    import pandas as pd

    out = pd.DataFrame(0.0, index=df.index, columns=["min_time"])
    for device_type, devices in device_info.items():
        for device, row in devices.items():
            on = _frames_on(df, device)
            peak = max_bps(device_type, row["arch"], row["bus_width"], row["memory_clock_rate"])
            out.loc[on, "min_time"] += df.loc[on, "bytes"] / peak
    return out


def _seconds(df: Any, metric: str, factors: FactorDict, inclusive: list[str], exclusive: list[str]) -> Any:
    column = match_available_metrics(metric, inclusive, exclusive)[0]
    unit = column.split("(")[1].split(")")[0]  # "time (ns)" -> ns
    return df[column] * factors.factor[f"{factors.name}/{unit}"]


def derive_metrics(
    gf: Any,
    metrics: list[str],
    inclusive_metrics: list[str],
    exclusive_metrics: list[str],
    device_info: dict[str, Any],
) -> list[str]:
    """Add each asked metric as a column of ``gf.dataframe`` (derived ones computed, raw ones
    matched) and return the column names, as proton-viewer does."""
    import numpy as np

    df = gf.dataframe
    derived: list[str] = []
    times = (time_factor_dict, cpu_time_factor_dict, avg_time_factor_dict, avg_cpu_time_factor_dict)
    for metric in metrics:
        if metric == "util":  # the slower of flops and bytes at peak, over the time; device frames only
            at_peak = get_min_time_flops(df, device_info)["min_time"].combine(
                get_min_time_bytes(df, device_info)["min_time"], max
            )
            df["util"] = at_peak / _seconds(
                df, "time", time_factor_dict, inclusive_metrics, exclusive_metrics
            )
            df.loc[df["device_id"].isna(), "util"] = np.nan
            derived.append("util")
        elif metric in derivable_metrics:
            factors = derivable_metrics[metric]
            column = match_available_metrics(factors.name, inclusive_metrics, exclusive_metrics)[0]
            seconds = _seconds(df, "time", time_factor_dict, inclusive_metrics, exclusive_metrics)
            df[f"{metric} (inc)"] = df[column] / seconds / factors.factor[metric]
            derived.append(f"{metric} (inc)")
        elif any(metric in f.factor for f in times):
            factors = next(f for f in times if metric in f.factor)
            source = "cpu_time" if factors.name.endswith("cpu_time") else "time"
            base = cpu_time_factor_dict if source == "cpu_time" else time_factor_dict
            value = _seconds(df, source, base, inclusive_metrics, exclusive_metrics)
            if factors.name.startswith("avg_"):
                value = value / df["count (inc)"]
            df[f"{metric} (inc)"] = value / factors.factor[metric]
            derived.append(f"{metric} (inc)")
        elif "/" in metric:
            name, unit = metric.split("/", 1)
            if unit != "%":
                raise ValueError(f"Unsupported unit {unit}")
            column = match_available_metrics(name, inclusive_metrics, exclusive_metrics)[0]
            inclusive = "(inc)" in column
            total = df[column].iloc[0] if inclusive else df[column].sum()
            out = metric + (" (inc)" if inclusive else "")
            df[out] = df[column] / total * 100.0
            derived.append(out)
        else:
            derived.append(match_available_metrics(metric, inclusive_metrics, exclusive_metrics)[0])
    for column in derived:
        (gf.inc_metrics if column.endswith("(inc)") else gf.exc_metrics).append(column)
    return derived


def format_frames(gf: Any, format: str | None) -> Any:  # noqa: A002 - Proton's parameter name
    """Shorten frame names (``path/file.py:line@function``) as proton-viewer's ``-f`` does."""
    shorten = NAME_FORMATS.get(format or "full")
    if shorten is not None and format != "full":  # an unknown format leaves names, as Proton's does
        gf.dataframe["name"] = gf.dataframe["name"].apply(shorten)
    return gf


def filter_frames(
    gf: Any,
    include: str | None = None,
    exclude: str | None = None,
    threshold: float | None = None,
    metric: str | None = None,
) -> Any:
    """Keep paths through frames matching ``include``; drop frames matching ``exclude`` with what
    is below them; drop frames whose ``metric`` is under ``threshold`` (squashed, as Proton)."""
    if include:
        gf = gf.filter(f'MATCH ("*")->(".", p)->("*")\nWHERE p."name" =~ "{include}"', squash=True)
    if exclude:
        from hatchet.query import NegationQuery

        gf = gf.filter(NegationQuery(f'MATCH (".", p)->("*")\nWHERE p."name" =~ "{exclude}"'), squash=True)
    if threshold:
        gf = gf.filter(["*", {metric: f">= {threshold}"}], squash=True)
    return gf


def emit_warnings(gf: Any, metrics: list[str]) -> None:
    import numpy as np

    if "bytes (inc)" in metrics and np.nanmin(gf.dataframe["bytes (inc)"].values) < 0:
        print("Warning: Negative byte values detected, this is usually the result of a datatype overflow\n")


def print_tree(
    gf: Any,
    metrics: list[str],
    depth: int = 100,
    format: str | None = None,
    print_sorted: bool = False,  # noqa: A002
) -> None:
    gf = format_frames(gf, format)
    print(gf.tree(metric_column=metrics, expand_name=True, depth=depth, render_header=False))
    if print_sorted:
        print("Sorted kernels by metric " + metrics[0])
        ordered = gf.dataframe.sort_values(by=[metrics[0]], ascending=False)
        for row in range(1, len(ordered)):
            name = ordered.iloc[row]["name"]
            print(
                "{:105} {:.4}".format(
                    name[:100] + "..." if len(name) > 100 else name, ordered.iloc[row][metrics[0]]
                )
            )
    emit_warnings(gf, metrics)


def read(filename: str) -> tuple[Any, list[str], list[str], dict[str, Any]]:
    """The file's GraphFrame with inclusive columns filled in, and its metric names."""
    with open(filename) as f:
        gf, inclusive, exclusive, device_info = get_raw_metrics(json.load(f))
    if not inclusive + exclusive:
        raise ValueError(f"{filename}: no metrics found in the file")
    gf.update_inclusive_columns()
    return gf, inclusive, exclusive, device_info


def parse(
    metrics: list[str],
    filename: str,
    include: str | None = None,
    exclude: str | None = None,
    threshold: float | None = None,
) -> tuple[Any, list[str]]:
    gf, inclusive, exclusive, device_info = read(filename)
    derived = derive_metrics(gf, metrics, inclusive, exclusive, device_info)
    return filter_frames(gf, include, exclude, threshold, derived[0]), derived


def apply_diff_profile(
    gf: Any,
    derived_metrics: list[str],
    diff_file: str,
    metrics: list[str],
    include: str | None,
    exclude: str | None,
    threshold: float | None,
) -> Any:
    """``diff_file``'s values minus ``gf``'s, on the same derived columns."""
    other, _ = parse(metrics, diff_file, include, exclude, threshold)
    inclusive = [m for m in derived_metrics if m.endswith("(inc)")]
    exclusive = [m for m in derived_metrics if not m.endswith("(inc)")]
    for frame in (gf, other):
        frame.inc_metrics, frame.exc_metrics = list(inclusive), list(exclusive)
    return gf.sub(other)


def show_metrics(file_name: str) -> None:
    with open(file_name) as f:
        _, inclusive, exclusive, _ = get_raw_metrics(json.load(f))
    for title, names in (("inclusive", inclusive), ("exclusive", exclusive)):
        print(f"Available {title} metrics:")
        for raw in names:
            print(f"- {raw.split('(')[0].strip().lower()}")


def main() -> None:
    """proton-viewer's entry point: ``deuteron view`` with the same arguments (its options are
    proton-viewer's, with the same numbers)."""
    import subprocess

    sys.exit(subprocess.call([sys.executable, "-m", "deuteron", "view", *sys.argv[1:]]))
