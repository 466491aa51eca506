"""Proton's low-level calls (``triton._C.libproton.proton``), on Deuteron's engine.

``import deuteron.collect.libproton as libproton`` stands in for Proton's native module where a
call means something here: sessions by position (``start(path, context, data, backend, mode="")``),
scopes by id (``record_scope``, ``enter_scope(id, name)``, ``add_metrics(id, metrics)``), ops
(``enter_op``: the next launch is filed under that name, for ``hook="triton"`` sessions), states,
data phases, the context's depth, and which backend ("profiler") serves which Triton backend.
``TensorMetric`` and the ``metric_type_*_index`` constants are Proton's descriptor of a device
value (a raw address and a type): they are kept as data, and ``add_metrics`` refuses them, as
Deuteron reads device values from the tensors themselves (pass the tensor in ``metrics``).

Left out, because nothing in Deuteron's engine does what they do (docs/api.md lists them):
``init_function_metadata``/``destroy_function_metadata`` and ``enter_instrumented_op``/
``exit_instrumented_op`` (Proton's instrumentation runtime hands its device buffers to the native
profiler through them; Deuteron's instrumentation backend reads its own), ``set_metric_kernels``
(Proton's kernels that copy device metrics; Deuteron launches its own ``<metric>`` copy), and
``has_amd_pc_sampling_source_locations`` (Deuteron has no AMD backend).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deuteron.collect import lifecycle, phases, scopes
from deuteron.collect.backends import auto_backend
from deuteron.collect.context.state import (
    COMPUTE_METADATA_SCOPE_NAME,
    COMPUTE_METADATA_SCOPE_PREFIX,
    enter_state,
    exit_state,
)
from deuteron.collect.launch_hook import LaunchHook
from deuteron.collect.registry import SessionError

metadata_scope_name = COMPUTE_METADATA_SCOPE_NAME
metadata_scope_prefix = COMPUTE_METADATA_SCOPE_PREFIX
# Proton's metric value types, by their place in its C++ variant (Triton 3.9's numbering)
metric_type_int64_index = 1
metric_type_double_index = 2
metric_type_vector_int64_index = 5
metric_type_vector_double_index = 6

# Deuteron's backends, named as Proton's registry names its profilers; the Triton backend each serves
PROFILERS = ("cupti", "interpreter", "instrumentation")
_FOR_TRITON_BACKEND = {"cuda": "cupti", "interpreter": "interpreter"}

__all__ = [
    "PROFILERS",
    "TensorMetric",
    "activate",
    "activate_all",
    "add_metrics",
    "advance_data_phase",
    "clear_data",
    "deactivate",
    "deactivate_all",
    "enter_op",
    "enter_scope",
    "enter_state",
    "exit_op",
    "exit_scope",
    "exit_state",
    "finalize",
    "finalize_all",
    "get_available_profilers",
    "get_context_depth",
    "get_data",
    "get_data_msgpack",
    "is_data_phase_complete",
    "metadata_scope_name",
    "metadata_scope_prefix",
    "metric_type_double_index",
    "metric_type_int64_index",
    "metric_type_vector_double_index",
    "metric_type_vector_int64_index",
    "record_scope",
    "select_backend",
    "select_profiler_from_triton_backend",
    "start",
]


@dataclass(frozen=True)
class TensorMetric:
    """Proton's descriptor of a device value: its address, its type's index, its element count."""

    ptr: int = 0
    index: int = 0
    size: int = 1


def start(path: str, context: str, data: str, backend: str, mode: str = "") -> int:
    """A session writing ``path`` plus the format's suffix, made active; its id."""
    session = lifecycle.start(path, context=context, data=data, backend=backend, mode=mode or None)
    if session is None:
        raise SessionError("profiling is disabled (DEUTERON_DISABLE or TRITON_PROTON_DISABLE)")
    return session


def activate(session_id: int) -> None:
    lifecycle.activate(session_id)


def activate_all() -> None:
    lifecycle.activate(None)


def deactivate(session_id: int, flushing: bool = False) -> None:
    lifecycle.deactivate(session_id, flushing)


def deactivate_all(flushing: bool = False) -> None:
    lifecycle.deactivate(None, flushing)


def finalize(session_id: int, output_format: str = "") -> None:
    lifecycle.finalize(session_id, output_format)


def finalize_all(output_format: str = "") -> None:
    lifecycle.finalize(None, output_format)


def record_scope() -> int:
    """A new scope id, one more than the last."""
    return scopes.new_scope_id()


def enter_scope(scope_id: int, name: str) -> None:
    scopes.enter_scope_with_id(scope_id, name)


def exit_scope(scope_id: int, name: str) -> None:
    scopes.exit_scope_with_id(scope_id, name)


def enter_op(scope_id: int, name: str) -> None:
    """The next launch on this thread is filed under ``name`` (sessions with ``hook="triton"``)."""
    LaunchHook().enter_op(name)


def exit_op(scope_id: int, name: str) -> None:
    LaunchHook().exit_op()


def add_metrics(scope_id: int, metrics: dict[str, Any], tensor_metrics: dict[str, Any] | None = None) -> None:
    """Metrics for the open scope ``scope_id``, added to its node when it closes."""
    if tensor_metrics:
        raise SessionError(
            "add_metrics: Deuteron reads a device value from its tensor, not from a raw address: "
            "pass the tensor itself in metrics"
        )
    scopes.add_scope_metrics(scope_id, dict(metrics))


def get_context_depth(session_id: int) -> int:
    """The scopes the calling thread has open in the session (0 while it records nothing)."""
    if lifecycle.find(session_id) is None:
        raise SessionError(f"Session has not been initialized: {session_id}")
    return lifecycle.depth(session_id) or 0


def get_data(session_id: int, phase: int) -> Any:
    return phases.get(session_id, phase)


def get_data_msgpack(session_id: int, phase: int) -> bytes | None:
    return phases.get_msgpack(session_id, phase)


def clear_data(session_id: int, phase: int, clear_up_to_phase: bool = False) -> None:
    phases.clear(session_id, phase, clear_up_to_phase)


def advance_data_phase(session_id: int) -> int | None:
    return phases.advance_phase(session_id)


def is_data_phase_complete(session_id: int, phase: int) -> bool:
    return phases.is_phase_complete(session_id, phase)


def get_available_profilers() -> list[str]:
    """Deuteron's backends, as Proton lists the profilers built into it."""
    return list(PROFILERS)


def select_profiler_from_triton_backend(triton_backend: str) -> str:
    """The backend that times kernels of this Triton backend (``cuda``: CUPTI; ``interpreter``:
    Triton's interpreter); ValueError for one Deuteron has none for (``hip``), as Proton says it."""
    found = _FOR_TRITON_BACKEND.get(triton_backend)
    if found is None:
        raise ValueError(f"No profiler registered for triton backend {triton_backend}")
    return found


def select_backend() -> str:
    """What ``backend=None`` picks here (Proton's ``profile._select_backend``): CUPTI where it can
    run, else the interpreter."""
    return auto_backend()
