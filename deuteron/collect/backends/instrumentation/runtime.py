"""The device side of instrumentation: profile buffers for launches, and reading them back rarely.

Proton gives every instrumented launch the same buffer and, after each launch, synchronises the
stream and copies the buffer to the host. Deuteron gives each launch its own slot of one device
*arena* (the launcher asks for it through Triton's profile allocator) and reads the arena back only
when it is full, at a phase boundary, ``flush`` or ``finalize``: one synchronisation and one copy for
many launches. Memory stays bounded by the arena (``DEUTERON_INSTRUMENTATION_ARENA_MB``, 64 MiB by
default); a launch bigger than the arena gets a buffer of its own, read back at the next drain.
``InstrumentationHook.enable_host_buffer`` (Proton's switch) or
``DEUTERON_INSTRUMENTATION_FLUSH=launch`` reads back after every launch, as Proton does.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ARENA_BYTES = int(float(os.environ.get("DEUTERON_INSTRUMENTATION_ARENA_MB", "64")) * (1 << 20))


@dataclass
class Slot:
    """One launch's piece of device memory: in the arena (``own`` None) or a buffer of its own."""

    offset: int
    size: int
    own: Any = None


@dataclass
class Launch:
    """An instrumented launch waiting for its buffer to be read back."""

    slot: Slot
    function: int  # the CUfunction handle, which keys the kernel's scopes
    places: list[tuple[Any, int, int]] = field(default_factory=list)  # (session, context id, state id)
    hooked: tuple[str, dict[str, Any]] | None = None  # the launch hook's name and metrics (hook="triton")


class _Pending(threading.local):
    slot: Slot | None = None
    hooked: tuple[str, dict[str, Any]] | None = None  # the launch hook's reading of the next launch


class Arena:
    """Device memory handed to the launcher slot by slot (``allocate``), and read back in one copy
    (``read``). The device tensor is made at first use, so a run without instrumented launches
    never touches the GPU."""

    def __init__(self, capacity: int = ARENA_BYTES) -> None:
        self.capacity = capacity
        self.buffer: Any = None
        self.used = 0
        self.pending = _Pending()
        self.lock = threading.Lock()

    def allocate(self, size: int, alignment: int, stream: int | None) -> Any:
        """Triton's profile allocator: a device tensor of ``size`` bytes for the next launch; the
        slot is remembered for the launch hook, which runs just after (same thread)."""
        import torch

        aligned = -(-max(size, 1) // alignment) * alignment
        with self.lock:
            if self.buffer is None:
                self.buffer = torch.empty(self.capacity, dtype=torch.uint8, device="cuda")
            start = -(-self.used // alignment) * alignment
            if start + aligned <= self.capacity:
                self.used = start + aligned
                slot = Slot(start, size)
                tensor = self.buffer[start : start + aligned]
            else:
                tensor = torch.empty(aligned, dtype=torch.uint8, device="cuda")
                slot = Slot(0, size, own=tensor)
        self.pending.slot = slot
        return tensor

    def full(self) -> bool:
        return self.used > self.capacity * 0.9

    def claim(self) -> Slot | None:
        """The slot the calling thread's last allocation made, once."""
        slot, self.pending.slot = self.pending.slot, None
        return slot

    def read(self, slots: list[Slot]) -> list[np.ndarray]:
        """Every slot's bytes, after the device has finished writing them; the arena is then free."""
        import torch

        if not slots:
            return []
        torch.cuda.synchronize()
        with self.lock:
            host = self.buffer[: self.used].cpu().numpy() if self.buffer is not None and self.used else None
            self.used = 0
        out = []
        for slot in slots:
            if slot.own is not None:
                out.append(slot.own.cpu().numpy()[: slot.size])
            elif host is not None:
                out.append(host[slot.offset : slot.offset + slot.size])
            else:
                out.append(np.zeros(0, np.uint8))
        return out

    def release(self) -> None:
        self.buffer = None
        self.used = 0
