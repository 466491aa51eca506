"""Proton's ``viewer`` module: its functions on llnl-hatchet GraphFrames (``get_raw_metrics``,
``derive_metrics``, ``filter_frames``, ...), from :mod:`deuteron.view.graphframes`, imported on first
use so that ``deuteron view`` never needs hatchet. Deuteron's own view chain (what ``deuteron view``
and the web UI show) is :mod:`deuteron.view.build`."""

from __future__ import annotations

PROTON_FUNCTIONS = (
    "FactorDict", "apply_diff_profile", "avg_cpu_time_factor_dict", "avg_time_factor_dict",
    "bytes_factor_dict", "cpu_time_factor_dict", "derivable_metrics", "derive_metrics",
    "emit_warnings", "filter_frames", "format_frames", "get_min_time_bytes", "get_min_time_flops",
    "get_raw_metrics", "main", "match_available_metrics", "parse", "print_tree", "read",
    "remove_frames", "show_metrics", "time_factor_dict",
)  # fmt: skip


def __getattr__(name: str) -> object:
    if name in PROTON_FUNCTIONS:
        from deuteron.view import graphframes

        return getattr(graphframes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
