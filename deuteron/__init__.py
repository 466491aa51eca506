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
"""

__version__ = "0.1.0"

from .api import (  # noqa: E402
    activate,
    deactivate,
    enter_scope,
    exit_scope,
    finalize,
    profile,
    scope,
    start,
    state,
)
from .checks import CheckFailed, check  # noqa: E402

__all__ = [
    "__version__",
    "CheckFailed",
    "activate",
    "check",
    "deactivate",
    "enter_scope",
    "exit_scope",
    "finalize",
    "profile",
    "scope",
    "start",
    "state",
]
