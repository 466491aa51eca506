"""The CPU backend: kernels run in Triton's interpreter and carry exact bytes and flops.

``time (ns)`` is the interpreter's wall time for the launch (a CPU time, not a GPU one);
``bytes`` counts global loads and stores of active lanes (masked-off lanes excluded; an
atomic counts its read and its write); ``flops`` counts ``tl.dot`` only, 2*M*N*K per dot
(batch included), also split by operand width as ``flops8|16|32|64`` so util can use the
matching peak. Elementwise arithmetic, reductions and ``tl.dot_scaled`` are not counted.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import TYPE_CHECKING, Any

from ...metrics import BYTES, COUNT, FLOPS, TIME
from .. import launch_metadata_metrics
from . import adapter

if TYPE_CHECKING:
    from ...session import Session

_sessions: list[Session] = []


def enable_interpreter_mode() -> None:
    """Make kernels defined from now on run in the interpreter (Triton reads this at decoration)."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        if "triton" in sys.modules:
            warnings.warn(
                "deuteron: triton was imported before TRITON_INTERPRET=1 was set; kernels defined "
                "earlier are not interpreted and not profiled. Use `deuteron run script.py` or set "
                "TRITON_INTERPRET=1 before importing triton.",
                stacklevel=3,
            )
        os.environ["TRITON_INTERPRET"] = "1"


def launch_metrics(record: adapter.LaunchRecord) -> dict[str, Any]:
    metrics: dict[str, Any] = {
        COUNT: 1,
        TIME: record.end_ns - record.start_ns,
        BYTES: record.bytes_loaded + record.bytes_stored,
        "bytes_loaded": record.bytes_loaded,
        "bytes_stored": record.bytes_stored,
        FLOPS: sum(record.flops.values()),
        "programs": record.programs,
        "grid (pty)": "x".join(str(g) for g in record.grid),
        "device_id (pty)": "0",
        "device_type (pty)": "CPU",
    }
    for width, n in record.flops.items():
        metrics[f"{FLOPS}{width}"] = n
    return metrics


def hook_metrics(record: adapter.LaunchRecord) -> tuple[str, dict[str, Any]]:
    """Proton's ``hook="triton"``: the launch_metadata's name and numeric metrics win."""
    meta = record.launch_metadata()
    if not meta:
        return record.kernel, {}
    name, extra = launch_metadata_metrics(meta)
    return name or record.kernel, extra


def _dispatch(record: adapter.LaunchRecord) -> None:
    sessions = [s for s in _sessions if s.active]
    if not sessions:
        return
    measured = launch_metrics(record)
    hooked: tuple[str, dict[str, Any]] | None = None
    for session in sessions:
        name, metrics = record.kernel, measured
        if session.hook == "triton":
            if hooked is None:  # evaluate the user's launch_metadata once per launch
                hooked = hook_metrics(record)
            name, metrics = hooked[0], {**measured, **hooked[1]}
        session.record_kernel(name, metrics, record.start_ns, record.end_ns)


class InterpreterBackend:
    name = "interpreter"

    def start(self, session: Session) -> None:
        enable_interpreter_mode()
        adapter.install(_dispatch)
        if session not in _sessions:
            _sessions.append(session)

    def stop(self, session: Session) -> None:
        if session in _sessions:
            _sessions.remove(session)
        if not _sessions:
            adapter.uninstall()
