"""The sanitizer's side of the interpreter: which tensor each lane addresses, and what is let through.

One :class:`Guard` is attached to Triton's interpreter (``deuteron.triton.interpreter``) while any
check runs. At each launch it describes the launch's tensors and their allocations (a
:class:`LaunchInfo`), and at each access it sorts the active lanes into those inside an allocation
and those outside every one. Lanes outside are masked off before Triton touches memory, so a buggy
kernel reads ``other`` (or 0) there instead of garbage and cannot write outside its tensors or
crash the process. Every attached checker hears the same events (a ``deuteron.check`` inside
``deuteron check`` sees everything too).
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np

from ..model.access import AccessListener, LaunchInfo, SiteTable, StorageArea, TensorArg
from ..triton import interpreter, sites
from .errors import CheckError


class Guard:
    def __init__(self) -> None:
        self.listeners: list[AccessListener] = []
        self.launch: LaunchInfo | None = None
        self.launches = 0
        self.seq = -1

    # --- checkers come and go --------------------------------------------------------------------

    def add(self, listener: AccessListener) -> None:
        if listener in self.listeners:
            raise CheckError("this check is already attached to Triton's interpreter")
        if self.launch is not None:
            raise CheckError("a check cannot start while an interpreted launch is running")
        if not self.listeners:
            interpreter.attach(self)
        self.listeners.append(listener)

    def remove(self, listener: AccessListener | None = None) -> None:
        """Detach one checker (all when None); the interpreter is released when none is left."""
        if listener is None:
            self.listeners.clear()
        elif listener in self.listeners:
            self.listeners.remove(listener)
        if not self.listeners:
            self.launch = None
            interpreter.detach()

    # --- the interpreter's events ------------------------------------------------------------------

    def launch_begin(
        self,
        fn: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        grid: tuple[int, int, int],
        table: SiteTable,
    ) -> None:
        self.launches += 1
        self.seq = -1
        self.launch = launch = launch_info(self.launches, fn, args, kwargs, grid, table)
        for listener in self.listeners:
            listener.launch_begin(launch)

    def program_begin(self, pid: tuple[int, int, int]) -> None:
        self.seq += 1
        for listener in self.listeners:
            listener.program_begin(self.seq, pid)

    def access(
        self, kind: int, addrs: np.ndarray, mask: np.ndarray | None, esize: int, values: np.ndarray | None
    ) -> np.ndarray | None:
        launch = self.launch
        if launch is None:
            return None
        m: np.ndarray | None = None
        if mask is not None:
            m = mask if mask.shape == addrs.shape else np.broadcast_to(mask, addrs.shape)
            active = addrs[m]
        else:
            active = addrs.reshape(-1)
        if active.size == 0:
            return None
        site = sites.current_site()
        starts, ends = launch.starts, launch.ends
        i = int(np.searchsorted(starts, active.min(), side="right")) - 1
        if i >= 0 and int(active.max()) + esize <= int(ends[i]):  # the usual case: one tensor, all inside
            for listener in self.listeners:
                listener.access(kind, active, i, esize, site, values, m)
            return None
        region = np.searchsorted(starts, active, side="right").astype(np.intp) - 1
        clipped = np.maximum(region, 0)
        inside = (region >= 0) & (active + np.uint64(esize) <= ends[clipped])
        outside = ~inside
        flat_positions = np.flatnonzero(m) if m is not None else np.arange(active.size)
        keep = np.zeros(addrs.shape, dtype=bool)
        keep.reshape(-1)[flat_positions[inside]] = True
        if inside.any():
            near = int(np.bincount(region[inside]).argmax())
        else:
            near = _nearest_storage(launch, int(active[outside][0]))
        for listener in self.listeners:
            listener.out_of_bounds(kind, active[outside], flat_positions[outside], near, esize, site)
        if inside.any():
            for listener in self.listeners:
                listener.access(kind, active[inside], region[inside], esize, site, values, keep)
        return keep

    def nonfinite(self, op: str, inputs: tuple[np.ndarray, ...], output: np.ndarray, site: int) -> None:
        for listener in self.listeners:
            listener.nonfinite(op, inputs, output, site)

    def assert_failed(self, message: str, failing: np.ndarray, site: int) -> None:
        for listener in self.listeners:
            listener.assert_failed(message, failing, site)

    def launch_end(self, error: BaseException | None) -> None:
        launch, self.launch = self.launch, None
        if launch is not None:
            for listener in list(self.listeners):
                listener.launch_end(launch, error)


# The one guard: the interpreter takes one sanitizer, and every check shares it.
GUARD = Guard()


def _nearest_storage(launch: LaunchInfo, address: int) -> int:
    if not launch.storages:
        return -1
    gaps = [
        (s.start - address) if address < s.start else max(0, address - (s.start + s.nbytes))
        for s in launch.storages
    ]
    return int(np.argmin(gaps))


def _tensor_like(value: Any) -> bool:
    return hasattr(value, "data_ptr") and hasattr(value, "untyped_storage")


def _tensor_args(bound: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every tensor the programs can address, named after its parameter (x[1], desc.base)."""
    found: list[tuple[str, Any]] = []

    def visit(name: str, value: Any) -> None:
        if type(value).__name__ == "TensorWrapper" and hasattr(value, "base"):  # tl.reinterpret's wrapper
            value = value.base
        if _tensor_like(value):
            found.append((name, value))
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                visit(f"{name}[{i}]", item)
        elif hasattr(value, "base") and hasattr(value, "block_shape"):  # a TensorDescriptor
            visit(f"{name}.base", value.base)

    for name, value in bound.items():
        visit(name, value)
    return found


