"""The sanitizer's side of the interpreter: where each lane's pointer came from, and what is let through.

One :class:`Guard` is attached to Triton's interpreter (``deuteron.triton.interpreter.adapter``) while any
check runs. Before a launch it describes the launch's tensors and their allocations (a
:class:`LaunchInfo`) and gives each tensor argument's pointer a tag (its index, in the pointer's
top bits: see ``model.access.TAG_SHIFT``), so every pointer the kernel derives says which tensor it
came from. At each access it judges every active lane against *that* tensor:

- inside the tensor's allocation and on its view: an ordinary access;
- inside the allocation but off the view (a slice's padding, another row): ``outside_view``, let
  through (the memory is real);
- outside the allocation, even where another tensor lies: ``out_of_bounds``, masked off before
  Triton touches memory, so a buggy kernel reads ``other`` (or 0) and cannot write outside its
  tensors or crash the process.

An integer the kernel turns into a pointer (a pointer array's entry) is tagged then with the tensor
it points into, an argument or any live tensor of the process (added to the launch; a device tensor
is copied to the host for the launch, as the interpreter copies arguments), so a lane
that strays past that tensor is out of bounds on it; one that points into no tensor stays untagged
and its accesses are out of bounds ("unknown pointer"). Every attached checker
hears the same events (a ``deuteron.check`` inside ``deuteron check`` sees everything too).
"""

from __future__ import annotations

import gc
import inspect
import math
import sys
from typing import Any

import numpy as np

from deuteron.check.errors import CheckError
from deuteron.model.access import (
    ADDRESS_MASK,
    MASKED,
    TAG_SHIFT,
    Access,
    AccessListener,
    LaunchInfo,
    SiteTable,
    StorageArea,
    TensorArg,
    element_index,
)
from deuteron.triton.interpreter import adapter

_MASK = np.uint64(ADDRESS_MASK)
_SHIFT = np.uint64(TAG_SHIFT)


