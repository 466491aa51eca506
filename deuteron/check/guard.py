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

A launch's tensors are described by :mod:`.launch_tensors`; where an untagged address points is
found by :mod:`.pointer_origins`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deuteron.check.errors import CheckError
from deuteron.check.launch_tensors import launch_info
from deuteron.check.pointer_origins import PointerOrigins
from deuteron.model.access import (
    ADDRESS_MASK,
    MASKED,
    TAG_SHIFT,
    Access,
    AccessListener,
    AtomicResult,
    LaunchInfo,
    element_index,
)
from deuteron.triton.interpreter import adapter
from deuteron.triton.interpreter.sanitizer_protocol import PreparedLaunch

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
        # Where untagged addresses point (pointer arrays' entries), and the host copies that needs
        self.origins = PointerOrigins()
        # Which grid programs run (``check --program``: a ``check.grid_programs.Selection``); None: all
        self.selection: Any = None
        # What a debugger stopping at a finding shows: the access being judged (tagged addresses),
        # the part of it a finding is about (its lanes as the mask), a failed assert's lanes.
        self.current: Access | None = None
        self.part: Access | None = None
        self.failing: np.ndarray | None = None
        self.scalars: dict[str, Any] = {}  # the prepared launch's scalar arguments (a witness's)

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

    def launch_prepare(self, launch: PreparedLaunch) -> None:
        """The launch's host tensors are known: describe them, so their pointers can be tagged."""
        self.prepared = launch_info(
            self.launches + 1, launch.fn, launch.tensors, (1, 1, 1), launch.table, self._objects
        )
        self._views = {}
        self.scalars = launch.scalars
        self.origins.new_launch(launch.device_copies)

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
        launch = self.launch
        if launch is None or addresses.size == 0:
            return addresses
        flat = addresses.reshape(-1).astype(np.uint64) & _MASK
        values, inverse = np.unique(flat, return_inverse=True)
        owners, moves = self.origins.resolve(launch, values)
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
            m = _lanes(mask, addresses.shape)
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
                _lane_mask(m.shape, positions[here]),
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
            found, moves = self.origins.resolve(launch, real[untagged])
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
        keep = _lane_mask(shape, flat_positions[inside])
        for t in np.unique(owner[~inside]).tolist():
            bad = ~inside & (owner == t)
            lane_mask = _lane_mask(shape, flat_positions[bad])
            part = self.part = Access(kind, real[bad], esize, site, lane_mask, values, -1, int(t))
            for listener in self.listeners:
                listener.out_of_bounds(part)
        if inside.any():
            for t in np.unique(owner[inside]).tolist():
                if not self._covers(int(t)):
                    lane_positions = np.flatnonzero(inside & (owner == t))
                    self._off_view(access, real[lane_positions], lane_positions, int(t), m)
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
        self, access: Access, real: np.ndarray, lane_positions: np.ndarray, t: int, m: np.ndarray | None
    ) -> None:
        """Tell the checkers about lanes inside tensor ``t``'s allocation but off its view. ``real``
        holds some active lanes' real addresses, ``lane_positions`` their places among the active lanes."""
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
                _lane_mask(shape, flat_positions[lane_positions[off]]),
                access.values,
                tensor.storage,
                t,
            )
            for listener in self.listeners:
                listener.outside_view(part)

    def atomic_order(self, sem: str, scope: str) -> None:
        """Handed to the listeners that judge memory order (a recorder does not)."""
        for listener in self.listeners:
            told = getattr(listener, "atomic_order", None)
            if told is not None:
                told(sem, scope)

    def atomic_result(self, result: AtomicResult) -> None:
        """An atomic ran: its active lanes, as real addresses and the tensor each came from."""
        if self.launch is None:
            return
        shape, mask = result.addresses.shape, result.mask

        lanes = None if mask is None else _lanes(mask, shape)

        def active(a: np.ndarray) -> np.ndarray:
            full = np.broadcast_to(a, shape)
            return full[lanes] if lanes is not None else full.reshape(-1)

        tagged = active(result.addresses)
        part = AtomicResult(
            result.op,
            tagged & _MASK,
            None if result.cmp is None else active(result.cmp),
            active(result.val),
            active(result.old),
            result.site,
            tensor=(tagged >> _SHIFT).astype(np.int64) - 1,
        )
        for listener in self.listeners:
            listener.atomic_result(part)
        for listener in self.listeners:  # a wait let pass: the kernel reads a value that ends it
            forced = getattr(listener, "forced", None)
            value = forced() if forced is not None else None
            if value is not None:
                _hand_back(result.old, lanes, value)
                break

    def nonfinite(self, op: str, inputs: tuple[np.ndarray, ...], output: np.ndarray, site: int) -> None:
        for listener in self.listeners:
            listener.nonfinite(op, inputs, output, site)

    def integer_fault(self, fault: Any) -> None:
        """An int32 op that wrapped, or an integer division by zero (``interpreter.integers.IntFault``)."""
        for listener in self.listeners:
            told = getattr(listener, "integer_fault", None)
            if told is not None:
                told(fault, self.scalars)

    def after_launch(self, fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]) -> None:
        """The launch ran to its end; a listener may run the kernel again, scaled (``--at-size``)."""
        launch = self.launch
        if launch is None:
            return
        for listener in self.listeners:
            after = getattr(listener, "after_launch", None)
            if after is not None:
                after(launch, fn, args, grid, kwargs, self.scalars)

    def assert_failed(self, message: str, failing: np.ndarray, site: int) -> None:
        self.failing = failing
        for listener in self.listeners:
            listener.assert_failed(message, failing, site)

    def launch_end(self, error: BaseException | None) -> None:
        launch, self.launch, self.prepared = self.launch, None, None
        self.current = self.part = self.failing = None
        self.origins.copy_back()
        if launch is not None:
            for listener in list(self.listeners):
                listener.launch_end(launch, error)


# The one guard: the interpreter takes one sanitizer, and every check shares it.
GUARD = Guard()


def _lanes(mask: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A kernel's mask as the bool lanes of an access, broadcast as Triton's language broadcasts it
    (a scalar ``pid == 0`` covers every lane). Bool first: an integer mask (Triton 3.9's interpreter
    makes one from a scalar comparison) would otherwise index lanes by number, and a masked-off
    store would count as a store to lane 0 or 1."""
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        m = m != 0
    return m if m.shape == shape else np.broadcast_to(m, shape)


def _lane_mask(shape: tuple[int, ...], positions: np.ndarray) -> np.ndarray:
    """The lanes at these flat positions, as a bool mask of the access's shape."""
    lane_mask = np.zeros(shape, dtype=bool)
    lane_mask.reshape(-1)[positions] = True
    return lane_mask


def _hand_back(old: np.ndarray, lanes: np.ndarray | None, value: int) -> None:
    """Make an atomic's result (the interpreter's array, which the kernel gets) read ``value`` in
    its active lanes; memory is left as it is."""
    if lanes is None:
        old[...] = value
    else:
        old[np.broadcast_to(lanes, old.shape)] = value