def launch_info(
    index: int,
    fn: Any,
    args_hst: tuple[Any, ...],
    kwargs_hst: dict[str, Any],
    grid: tuple[int, int, int],
    sites: SiteTable,
) -> LaunchInfo:
    """A launch's tensors (named after their parameters) and the allocations they view."""
    try:
        bound = inspect.getcallargs(fn, *args_hst, **kwargs_hst)
    except TypeError:
        bound = {f"arg{i}": a for i, a in enumerate(args_hst)} | dict(kwargs_hst)
    areas: dict[int, list[int]] = {}
    sizes: dict[int, int] = {}
    raw: list[tuple[str, Any, int]] = []
    for name, t in _tensor_args(bound):
        storage = t.untyped_storage()
        start = int(storage.data_ptr())
        sizes[start] = max(sizes.get(start, 0), int(storage.nbytes()))
        raw.append((name, t, start))
    order = sorted(sizes)
    index_of = {start: i for i, start in enumerate(order)}
    tensors: list[TensorArg] = []
    for name, t, start in raw:
        areas.setdefault(start, []).append(len(tensors))
        tensors.append(
            TensorArg(
                name=name,
                shape=tuple(int(s) for s in t.shape),
                strides=tuple(int(s) for s in t.stride()),
                dtype=str(t.dtype).removeprefix("torch."),
                element_size=int(t.element_size()),
                data_ptr=int(t.data_ptr()),
                storage=index_of[start],
            )
        )
    storages = [
        StorageArea(
            start=start,
            nbytes=sizes[start],
            granule=math.gcd(*(tensors[i].element_size for i in areas[start])),
            tensors=tuple(areas[start]),
        )
        for start in order
    ]
    code = getattr(fn, "__code__", None)
    return LaunchInfo(
        index=index,
        kernel=getattr(fn, "__name__", "kernel"),
        file=code.co_filename if code is not None else "",
        grid=grid,
        tensors=tensors,
        storages=storages,
        starts=np.array([s.start for s in storages], dtype=np.uint64),
        ends=np.array([s.start + s.nbytes for s in storages], dtype=np.uint64),
        sites=sites,
    )
