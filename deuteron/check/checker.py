"""One check as the guard sees it: one listener that feeds every enabled check and the recorder."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from deuteron.check.errors import CheckError
from deuteron.check.findings import KINDS, Findings
from deuteron.check.memory import MemoryChecks
from deuteron.check.nan import NanOrigins
from deuteron.check.recorder import AccessRecorder
from deuteron.check.shadow_memory import tensor_near
from deuteron.model.access import MASKED, STORE, LaunchInfo
from deuteron.triton.interpreter.mends.compile_time import StaticAssertFailed


class Checker:
    """Implements the adapter's AccessListener; counts launches and programs for the report."""

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

    def access(
        self,
        kind: int,
        addresses: np.ndarray,
        storage: int | np.ndarray,
        element_size: int,
        site: int,
        values: np.ndarray | None,
        lanes: np.ndarray | None,
        tensor: int | np.ndarray = -1,
    ) -> None:
        if isinstance(storage, np.ndarray):  # lanes in several tensors (rare): one allocation at a time
            owners = tensor if isinstance(tensor, np.ndarray) else np.full(storage.shape, tensor)
            for s in np.unique(storage):
                here = storage == s
                self._access(
                    kind, addresses[here], int(s), element_size, site, values, lanes, int(owners[here][0])
                )
        else:
            self._access(kind, addresses, storage, element_size, site, values, lanes, int(tensor))

    def _access(
        self,
        kind: int,
        addresses: np.ndarray,
        storage: int,
        element_size: int,
        site: int,
        values: np.ndarray | None,
        lanes: np.ndarray | None,
        tensor: int,
    ) -> None:
        self.memory.access(kind, addresses, storage, element_size, site)
        if kind == STORE and values is not None and self.memory.locks.held:
            shown = np.broadcast_to(values, lanes.shape)[lanes] if lanes is not None else values.reshape(-1)
            if shown.size == addresses.size:
                self.memory.locks.stored(addresses, shown)
        launch = self.launch
        if kind == STORE and self.nan is not None and self.nan.origins and launch is not None:
            owner = (
                launch.tensors[tensor]
                if tensor >= 0
                else tensor_near(launch, launch.storages[storage], int(addresses[0]))
            )
            self.nan.stored(values, lanes, owner.name, site)
        if self.recorder is not None:
            self.recorder.access(kind, addresses, storage, site)

    def masked(self, kind: int, addresses: np.ndarray, storage: int, site: int) -> None:
        """Masked-off lanes inside their tensor's storage: only the access record keeps them."""
        if self.recorder is not None:
            self.recorder.access(kind + MASKED, addresses, storage, site)

    def out_of_bounds(
        self, kind: int, addresses: np.ndarray, lanes: np.ndarray, tensor: int, element_size: int, site: int
    ) -> None:
        if self.bounds:  # the lanes are masked off either way: memory safety is not optional
            self.memory.out_of_bounds(kind, addresses, lanes, tensor, element_size, site)

    def outside_view(
        self, kind: int, addresses: np.ndarray, lanes: np.ndarray, tensor: int, element_size: int, site: int
    ) -> None:
        if self.views:
            self.memory.outside_view(kind, addresses, lanes, tensor, element_size, site)

    def atomic_result(
        self,
        op: str,
        addresses: np.ndarray,
        tensors: np.ndarray,
        cmp: np.ndarray | None,
        val: np.ndarray,
        old: np.ndarray,
        site: int,
    ) -> None:
        self.memory.locks.atomic(op, addresses, tensors, cmp, val, old, site)

    def nonfinite(self, op: str, inputs: tuple[np.ndarray, ...], output: np.ndarray, site: int) -> None:
        if self.nan is not None:
            self.nan.value(op, inputs, output, site)

    def assert_failed(self, message: str, failing: np.ndarray, site: int) -> None:
        """A ``tl.device_assert`` that failed in some lanes of the running program."""
        launch = self.launch
        if not self.asserts or launch is None:
            return
        lanes = np.argwhere(failing)
        program = self.pids[-1] if self.pids else None
        first = [int(i) for i in lanes[0]] if lanes.size else []
        self.findings.add(
            "assert",
            launch,
            site,
            f"tl.device_assert failed in {len(lanes)} lane(s): {message!r}"
            + (f"; the first is lane {first}" if first else ""),
            seq=len(self.pids) - 1,
            program=program,
            details={"message": message, "lanes": int(len(lanes)), "first_lane": first},
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
        self.memory.finish(completed=error is None)  # may raise with fail_fast: the launch is over
