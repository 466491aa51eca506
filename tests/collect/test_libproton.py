"""Proton's low-level calls (``triton._C.libproton.proton``) on Deuteron's engine: sessions by
position, scopes by id with metrics added while open, ops naming the next launch, phases, and
which backend serves which Triton backend."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import deuteron.collect.libproton as libproton
from deuteron.collect import backends
from deuteron.collect.api import _select_backend
from deuteron.collect.registry import SessionError
from deuteron.formats import hatchet
from tests.helpers import kernels as k
from tests.helpers.profiles import find


def test_scope_ids_count_up_by_one() -> None:
    first = libproton.record_scope()
    assert [libproton.record_scope() for _ in range(3)] == [first + 1, first + 2, first + 3]


def test_a_session_by_position_with_scopes_by_id_and_metrics_added_while_open(tmp_path: Path) -> None:
    base = tmp_path / "run"
    session = libproton.start(str(base), "shadow", "tree", "interpreter")
    outer, inner = libproton.record_scope(), libproton.record_scope()
    libproton.enter_scope(outer, "outer")
    libproton.enter_scope(inner, "inner")
    assert libproton.get_context_depth(session) == 2
    libproton.add_metrics(inner, {"a": 1.0, "veci": [1, 2, 3]})
    libproton.add_metrics(inner, {"a": 2.0, "veci": [1, 1, 1], "vecd": [0.5]})
    with pytest.raises(SessionError, match="innermost open scope"):
        libproton.exit_scope(outer, "outer")  # inner is still open
    libproton.exit_scope(inner, "inner")
    libproton.exit_scope(outer, "outer")
    assert libproton.get_context_depth(session) == 0
    libproton.deactivate(session, False)
    libproton.activate(session)
    libproton.finalize(session, "hatchet")
    libproton.finalize_all("hatchet")  # nothing left to finalize: no error
    metrics = find(hatchet.read(base.with_suffix(".hatchet")), "outer", "inner").metrics
    assert metrics["a"] == 3.0 and metrics["veci"] == [2, 3, 4] and metrics["vecd"] == [0.5]


def test_add_metrics_refuses_in_protons_words_and_raw_device_addresses(tmp_path: Path) -> None:
    session = libproton.start(str(tmp_path / "run"), "shadow", "tree", "interpreter")
    sid = libproton.record_scope()
    libproton.enter_scope(sid, "s")
    libproton.add_metrics(sid, {"a": 1.0})
    mismatch = "Metric value type mismatch for valueId 0 (a): current=double, new=int64_t"
    with pytest.raises(SessionError, match=mismatch.replace("(", r"\(").replace(")", r"\)")):
        libproton.add_metrics(sid, {"a": 1})  # any Python int is int64_t, as Proton's binding takes it
    metric = libproton.TensorMetric(123, libproton.metric_type_double_index)
    assert (metric.ptr, metric.index, metric.size) == (123, 2, 1)
    with pytest.raises(SessionError, match="pass the tensor itself"):
        libproton.add_metrics(sid, {}, {"t": metric})
    libproton.exit_scope(sid, "s")
    libproton.finalize(session, "")


def test_phases_and_states_through_the_low_level_calls(tmp_path: Path) -> None:
    session = libproton.start(str(tmp_path / "run"), "shadow", "tree", "interpreter")
    sid = libproton.record_scope()
    libproton.enter_scope(sid, "first")
    libproton.enter_state("st")
    libproton.add_metrics(sid, {"n": 1.0})
    libproton.exit_state()
    libproton.exit_scope(sid, "first")
    assert libproton.advance_data_phase(session) == 1
    assert libproton.is_data_phase_complete(session, 0)
    assert not libproton.is_data_phase_complete(session, 1)
    doc = libproton.get_data(session, 0)
    assert [c["frame"]["name"] for c in doc[0]["children"]] == ["first"]
    assert isinstance(libproton.get_data_msgpack(session, 0), bytes)
    libproton.clear_data(session, 0)
    with pytest.raises(SessionError, match="no data for phase 0"):
        libproton.get_data(session, 0)
    libproton.finalize(session, "")
    with pytest.raises(SessionError, match="Session has not been initialized: "):
        libproton.get_context_depth(session)


def test_enter_op_names_the_launches_of_a_triton_hook_session(tmp_path: Path) -> None:
    from deuteron.collect import lifecycle

    base = tmp_path / "run"
    session = lifecycle.start(str(base), backend="interpreter", hook="triton")
    assert session is not None
    op = libproton.record_scope()
    libproton.enter_op(op, "named_by_op")
    k.add(torch.rand(8), torch.rand(8))
    libproton.exit_op(op, "named_by_op")
    k.add(torch.rand(8), torch.rand(8))  # the op is over: named by its kernel again
    libproton.finalize(session, "hatchet")
    prof = hatchet.read(base.with_suffix(".hatchet"))
    assert find(prof, "named_by_op").metrics["count"] == 1
    assert find(prof, "add_kernel").metrics["count"] == 1


def test_profilers_for_triton_backends() -> None:
    assert libproton.get_available_profilers() == ["cupti", "interpreter", "instrumentation"]
    assert libproton.select_profiler_from_triton_backend("cuda") == "cupti"
    with pytest.raises(ValueError, match="No profiler registered for triton backend hip"):
        libproton.select_profiler_from_triton_backend("hip")
    assert _select_backend() == backends.auto_backend() in ("cupti", "interpreter")
    assert libproton.metadata_scope_name == "__proton_launch_metadata"


def test_protons_trace_starts_at_an_absolute_time(tmp_path: Path) -> None:
    """Proton's trace (``data="trace"``) says its zero in ns since the epoch, so it merges with
    other tools' traces; a scope that launched nothing but was given metrics is its one event."""
    import json
    import time

    before = time.time_ns()
    session = libproton.start(str(tmp_path / "run"), "shadow", "trace", "interpreter")
    sid = libproton.record_scope()
    libproton.enter_scope(sid, "metric_only")
    libproton.add_metrics(sid, {"foo": 1.0})
    libproton.exit_scope(sid, "metric_only")
    libproton.finalize(session, "chrome_trace")
    doc = json.loads((tmp_path / "run.chrome_trace").read_text())
    assert before - 10**9 < doc["baseTimeNanoseconds"] <= time.time_ns()
    (event,) = doc["traceEvents"]
    assert (event["cat"], event["name"], event["args"]["metrics"]) == (
        "metric",
        "metric_only: <foo, 1.000000>",
        {"foo": "1.000000"},
    )
