"""``deuteron.check``: run Triton kernels in the interpreter and check every program.

Checks: out-of-bounds (error), races between programs of one launch (error), NaN/Inf origins
(warning) and store coverage (info). Kernels still compute their real outputs: lanes that would
touch memory outside every tensor argument are masked off (loads give ``other`` or 0 there).

    with deuteron.check() as result:      # raises CheckFailed on exit if an error was found
        my_kernel[grid](x, y)
    result.report.findings

    deuteron.check.run("script.py", "--size", "1000").report   # a whole program, as a library

Kernels must be defined with ``TRITON_INTERPRET=1`` set before ``import triton``;
``deuteron check script.py`` does that for you.

The journey: :mod:`.guard` (attached to the interpreter: which tensor each lane addresses) ->
:mod:`.checker` (one check's listener) -> :mod:`.memory` (:mod:`.bounds`, :mod:`.races`,
:mod:`.coverage` over :mod:`.shadow`) and :mod:`.nan` -> :mod:`.findings` (grouped) ->
``CheckReport``; :mod:`.recorder` keeps the accesses for ``--record``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..model.finding import CheckReport
from ..model.finding import CheckReport as Report
from ..target import Target
from .errors import CheckError
from .findings import KINDS, SEVERITY_OF, FindingLimitReached
from .recorder import DEFAULT_LIMIT
from .runner import CheckRun, run
from .session import CheckFailed, CheckSession

__all__ = [
    "KINDS",
    "SEVERITY_OF",
    "CheckError",
    "CheckFailed",
    "CheckReport",
    "CheckRun",
    "CheckSession",
    "FindingLimitReached",
    "Report",
    "Target",
    "check",
    "run",
]


class _Check:
    """``deuteron.check(...)`` opens a check around a block; ``deuteron.check.run(...)`` checks a
    whole program. One object so that both read as the one verb they are."""

    run = staticmethod(run)

    def __call__(
        self,
        *,
        checks: Iterable[str] = KINDS,
        fail_fast: bool = False,
        raise_on: str | None = "error",
        record: str | Path | None = None,
        record_limit: int = DEFAULT_LIMIT,
    ) -> CheckSession:
        """Check every interpreted launch inside the ``with`` block.

        raise_on: raise CheckFailed on exit when a finding this severe or worse exists ("error",
        "warning", "info"), or None to only collect them in ``.report``. fail_fast: stop the launch
        at the first error (raises FindingLimitReached). record: also write access records there.
        """
        return CheckSession(
            checks=checks, fail_fast=fail_fast, raise_on=raise_on, record=record, record_limit=record_limit
        )


check = _Check()
