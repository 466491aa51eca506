"""What a sanitizer attached to Triton's interpreter hears (see :mod:`.adapter`'s ``attach``), and
the one exception it may raise to stop a launch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from deuteron.model.access import Access, AtomicResult, SiteTable


class Abort(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a sanitizer to stop the launch; it reaches the caller itself, not as InterpreterError."""


@dataclass(frozen=True)
class PreparedLaunch:
    """A launch as the interpreter has bound it, before its pointers are made: the kernel's
    function; ``tensors``, each tensor the programs can address (inside tuples and tensor
    descriptors too) as (name after its parameter, host tensor, the object the interpreter converts
    to a pointer: the tensor or its ``tl.reinterpret`` wrapper); the table its ``site`` ids index;
    ``device_copies``, each device tensor argument's storage address mapped to (bytes, address
    of its host copy), so that pointers the kernel reads from memory (device addresses) can be found
    in the host copies."""

    fn: Any
    tensors: list[tuple[str, Any, Any]]
    table: SiteTable
    device_copies: dict[int, tuple[int, int]] = field(default_factory=dict)
    # The launch's scalar arguments (ints, floats, bools; constexprs too) by name: a finding's witness
    scalars: dict[str, Any] = field(default_factory=dict)


class Sanitizer(Protocol):
    """What a sanitizer hears. ``site`` ids index the table handed over at ``launch_prepare``.

    Addresses it is given carry provenance tags (see ``model.access.TAG_SHIFT``): the sanitizer
    tags each tensor argument's pointer through ``tag_of``; this module strips the tags before
    Triton touches memory."""

    def launch_prepare(self, launch: PreparedLaunch) -> None:
        """The launch's host tensors, before its pointers are made."""
        ...

    def tag_of(self, arg: Any) -> int:
        """The tag for this tensor argument's pointer (0 for none)."""
        ...

    def tag_addresses(self, addresses: np.ndarray) -> np.ndarray:
        """Integers the kernel turns into pointers (a pointer array's entries): tagged with the
        tensor each points into, where one is known."""
        ...

    def launch_begin(self, grid: tuple[int, int, int]) -> None: ...

    def program_begin(self, pid: tuple[int, int, int]) -> bool | None:
        """The grid loop is at grid program ``pid``: return False to skip it (its outputs untouched)."""
        ...

    def access(self, access: Access) -> np.ndarray | None:
        """One load, store or atomic as the interpreter saw it (tagged addresses, the kernel's
        mask). Return None to go on as asked, or the lanes to keep (bool, the addresses' shape)."""
        ...

    def atomic_order(self, sem: str, scope: str) -> None:
        """The memory order of the atomic about to be reported: ``sem`` (relaxed, acquire, release,
        acquire_release) and ``scope`` (cta, gpu, system), as the builder got them."""
        ...

    def atomic_result(self, result: AtomicResult) -> None:
        """What an atomic did, after it ran: its (tagged) addresses, the lanes that ran, its
        operands, the values it found in memory and its source site."""
        ...

    def nonfinite(self, op: str, inputs: tuple[np.ndarray, ...], output: np.ndarray, site: int) -> None: ...

    def assert_failed(self, message: str, failing: np.ndarray, site: int) -> None:
        """A ``tl.device_assert`` whose condition is false in the lanes ``failing`` (bool)."""
        ...

    def launch_end(self, error: BaseException | None) -> None: ...
