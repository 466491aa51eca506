"""Proton's ``mode`` module: the profiling modes as objects, from :mod:`deuteron.collect.modes`."""

from deuteron.collect.modes import (
    BUFFER_STRATEGIES,
    BUFFER_TYPES,
    GRANULARITIES,
    METRIC_TYPES,
    MMA,
    SAMPLING_STRATEGIES,
    BaseMode,
    Default,
    InstrumentationMode,
    Optimize,
    PCSampling,
)

__all__ = [
    "BUFFER_STRATEGIES",
    "BUFFER_TYPES",
    "BaseMode",
    "Default",
    "GRANULARITIES",
    "InstrumentationMode",
    "METRIC_TYPES",
    "MMA",
    "Optimize",
    "PCSampling",
    "SAMPLING_STRATEGIES",
]
