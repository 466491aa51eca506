"""Atomics whose scope does not reach the other programs: ``scope="cta"``.

An atomic is indivisible only among the threads of its scope. ``scope="cta"`` orders the threads of
one block (one program) and nothing else, so two programs that update one address with CTA-scope
atomics race like two plain stores: each may read the old value and one update is lost. GPU- and
system-scope atomics (Triton's default is gpu) are never races with each other.

Only CTA-scope atomics are remembered (the last program and line per address), so kernels that use
the default scope pay nothing here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from deuteron.check.findings import Findings
from deuteron.check.happens_before import op_shown
from deuteron.model.access import AtomicResult, LaunchInfo


class AtomicScopes:
    """The CTA-scope atomics of one launch: who last made one to each address, and where."""

    def __init__(self, findings: Findings, report: bool = True) -> None:
        self.findings = findings
        self.report = report
        self.launch: LaunchInfo | None = None
        self.pids: Sequence[tuple[int, int, int]] = ()
        self.seq = -1
        self.sem = "acq_rel"
        self.scope = "gpu"
        self.last: dict[int, tuple[int, int]] = {}  # address -> (program seq, site)

    def begin(self, launch: LaunchInfo, pids: Sequence[tuple[int, int, int]]) -> None:
        self.launch, self.pids, self.seq, self.last = launch, pids, -1, {}

    def program(self, seq: int) -> None:
        self.seq = seq

    def order(self, sem: str, scope: str) -> None:
        """The order of the atomic the interpreter is about to run (its result follows)."""
        self.sem, self.scope = sem, scope

    def atomic(self, result: AtomicResult) -> None:
        scope, self.scope = self.scope, "gpu"  # an order is told for one atomic only
        if scope != "cta" or self.launch is None or result.addresses.size == 0:
            return
        addresses = np.unique(result.addresses)
        clash: list[tuple[int, int, int]] = []  # (address, other program, its site)
        for address in addresses.tolist():
            before = self.last.get(address)
            if before is not None and before[0] != self.seq:
                clash.append((address, before[0], before[1]))
            self.last[address] = (self.seq, result.site)
        if clash and self.report:
            self._race(result, clash)

    def _race(self, result: AtomicResult, clash: list[tuple[int, int, int]]) -> None:
        launch = self.launch
        assert launch is not None
        address, other, other_site = clash[0]
        tensor_index = int(result.tensor[0]) if result.tensor is not None and result.tensor.size else -1
        tensor = launch.tensors[tensor_index] if 0 <= tensor_index < len(launch.tensors) else None
        offset = (address - tensor.data_ptr) // tensor.element_size if tensor is not None else None
        found = launch.sites.get(other_site)
        line = found.line if found is not None else "?"
        me, them = self.pids[self.seq], self.pids[other]
        where = f"{tensor.name} (element offset {offset})" if tensor is not None else f"address {address:#x}"
        self.findings.add(
            "race",
            launch,
            result.site,
            f"program {me}'s atomic_{op_shown(result.op)} with scope='cta' and program {them}'s at line "
            f"{line} update {len(clash)} address(es) of {where} and are not ordered: a CTA-scope atomic is "
            "atomic only within its own program, so one update may be lost; use scope='gpu' (the default)",
            seq=self.seq,
            program=me,
            tensor=tensor.name if tensor is not None else None,
            details={
                "other_program": list(them),
                "other_line": line,
                "access": "atomic/atomic",
                "scope": "cta",
            },
        )
