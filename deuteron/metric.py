"""Proton's ``metric`` module: metric values the GPU computes (device tensors), read without a host
sync, from :mod:`deuteron.collect.deferred`."""

from deuteron.collect.deferred import (
    REPLAY_BUFFER,
    REPLAY_SLOTS,
    DeferredValue,
    ReplayedMetric,
    TensorMetric,
    Times,
    capturing,
    is_metric_value,
    replayed_metrics,
    reserve_replay_buffer,
    resolved,
    times,
    transform_tensor_metrics,
)

__all__ = [
    "DeferredValue",
    "REPLAY_BUFFER",
    "REPLAY_SLOTS",
    "ReplayedMetric",
    "TensorMetric",
    "Times",
    "capturing",
    "is_metric_value",
    "replayed_metrics",
    "reserve_replay_buffer",
    "resolved",
    "times",
    "transform_tensor_metrics",
]