class Guard:
    """The one sanitizer attached to the interpreter (:data:`GUARD`): it tags each launch's tensor
    arguments, judges every access's lanes against the tensor its pointer came from, masks off
    what lies outside, and hands the parts of each access on to every attached checker. One, because
    the interpreter takes one sanitizer and nested checks must all hear the same events."""

    def __init__(self) -> None:
        self.listeners: list[AccessListener] = []
        # Listeners that also keep masked-off lanes (a checker with an access recorder).
        self.masked_listeners: list[Any] = []
        self.launch: LaunchInfo | None = None
        self.prepared: LaunchInfo | None = None
        self.launches = 0
        self.seq = -1
        self._tags: dict[int, int] = {}  # id(host tensor) -> tag
        self._ptrs: dict[int, int] = {}  # data_ptr -> tag, for wrappers of a tensor
        self._views: dict[int, bool] = {}  # tensor index -> its view covers every element of its allocation
        self._live: tuple[np.ndarray, np.ndarray, list[Any]] | None = None
        # A device tensor argument's storage address -> (bytes, its host copy's address)
        self._device_copies: dict[int, tuple[int, int]] = {}
        # Host copies made of device tensors a pointer array names: (device storage, host storage),
        # copied back when the launch ends
        self._mirrors: list[tuple[Any, Any]] = []
        # Which programs run (``deuteron check --program``: a ``check.programs.Selection``); None: all
        self.selection: Any = None
        # What a debugger stopping at a finding shows: the access being judged (tagged addresses),
        # the part of it a finding is about (its lanes as the mask), a failed assert's lanes.
        self.current: Access | None = None
        self.part: Access | None = None
        self.failing: np.ndarray | None = None

    # --- checkers come and go --------------------------------------------------------------------

    def add(self, listener: AccessListener) -> None:
        if listener in self.listeners:
            raise CheckError("this check is already attached to Triton's interpreter")
        if self.launch is not None:
            raise CheckError("a check cannot start while an interpreted launch is running")
        if not self.listeners:
            adapter.attach(self)
        self.listeners.append(listener)
        if getattr(listener, "keeps_masked", False):
            self.masked_listeners.append(listener)

    def remove(self, listener: AccessListener | None = None) -> None:
        """Detach one checker (all when None); the interpreter is released when none is left."""
        if listener is None:
            self.listeners.clear()
            self.masked_listeners.clear()
        elif listener in self.listeners:
            self.listeners.remove(listener)
            if listener in self.masked_listeners:
                self.masked_listeners.remove(listener)
        if not self.listeners:
            self.launch = self.prepared = None
            adapter.detach()

    # --- the interpreter's events ------------------------------------------------------------------

    def launch_prepare(
        self,
        fn: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        table: SiteTable,
        device_copies: dict[int, tuple[int, int]] | None = None,
    ) -> None:
        """The launch's host tensors are known: describe them, so their pointers can be tagged."""
        self.prepared = launch_info(self.launches + 1, fn, args, kwargs, (1, 1, 1), table, self._objects)
        self._views = {}
        self._live = None
        self._device_copies = dict(device_copies or {})
        self._mirrors = []

    def _objects(self, tags: dict[int, int], ptrs: dict[int, int]) -> None:
        self._tags, self._ptrs = tags, ptrs

    def tag_of(self, arg: Any) -> int:
        """The tag for a tensor argument's pointer (0: not one of this launch's tensors)."""
        if self.prepared is None:
            return 0
        tag = self._tags.get(id(arg))
        if tag is None:
            try:
                tag = self._ptrs.get(int(arg.data_ptr()), 0)
            except Exception:  # not a tensor after all
                tag = 0
        return tag

    def tag_addresses(self, addresses: np.ndarray) -> np.ndarray:
        """Integers turned into pointers: each tagged with the tensor it points into (adopting live
        tensors a pointer array names), so lanes derived from it are judged against that tensor."""
        if self.launch is None or addresses.size == 0:
            return addresses
        flat = addresses.reshape(-1).astype(np.uint64) & _MASK
        values, inverse = np.unique(flat, return_inverse=True)
        owners, moves = self._resolve(values)
        tags = np.where(owners >= 0, (owners + 1).astype(np.uint64) << _SHIFT, np.uint64(0))
        moved = (values.astype(np.int64) + moves).astype(np.uint64)  # device addresses -> host copies
        inverse = inverse.reshape(-1)
        return (moved[inverse] | tags[inverse]).reshape(addresses.shape).astype(addresses.dtype)

    def launch_begin(self, grid: tuple[int, int, int]) -> None:
        launch = self.prepared
        if launch is None:
            return
        self.launches += 1
        self.seq = -1
        launch.grid = grid
        launch.index = self.launches
        self.launch = launch
        for listener in self.listeners:
            listener.launch_begin(launch)

    def program_begin(self, pid: tuple[int, int, int]) -> bool:
        """A program starts, unless the selection skips it (then False, and no checker hears of it)."""
        selection, launch = self.selection, self.launch
        if selection is not None and launch is not None and not selection.runs(launch, pid):
            return False
        self.seq += 1
        for listener in self.listeners:
            listener.program_begin(self.seq, pid)
        return True

    def access(self, access: Access) -> np.ndarray | None:
        """Judge the active lanes of one access; return the lanes to keep, or None for all of them."""
        launch = self.launch
        if launch is None:
            return None
        self.current, self.part = access, None
        addresses, mask = access.addresses, access.mask
        m: np.ndarray | None = None
        if mask is not None:
            m = mask if mask.shape == addresses.shape else np.broadcast_to(mask, addresses.shape)
            active = addresses[m]
        else:
            active = addresses.reshape(-1)
        if m is not None and self.masked_listeners:
            self._masked(access, m, launch)
        if active.size == 0:
            return None
        lo, hi = int(active.min()), int(active.max())
        tag = lo >> TAG_SHIFT
        real = active & _MASK
        if tag == hi >> TAG_SHIFT and 0 < tag <= len(launch.tensors):  # the usual case: one tensor
            t = tag - 1
            tensor = launch.tensors[t]
            area = launch.storages[tensor.storage]
            esize = access.element_size
            if (lo & ADDRESS_MASK) >= area.start and (hi & ADDRESS_MASK) + esize <= area.start + area.nbytes:
                if not self._covers(t):
                    self._off_view(access, real, np.arange(active.size), t, m)
                part = Access(access.kind, real, esize, access.site, m, access.values, tensor.storage, t)
                for listener in self.listeners:
                    listener.access(part)
                return None
        tags = (active >> _SHIFT).astype(np.int64)
        return self._judge_lanes(access, real, tags, m)

    def _masked(self, access: Access, m: np.ndarray, launch: LaunchInfo) -> None:
        """Masked-off lanes whose pointers fall inside the storage of the tensor they came from,
        for listeners that keep them (the access record, for the web UI's program view). Lanes
        masked off because they point outside are left out: there is nothing there to draw."""
        off = access.addresses[~m]
        if off.size == 0:
            return
        tag = (off >> _SHIFT).astype(np.int64)
        real = off & _MASK
        known = (tag >= 1) & (tag <= len(launch.tensors))
        if not known.any():
            return
        storage = np.full(off.size, -1, dtype=np.int64)
        storage[known] = np.array([t.storage for t in launch.tensors], dtype=np.int64)[tag[known] - 1]
        starts = np.array([s.start for s in launch.storages], dtype=np.uint64)
        ends = np.array([s.start + s.nbytes for s in launch.storages], dtype=np.uint64)
        safe = np.maximum(storage, 0)
        inside = known & (real >= starts[safe]) & (real < ends[safe])
        positions = np.flatnonzero(~m)
        for s in np.unique(storage[inside]).tolist():
            here = inside & (storage == s)
            part = Access(
                access.kind + MASKED,
                real[here],
                access.element_size,
                access.site,
                _lanes(m.shape, positions[here]),
                None,
                int(s),
                tag[here] - 1,
            )
            for listener in self.masked_listeners:
                listener.masked(part)

    def _judge_lanes(
        self, access: Access, real: np.ndarray, tags: np.ndarray, m: np.ndarray | None
    ) -> np.ndarray:
        """Lane by lane: each against the tensor its pointer came from (or, untagged, the live ones)."""
        launch = self.launch
        assert launch is not None
        kind, esize, site, values = access.kind, access.element_size, access.site, access.values
        shape = access.addresses.shape
        owner = tags - 1  # tensor index per lane; -1: no known origin
        garbage = owner >= len(launch.tensors)  # high bits set by arithmetic, not by a tag of ours
        owner[garbage] = -2
        untagged = owner == -1
        if untagged.any():
            found, moves = self._resolve(real[untagged])
            found[moves != 0] = -1  # a device address reached without a tag: never dereferenced
            owner[untagged] = found
        owner[garbage] = -1
        known = owner >= 0
        storage = np.full(real.size, -1, dtype=np.int64)
        storage[known] = np.array([t.storage for t in launch.tensors], dtype=np.int64)[owner[known]]
        starts = np.array([s.start for s in launch.storages], dtype=np.uint64)
        ends = np.array([s.start + s.nbytes for s in launch.storages], dtype=np.uint64)
        safe = np.maximum(storage, 0)
        inside = known & (real >= starts[safe]) & (real + np.uint64(esize) <= ends[safe])
        flat_positions = np.flatnonzero(m) if m is not None else np.arange(real.size)
        keep = _lanes(shape, flat_positions[inside])
        for t in np.unique(owner[~inside]).tolist():
            bad = ~inside & (owner == t)
            lanes = _lanes(shape, flat_positions[bad])
            part = self.part = Access(kind, real[bad], esize, site, lanes, values, -1, int(t))
            for listener in self.listeners:
                listener.out_of_bounds(part)
        if inside.any():
            for t in np.unique(owner[inside]).tolist():
                if not self._covers(int(t)):
                    lanes = np.flatnonzero(inside & (owner == t))
                    self._off_view(access, real[lanes], lanes, int(t), m)
            part = Access(kind, real[inside], esize, site, keep, values, storage[inside], owner[inside])
            for listener in self.listeners:
                listener.access(part)
        return keep

    def _covers(self, t: int) -> bool:
        """Whether tensor ``t``'s view is every element of its allocation (then no lane is off it)."""
        covers = self._views.get(t)
        if covers is None:
            launch = self.launch
            assert launch is not None
            tensor = launch.tensors[t]
            area = launch.storages[tensor.storage]
            covers = self._views[t] = (
                tensor.contiguous()
                and tensor.data_ptr == area.start
                and tensor.numel * tensor.element_size == area.nbytes
            )
        return covers

    def _off_view(
        self, access: Access, real: np.ndarray, lanes: np.ndarray, t: int, m: np.ndarray | None
    ) -> None:
        """Tell the checkers about lanes inside tensor ``t``'s allocation but off its view. ``real``
        holds some active lanes' real addresses, ``lanes`` their places among the active lanes."""
        launch = self.launch
        assert launch is not None
        tensor = launch.tensors[t]
        diff = real.astype(np.int64) - np.int64(tensor.data_ptr)
        offsets = diff // tensor.element_size
        found = element_index(tensor, offsets)
        if found is None:  # a view whose elements cannot be told apart by its strides: say nothing
            return
        off = ~found[1] | (diff % tensor.element_size != 0)
        if off.any():
            shape = access.addresses.shape
            flat_positions = np.flatnonzero(m) if m is not None else np.arange(int(np.prod(shape)))
            part = self.part = Access(
                access.kind,
                real[off],
                access.element_size,
                access.site,
                _lanes(shape, flat_positions[lanes[off]]),
                access.values,
                tensor.storage,
                t,
            )
            for listener in self.listeners:
                listener.outside_view(part)

    def _resolve(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The tensor each untagged address lies in (an argument's allocation, else a live tensor of
        the process: a pointer array's target, added to the launch; -1 for none), and what to add to
        the address to reach it on the host (non-zero for device addresses: the interpreter runs
        on host copies)."""
        launch = self.launch
        assert launch is not None
        out = np.full(addresses.size, -1, dtype=np.int64)
        moves = np.zeros(addresses.size, dtype=np.int64)
        for area in launch.storages:
            hit = (addresses >= np.uint64(area.start)) & (addresses < np.uint64(area.start + area.nbytes))
            out[hit & (out < 0)] = area.tensors[0]
        for dev_start, (nbytes, host_start) in self._device_copies.items():
            inside = (addresses >= np.uint64(dev_start)) & (addresses < np.uint64(dev_start + nbytes))
            hit = (out < 0) & inside
            if hit.any():
                owner = next((a.tensors[0] for a in launch.storages if a.start == host_start), -1)
                out[hit] = owner
                moves[hit] = host_start - dev_start if owner >= 0 else 0
        missing = out < 0
        if not missing.any():
            return out, moves
        starts, ends, tensors = self._live_tensors()
        where = np.searchsorted(starts, addresses[missing], side="right").astype(np.int64) - 1
        ok = (where >= 0) & (addresses[missing] < ends[np.maximum(where, 0)])
        found = np.full(int(missing.sum()), -1, dtype=np.int64)
        found_moves = np.zeros(int(missing.sum()), dtype=np.int64)
        for w in np.unique(where[ok]).tolist():
            index, move = self._adopt(tensors[w])
            found[ok & (where == w)] = index
            found_moves[ok & (where == w)] = move
        out[missing] = found
        moves[missing] = found_moves
        return out, moves

    def _live_tensors(self) -> tuple[np.ndarray, np.ndarray, list[Any]]:
        """Every tensor alive in the process, by allocation (one gc walk per launch, when needed)."""
        if self._live is None:
            by_start: dict[int, Any] = {}
            torch = sys.modules.get("torch")
            tensor_type = getattr(torch, "Tensor", None)
            # By type alone: a gc walk meets objects whose attribute lookups have side effects
            # (torch.ops loads libraries, pytest.mark makes marks, deprecated objects warn)
            live = [
                o for o in gc.get_objects() if tensor_type is not None and issubclass(type(o), tensor_type)
            ]
            for obj in live:
                try:
                    if obj.is_meta:
                        continue
                    storage = obj.untyped_storage()
                    start, nbytes = int(storage.data_ptr()), int(storage.nbytes())
                except Exception:  # a tensor subclass without storage
                    continue
                if nbytes and (start not in by_start or nbytes > by_start[start][1]):
                    by_start[start] = (obj, nbytes)
            order = sorted(by_start)
            starts = np.array(order, dtype=np.uint64)
            ends = np.array([s + by_start[s][1] for s in order], dtype=np.uint64)
            self._live = (starts, ends, [by_start[s] for s in order])
        return self._live

    def _adopt(self, found: tuple[Any, int]) -> tuple[int, int]:
        """A live tensor reached through a pointer array, as a tensor of this launch (once), and
        the move from its addresses to the memory the kernel reads: a device tensor is copied to
        the host for the launch, as the interpreter copies arguments, and back at its end."""
        launch = self.launch
        assert launch is not None
        obj, nbytes = found
        storage = obj.untyped_storage()
        start = int(storage.data_ptr())
        move = 0
        if not obj.is_cpu:
            for dev, host in self._mirrors:
                if int(dev.data_ptr()) == start:
                    move = int(host.data_ptr()) - start
                    break
            else:
                host = storage.cpu()
                self._mirrors.append((storage, host))
                move = int(host.data_ptr()) - start
        for area in launch.storages:
            if area.start == start + move:
                return area.tensors[0], move
        esize = int(obj.element_size())
        dtype = str(obj.dtype).removeprefix("torch.")
        shape = tuple(int(n) for n in obj.shape)
        tensor = TensorArg(
            name=f"<{dtype} {shape} tensor from a pointer in memory>",
            shape=shape,
            strides=tuple(int(n) for n in obj.stride()),
            dtype=dtype,
            element_size=esize,
            data_ptr=int(obj.data_ptr()) + move,
            storage=-1,
        )
        return launch.add(tensor, start + move, nbytes, esize), move

    def atomic_result(
        self,
        op: str,
        addresses: np.ndarray,
        mask: np.ndarray | None,
        cmp: np.ndarray | None,
        val: np.ndarray,
        old: np.ndarray,
        site: int,
    ) -> None:
        """An atomic ran: its active lanes, as real addresses and the tensor each came from."""
        if self.launch is None:
            return
        shape = addresses.shape

        def lanes(a: np.ndarray) -> np.ndarray:
            full = np.broadcast_to(a, shape)
            return full[mask] if mask is not None else full.reshape(-1)

        tagged = lanes(addresses)
        tensors = (tagged >> _SHIFT).astype(np.int64) - 1
        real = tagged & _MASK
        for listener in self.listeners:
            listener.atomic_result(
                op, real, tensors, None if cmp is None else lanes(cmp), lanes(val), lanes(old), site
            )

    def nonfinite(self, op: str, inputs: tuple[np.ndarray, ...], output: np.ndarray, site: int) -> None:
        for listener in self.listeners:
            listener.nonfinite(op, inputs, output, site)

    def assert_failed(self, message: str, failing: np.ndarray, site: int) -> None:
        self.failing = failing
        for listener in self.listeners:
            listener.assert_failed(message, failing, site)

    def launch_end(self, error: BaseException | None) -> None:
        launch, self.launch, self.prepared = self.launch, None, None
        self.current = self.part = self.failing = None
        mirrors, self._mirrors = self._mirrors, []
        for dev, host in mirrors:  # what the kernel wrote through a pointer array, back on the device
            dev.copy_(host)
        if launch is not None:
            for listener in list(self.listeners):
                listener.launch_end(launch, error)


# The one guard: the interpreter takes one sanitizer, and every check shares it.
GUARD = Guard()


def _lanes(shape: tuple[int, ...], positions: np.ndarray) -> np.ndarray:
    """The lanes at these flat positions, as a bool mask of the access's shape."""
    lanes = np.zeros(shape, dtype=bool)
    lanes.reshape(-1)[positions] = True
    return lanes


def _tensor_like(value: Any) -> bool:
    return hasattr(value, "data_ptr") and hasattr(value, "untyped_storage")


def _tensor_args(bound: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Every tensor the programs can address, named after its parameter (x[1], desc.base), with the
    object the interpreter converts to a pointer (a wrapper of it, for ``tl.reinterpret``)."""
    found: list[tuple[str, Any, Any]] = []

    def visit(name: str, value: Any) -> None:
        outer = value
        if type(value).__name__ == "TensorWrapper" and hasattr(value, "base"):  # tl.reinterpret's wrapper
            value = value.base
        if _tensor_like(value):
            found.append((name, value, outer))
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
    tags: Any = None,
) -> LaunchInfo:
    """A launch's tensors (named after their parameters) and the allocations they view; ``tags``
    hears which object gets which pointer tag."""
    try:
        bound = inspect.getcallargs(fn, *args_hst, **kwargs_hst)
    except TypeError:
        bound = {f"arg{i}": a for i, a in enumerate(args_hst)} | dict(kwargs_hst)
    areas: dict[int, list[int]] = {}
    sizes: dict[int, int] = {}
    raw: list[tuple[str, Any, int]] = []
    by_id: dict[int, int] = {}
    by_ptr: dict[int, int] = {}
    for name, t, outer in _tensor_args(bound):
        storage = t.untyped_storage()
        start = int(storage.data_ptr())
        sizes[start] = max(sizes.get(start, 0), int(storage.nbytes()))
        by_id[id(outer)] = by_id[id(t)] = len(raw) + 1
        by_ptr.setdefault(int(outer.data_ptr()), len(raw) + 1)
        raw.append((name, t, start))
    if tags is not None:
        tags(by_id, by_ptr)
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
