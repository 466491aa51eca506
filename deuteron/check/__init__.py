"""``deuteron.check``: run Triton kernels in the interpreter and check every grid program.

Checks: out-of-bounds (error), races between grid programs of one launch (error), NaN/Inf origins
(warning) and store coverage (info). Kernels still compute their real outputs: lanes that would
touch memory outside every tensor argument are masked off (loads give ``other`` or 0 there).

    with deuteron.check() as result:      # raises CheckFailed on exit if an error was found
        my_kernel[grid](x, y)
    result.report.findings

    deuteron.check.run("script.py", "--size", "1000").report   # a whole program, as a library

Kernels must be defined with ``TRITON_INTERPRET=1`` set before ``import triton``;
``deuteron check script.py`` does that for you.

The journey: :mod:`.guard` (attached to the interpreter: which tensor each lane addresses; a
launch's tensors from :mod:`.launch_tensors`, untagged pointers' tensors from :mod:`.pointer_origins`;
only the grid programs :mod:`.grid_programs` selects run) ->
:mod:`.checker` (one check's listener) -> :mod:`.memory` (:mod:`.bounds`, :mod:`.races`,
:mod:`.coverage` over :mod:`.shadow_memory`; the memory model's order from :mod:`.happens_before`,
:mod:`.atomic_scopes`, :mod:`.locks`, spins let pass by :mod:`.spins`, and how an atomic's value is
used from :mod:`.branches`) and :mod:`.nan` -> :mod:`.findings` (grouped) ->
``CheckReport``; :mod:`.recorder` keeps the accesses for ``--record``; :mod:`.api` is the entry.
Each access travels the whole way as one ``model.access.Access`` record (the guard hands on parts
of it, narrowed to the lanes it judged), and each atomic's outcome as one ``model.access.AtomicResult``.
"""

from deuteron.check.api import CheckFailed, CheckRun, CheckSession
from deuteron.check.errors import CheckError
from deuteron.check.findings import KINDS, SEVERITY_OF, FindingLimitReached
from deuteron.model.finding import CheckReport
from deuteron.model.finding import CheckReport as Report
from deuteron.process.program import Program

# ``deuteron.check(...)`` opens a check around a block, ``deuteron.check.run(...)`` checks a whole
# program: one name for the one verb.
check = CheckSession
run = CheckSession.run

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
    "Program",
    "check",
    "run",
]
