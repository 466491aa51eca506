"""A drained batch of CUPTI kernels filed into each session, by that session's own ids.

The join (:mod:`.join`) groups a batch's kernels by (context, capture, state, launch metadata,
name, device, place); this module turns each group into a
:class:`~deuteron.collect.backends.port.KernelGroup` as one session sees it (a context id shared by
several sessions translated back to the session's own, kernels launched while it was paused left
out, the launch hook's metadata attached) and hands the groups, with the kernels' spans, to the
session's ``file_kernels``.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from deuteron.collect.backends.cupti import records
from deuteron.collect.backends.cupti.join import UNMATCHED, Batch
from deuteron.collect.backends.cupti.sampled_lines import SampleCollector
from deuteron.collect.backends.cupti.sharing import SharedContexts
from deuteron.collect.backends.port import KernelGroup, Recorder
from deuteron.collect.deferred import DeferredValue, ReplayedMetric, Times, times
from deuteron.model.metrics import COUNT, TIME
from deuteron.model.trace import KernelSpans

ROOT_CTX = 1  # the shim's context id for a session's root (a thread that never opened a scope)
NO_PYTHON_CTX = 0  # under context="python": a launch from a thread running no Python


class FilingBackend(Protocol):
    """What filing reads of the CUPTI backend: its clock, threads, sessions, tables and devices."""

    clock_offset: int
    threads: dict[int, int]  # shim thread index -> threading ident
    attached: list[Recorder]
    sharing: SharedContexts
    meta_table: dict[int, tuple[str | None, dict[str, Any]]]
    devices: set[int]
    sampling: SampleCollector | None

    def kernel_name(self, ptr: int) -> str: ...


def file_batch(backend: FilingBackend, batch: Batch) -> None:
    """Hand a batch's groups to each session by its own context ids, with its spans for the
    trace."""
    if not len(batch):
        return
    k = batch.kernels
    off = backend.clock_offset
    launch = batch.launch_ts.astype(np.int64)
    launch = np.where(launch > 0, launch - off, 0)
    idents = launching_idents(backend.threads, batch.launch_thread)
    starts = k["start"].astype(np.int64) - off
    ends = k["end"].astype(np.int64) - off
    devices, streams = k["device"].astype(np.int64), k["stream"].astype(np.int64)
    for session in list(backend.attached):
        group_of, count, time_ns = batch.group_of, batch.count, batch.time_ns
        member = backend.sharing.members.get(session.setup.session_id)
        keep = member.active_mask(batch.launch_ts) if member is not None else None
        if keep is not None and not keep.all():  # launched while this session was paused
            group_of = np.where(keep, batch.group_of, len(batch.keys))
            count = np.bincount(batch.group_of[keep], minlength=len(batch.keys)).astype(np.int64)
            time_ns = np.zeros(len(batch.keys), np.int64)
            np.add.at(time_ns, batch.group_of[keep], (ends - starts).clip(min=0)[keep])
        groups = session_groups(backend, session, batch.keys, count, time_ns)
        groups.append(None)  # the group of kernels left out for this session
        spans = KernelSpans([], group_of, starts, ends, devices, streams, launch, idents)
        session.file_kernels(groups, spans)


def launching_idents(threads: dict[int, int], thread: np.ndarray) -> np.ndarray:
    """Each kernel's launching thread's ident, from the shim's thread index (-1: none), through
    a lookup table rather than a dict read per kernel."""
    size = max(threads, default=-1) + 2
    table = np.zeros(size, np.uint64)  # the last slot stands for -1 and unknown indices
    for index, ident in threads.items():
        table[index] = ident
    where = np.where((thread >= 0) & (thread < size - 1), thread, size - 1)
    return table[where]


def session_groups(
    backend: FilingBackend, session: Recorder, keys: np.ndarray, counts: np.ndarray, times: np.ndarray
) -> list[KernelGroup | None]:
    """The batch's groups as ``session`` sees them: shared context ids translated back to its
    own, paused and empty groups as None (left out), launch metadata resolved."""
    groups: list[KernelGroup | None] = []
    reserved = (ROOT_CTX, UNMATCHED, NO_PYTHON_CTX)
    for row, count, total in zip(keys.tolist(), counts.tolist(), times.tolist(), strict=True):
        # the key's columns as the shim names them (records.KEY_COLUMNS): ctx is the flagged context id
        flagged, flagged_capture, recorded_state, meta, name_ptr, device, place_id = row
        if flagged & records.CTX_PAUSED or not count:
            groups.append(None)
            continue
        session_id = session.setup.session_id
        recorded_context = flagged & ~records.CTX_FLAGS  # the slot's id: maybe shared by sessions
        context_id, state_id = (
            (recorded_context, recorded_state)
            if recorded_context in reserved
            else backend.sharing.translate(session_id, recorded_context, recorded_state)
        )
        captured = flagged_capture & ~records.CTX_FLAGS
        if captured and captured not in reserved:
            captured, captured_state = backend.sharing.translate(session_id, captured, 0)
            state_id = captured_state or state_id  # shared ids fold the captured state in
        name = symbol = backend.kernel_name(name_ptr)
        extra: dict[str, Any] = {}
        if meta:  # the launch hook's reading applies to every session, as in Proton
            hooked_name, hooked = backend.meta_table.get(meta, (None, {}))
            name = hooked_name or name
            extra = {k: _times(v, count) for k, v in hooked.items()}  # read later: Session.settle
        metrics = {
            COUNT: count,
            TIME: total,
            "device_id (pty)": str(device),
            "device_type (pty)": "CUDA",
            **extra,
        }
        backend.devices.add(device)
        groups.append(
            KernelGroup(
                context_id=context_id,
                other_thread=bool(flagged & records.CTX_OTHER_THREAD),
                captured_context_id=captured,
                state_id=state_id,
                name=name,
                metrics=metrics,
                place_id=place_id,
                symbol=symbol if backend.sampling is not None else "",
            )
        )
    return groups


def _times(value: Any, count: int) -> Any:
    """A launch's metric summed over ``count`` launches that carried it (vectors elementwise). A
    metric recorded in graph capture already holds every replay's value; a snapshot is one launch's."""
    if isinstance(value, ReplayedMetric):
        return value
    if isinstance(value, DeferredValue):
        return value if count == 1 else Times(value, count)
    return times(value, count)
