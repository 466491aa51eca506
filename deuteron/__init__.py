"""Deuteron: see inside GPU programs written with Triton and PyTorch.

Profiling API (Proton's shape)::

    import deuteron
    deuteron.start("myrun")                  # backend="auto", context="shadow"
    with deuteron.scope("train", metrics={"flops": 2 * M * N * K}):
        ...
    deuteron.finalize()                      # writes myrun.hatchet

Checking API (kernels run in Triton's interpreter)::

    with deuteron.check() as checked:        # raises deuteron.CheckFailed on an error finding
        kernel[grid](x, out, n)
    checked.report.findings
    deuteron.check.run("script.py").report   # a whole program

Explaining API (cross-compiles each kernel a program launches; no GPU needed)::

    import deuteron.explain       # a separate import: it is not needed to profile or check
    deuteron.explain.run("script.py", targets=["cuda:90"]).report

No module-level ``__getattr__`` here on purpose: CPython then cannot specialise attribute loads
on this module, and ``deuteron.scope`` is on hot paths.

Errors for bad input all derive from ``deuteron.errors.DeuteronError``.
"""

from deuteron import context, data, flags, hooks, metric, mode, specs  # noqa: E402  (Proton's submodules)
from deuteron.check import CheckFailed, check  # noqa: E402
from deuteron.collect.api import (  # noqa: E402
    DEFAULT_PROFILE_NAME,
    activate,
    cpu_timed_scope,
    deactivate,
    enter_scope,
    exit_scope,
    finalize,
    scope,
    start,
)
from deuteron.model.errors import DeuteronError  # noqa: E402
from deuteron.process.program import Program  # noqa: E402  (what check.run and explain.run run)
from deuteron.rocm import configure_runtime  # noqa: E402
from deuteron.state import enter_state, exit_state, metadata_state, state  # noqa: E402
from deuteron.version import __version__
from deuteron.view.profile_block import profile  # noqa: E402  (it renders: not in collect/)

__all__ = [
    "__version__",
    "CheckFailed",
    "DEFAULT_PROFILE_NAME",
    "DeuteronError",
    "Program",
    "activate",
    "check",
    "configure_runtime",
    "context",
    "cpu_timed_scope",
    "data",
    "deactivate",
    "enter_scope",
    "enter_state",
    "exit_scope",
    "exit_state",
    "finalize",
    "flags",
    "hooks",
    "metadata_state",
    "metric",
    "mode",
    "profile",
    "scope",
    "specs",
    "start",
    "state",
]
