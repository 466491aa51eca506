"""Where an address the kernel made without a tag points: into an argument's allocation, a device
tensor argument's host copy, or any other live tensor of the process (a pointer array's target,
adopted into the launch and, when on the device, copied to the host for it and back at its end).
Apart from the :class:`~deuteron.check.guard.Guard` because it keeps its own per-launch state (the
process's live tensors, the host copies) and walks the garbage collector, which judging lanes never
does."""

from __future__ import annotations

import gc
import sys
from typing import Any

import numpy as np

from deuteron.model.access import LaunchInfo, TensorArg


class PointerOrigins:
    """The tensor each untagged address of one launch lies in, found once per launch: the live
    tensors are walked at most once, a device tensor is copied to the host at most once, and the
    copies are written back when the launch ends (:meth:`copy_back`)."""

    def __init__(self) -> None:
        self.live: tuple[np.ndarray, np.ndarray, list[Any]] | None = None
        # A device tensor argument's storage address -> (bytes, its host copy's address)
        self.device_copies: dict[int, tuple[int, int]] = {}
        # Host copies made of device tensors a pointer array names: (device storage, host storage),
        # copied back when the launch ends
        self.mirrors: list[tuple[Any, Any]] = []

    def new_launch(self, device_copies: dict[int, tuple[int, int]]) -> None:
        """Forget the last launch's live tensors and copies; these are the new one's argument copies."""
        self.live = None
        self.device_copies = dict(device_copies)
        self.mirrors = []

    def copy_back(self) -> None:
        """What the kernel wrote through a pointer array, back on the device."""
        mirrors, self.mirrors = self.mirrors, []
        for dev, host in mirrors:
            dev.copy_(host)

    def resolve(self, launch: LaunchInfo, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The tensor each untagged address lies in (an argument's allocation, else a live tensor of
        the process: a pointer array's target, added to the launch; -1 for none), and what to add to
        the address to reach it on the host (non-zero for device addresses: the interpreter runs
        on host copies)."""
        out = np.full(addresses.size, -1, dtype=np.int64)
        moves = np.zeros(addresses.size, dtype=np.int64)
        for area in launch.storages:
            hit = (addresses >= np.uint64(area.start)) & (addresses < np.uint64(area.start + area.nbytes))
            out[hit & (out < 0)] = area.tensors[0]
        for dev_start, (nbytes, host_start) in self.device_copies.items():
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
            index, move = self._adopt(launch, tensors[w])
            found[ok & (where == w)] = index
            found_moves[ok & (where == w)] = move
        out[missing] = found
        moves[missing] = found_moves
        return out, moves

    def _live_tensors(self) -> tuple[np.ndarray, np.ndarray, list[Any]]:
        """Every tensor alive in the process, by allocation (one gc walk per launch, when needed)."""
        if self.live is None:
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
            self.live = (starts, ends, [by_start[s] for s in order])
        return self.live

    def _adopt(self, launch: LaunchInfo, found: tuple[Any, int]) -> tuple[int, int]:
        """A live tensor reached through a pointer array, as a tensor of this launch (once), and
        the move from its addresses to the memory the kernel reads: a device tensor is copied to
        the host for the launch, as the interpreter copies arguments, and back at its end."""
        obj, nbytes = found
        storage = obj.untyped_storage()
        start = int(storage.data_ptr())
        move = 0
        if not obj.is_cpu:
            for dev, host in self.mirrors:
                if int(dev.data_ptr()) == start:
                    move = int(host.data_ptr()) - start
                    break
            else:
                host = storage.cpu()
                self.mirrors.append((storage, host))
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
