"""One check as the guard sees it: one listener that feeds every enabled check and the recorder."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from deuteron.check.errors import CheckError
from deuteron.check.findings import KINDS, Findings
from deuteron.check.int_arith import IntChecks
from deuteron.check.memory import MemoryChecks
from deuteron.check.nan import NanOrigins
from deuteron.check.recorder import AccessRecorder
from deuteron.check.shadow_memory import tensor_near
from deuteron.model.access import STORE, Access, AtomicResult, LaunchInfo
from deuteron.triton.interpreter.integers import IntFault
from deuteron.triton.interpreter.mends.compile_time import StaticAssertFailed


class Checker:
    """One check's listener (a :class:`~deuteron.model.access.AccessListener`): feeds every enabled
    check and the recorder from the guard's events, and counts launches and programs for the
    report. One per check, so nested checks with different settings share the guard's events."""

    def __init__(
        self, findings: Findings, checks: Iterable[str] = KINDS, recorder: AccessRecorder | None = None
    ) -> None:
        enabled = set(checks)
        unknown = enabled - set(KINDS)
        if unknown:
            raise CheckError(f"unknown check(s) {', '.join(sorted(unknown))}; choose from {', '.join(KINDS)}")
        self.findings = findings
        self.memory = MemoryChecks(
            findings,
            races="race" in enabled,
            coverage="store-coverage" in enabled,
            locks="lock" in enabled,
        )
        self.nan = NanOrigins(findings) if "nan" in enabled else None
        self.ints = IntChecks(findings, "int-overflow" in enabled, "div-by-zero" in enabled)
        # The same kernels at other argument sizes (``--at-size``/``--scale``): set by the session
        self.at_size: Any = None
        self.bounds = "out-of-bounds" in enabled
        self.views = "outside-view" in enabled
        self.asserts = "assert" in enabled
        self.recorder = recorder
        self.keeps_masked = recorder is not None  # the guard then hands over masked-off lanes too
        self.launches = 0
        self.programs = 0
        self.failed_launches = 0
        self.kernels: dict[str, int] = {}
        self.launch: LaunchInfo | None = None
        self.pids: list[tuple[int, int, int]] = []

    def launch_begin(self, launch: LaunchInfo) -> None:
        self.launch = launch
        self.pids = []
        self.memory.begin(launch, self.pids)
        self.ints.begin(launch)
        if self.nan is not None:
            self.nan.begin(launch, self.pids)
        if self.recorder is not None:
            self.recorder.begin(launch)

    def program_begin(self, seq: int, pid: tuple[int, int, int]) -> None:
        self.pids.append(pid)
        self.memory.program(seq)
        if self.nan is not None:
            self.nan.program(seq)
        if self.recorder is not None:
            self.recorder.program(seq, pid)

    def access(self, access: Access) -> None:
        storage = access.storage
        if isinstance(storage, np.ndarray):  # lanes in several tensors (rare): one allocation at a time,
            # each with the part's mask whole (the lock and NaN checks compare it with the addresses)
            tensor = access.tensor
            owners = tensor if isinstance(tensor, np.ndarray) else np.full(storage.shape, tensor)
            for s in np.unique(storage):
                here = storage == s
                self._access(
                    replace(
                        access,
                        addresses=access.addresses[here],
                        storage=int(s),
                        tensor=int(owners[here][0]),
                    )
                )
        else:
            self._access(access)

    def _access(self, access: Access) -> None:
        """One allocation's lanes of an access: to the memory checks, the lock tracker (a store of
        0 may release a lock), the NaN origins (a store of a non-finite value) and the recorder."""
        self.memory.access(access)
        kind, values, lanes, addresses = access.kind, access.values, access.mask, access.addresses
        locks = self.memory.locks
        if kind == STORE and values is not None and (locks.held or locks.spins.watched):
            shown = np.broadcast_to(values, lanes.shape)[lanes] if lanes is not None else values.reshape(-1)
            if shown.size == addresses.size:
                locks.stored(addresses, shown, access.site)
        launch = self.launch
        if kind == STORE and self.nan is not None and self.nan.origins and launch is not None:
            tensor = int(access.tensor)  # one allocation's lanes: one tensor
            owner = (
                launch.tensors[tensor]
                if tensor >= 0
                else tensor_near(launch, launch.storages[int(access.storage)], int(addresses[0]))
            )
            self.nan.stored(access, owner.name)
        if self.recorder is not None:
            self.recorder.access(access)

    def masked(self, access: Access) -> None:
        """Masked-off lanes inside their tensor's storage (``access.kind`` is the kind plus MASKED):
        only the access record keeps them."""
        if self.recorder is not None:
            self.recorder.access(access)

    def out_of_bounds(self, access: Access) -> None:
        if self.bounds:  # the lanes are masked off either way: memory safety is not optional
            self.memory.out_of_bounds(access)

    def outside_view(self, access: Access) -> None:
        if self.views:
            self.memory.outside_view(access)

    def atomic_order(self, sem: str, scope: str) -> None:
        self.memory.scopes.order(sem, scope)
        self.memory.order.order(sem, scope)

    def atomic_result(self, result: AtomicResult) -> None:
        self.memory.locks.atomic(result)
        self.memory.scopes.atomic(result)
        self.memory.order.atomic(result)

    def forced(self) -> int | None:
        """The value the last atomic should hand back to the kernel instead of what it found: a spin
        on a flag nothing changes, let pass (:mod:`.spins`); None to leave it."""
        return self.memory.locks.forced

    def nonfinite(self, op: str, inputs: tuple[np.ndarray, ...], output: np.ndarray, site: int) -> None:
        if self.nan is not None:
            self.nan.value(op, inputs, output, site)

    def integer_fault(self, fault: IntFault, scalars: dict[str, Any]) -> None:
        """An int32 op that wrapped, or an integer ``//``/``%`` by zero, in the running program."""
        program = self.pids[-1] if self.pids else None
        self.ints.fault(fault, scalars, len(self.pids) - 1, program)

    def after_launch(
        self,
        launch: LaunchInfo,
        fn: Any,
        args: tuple[Any, ...],
        grid: Any,
        kwargs: dict[str, Any],
        scalars: Any,
    ) -> None:
        if self.at_size is not None:
            self.at_size.after_launch(launch, fn, args, grid, kwargs)

    def assert_failed(self, message: str, failing: np.ndarray, site: int) -> None:
        """A ``tl.device_assert`` that failed in some lanes of the running program."""
        launch = self.launch
        if not self.asserts or launch is None:
            return
        lane_indices = np.argwhere(failing)
        program = self.pids[-1] if self.pids else None
        first = [int(i) for i in lane_indices[0]] if lane_indices.size else []
        self.findings.add(
            "assert",
            launch,
            site,
            f"tl.device_assert failed in {len(lane_indices)} lane(s): {message!r}"
            + (f"; the first is lane {first}" if first else ""),
            seq=len(self.pids) - 1,
            program=program,
            details={"message": message, "lanes": int(len(lane_indices)), "first_lane": first},
        )

    def launch_end(self, launch: LaunchInfo, error: BaseException | None) -> None:
        if isinstance(error, StaticAssertFailed):  # a compile would have rejected it: not a launch
            self.launch = None
            if self.recorder is not None:
                self.recorder.end()
            self.memory.finish(completed=False)
            return
        self.launches += 1
        self.programs += len(self.pids)
        self.kernels[launch.kernel] = self.kernels.get(launch.kernel, 0) + 1
        if error is not None:
            self.failed_launches += 1
        if self.recorder is not None:
            self.recorder.end()
        self.launch = None
        # Coverage only where every program ran (not with --program, nor after an error); may raise
        # with fail_fast: the launch is over
        every = len(self.pids) == launch.grid[0] * launch.grid[1] * launch.grid[2]
        self.memory.finish(completed=error is None and every)
