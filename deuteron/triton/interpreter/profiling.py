"""Launch records from Triton's interpreter, for profiling: what each launch cost (exact bytes of
active lanes, ``tl.dot`` flops by operand width), when it ran, and its ``pl.scope``s per program.

The interpreter's memory operations and launch loop are wrapped in :mod:`.adapter`; they count into
the :class:`Counter` of the launch in progress (``PROFILING.counter``), and :func:`recorded_run` turns
it into a :class:`LaunchRecord` for the profiler ``PROFILING.profiler`` when the launch is over. While
a counted launch runs, a :class:`.scopes.ScopeRecorder` hears its scopes' edges (through
:func:`deuteron.triton.language.set_interpreter_recorder`), snapshotting the same counter.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deuteron.triton import language
from deuteron.triton.interpreter.mends import compile_time
from deuteron.triton.interpreter.scopes import ScopeInstances, ScopeRecorder
from deuteron.triton.runtime import launch_hooks, launch_metadata


@dataclass
class LaunchRecord:
    """What one interpreted launch did: exact bytes (active lanes only), tl.dot flops, and the
    ``pl.scope`` instances its programs completed (None when they used no scope)."""

    kernel: str
    grid: tuple[int, int, int] = (1, 1, 1)
    start_ns: int = 0
    end_ns: int = 0
    bytes_loaded: int = 0
    bytes_stored: int = 0
    flops: dict[int, int] = field(default_factory=dict)  # operand width in bits -> flops
    scopes: ScopeInstances | None = None

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


class Counter:
    """The running launch's bytes and flops, counted as its programs run (slots: read and written
    on every load and store)."""

    __slots__ = ("loaded", "stored", "flops")

    def __init__(self) -> None:
        self.loaded = 0
        self.stored = 0
        self.flops: dict[int, int] = {}

    def dot(self, a: Any, b: Any) -> None:
        """A ``tl.dot`` of handles ``a`` and ``b``: 2*M*N*K flops per batch entry."""
        ash, bsh = a.data.shape, b.data.shape
        m, k, n = ash[-2], ash[-1], bsh[-1]
        batch = int(np.prod(ash[:-2])) if len(ash) > 2 else 1
        width = a.dtype.primitive_bitwidth
        self.flops[width] = self.flops.get(width, 0) + 2 * batch * m * n * k


class Profiling:
    """Who listens for launch records, and the launch being counted (one instance, :data:`PROFILING`)."""

    __slots__ = ("profiler", "counter")

    def __init__(self) -> None:
        self.profiler: Callable[[LaunchRecord], None] | None = None
        self.counter: Counter | None = None  # the launch being counted for the profiler


PROFILING = Profiling()


def element_bytes(handle: Any) -> int:
    """Bytes per element a pointer handle addresses (1 for sub-byte types)."""
    dtype = handle.dtype
    while hasattr(dtype, "element_ty"):
        dtype = dtype.element_ty
    return max(1, dtype.primitive_bitwidth // 8)


def active_lane_count(ptrs: np.ndarray, mask: Any) -> int:
    """Lanes of an access its mask (a handle, or None for all) leaves on."""
    if mask is None:
        return int(ptrs.size)
    m = mask.data
    if m.shape != ptrs.shape:
        m = np.broadcast_to(m, ptrs.shape)
    return int(np.count_nonzero(m))


def recorded_run(
    launch: Callable[[], Any], builder: Any, fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]
) -> Any:
    """Run one launch (``launch()``) counted, with Triton's launch hooks around it as a compiled
    launch calls them, and hand its record to the profiler."""
    chains = launch_hooks.chains_in_use() if PROFILING.profiler is not None else None
    metadata = None
    if chains is not None:
        metadata = launch_metadata.lazy(fn, launch_metadata.grid_of(fn, grid, args, kwargs), args, kwargs)
        chains[0](metadata)
    try:
        return counted_run(launch, builder, fn)
    finally:
        if chains is not None and chains[1] is not None:
            chains[1](metadata)


def counted_run(launch: Callable[[], Any], builder: Any, fn: Any) -> Any:
    """Run one launch with a fresh counter (when a profiler listens), its scopes heard by a
    recorder meanwhile, and record what it counted."""
    s = PROFILING
    counter = s.counter = Counter() if s.profiler is not None else None
    recorder = outer = None
    if counter is not None:
        recorder, outer = ScopeRecorder(counter, builder), language.SCOPE_SETTINGS.recorder
        language.set_interpreter_recorder(recorder)
    start = time.perf_counter_ns()
    try:
        return launch()
    except compile_time.StaticAssertFailed:
        counter = None  # rejected at compile time on a GPU: never a launch
        raise
    finally:
        end = time.perf_counter_ns()
        s.counter = None
        if recorder is not None:
            language.set_interpreter_recorder(outer)
        profiler = s.profiler
        if profiler is not None and counter is not None:
            grid3 = tuple(int(g) for g in getattr(builder, "grid_dim", (1, 1, 1)))
            profiler(
                LaunchRecord(
                    kernel=fn.fn.__name__,
                    grid=(grid3[0], grid3[1], grid3[2]),
                    start_ns=start,
                    end_ns=end,
                    bytes_loaded=counter.loaded,
                    bytes_stored=counter.stored,
                    flops=counter.flops,
                    scopes=recorder.finish() if recorder is not None else None,
                )
            )
