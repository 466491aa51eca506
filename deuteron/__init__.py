"""Deuteron: see inside GPU programs written with Triton and PyTorch.

Profiling API (Proton's shape)::

    import deuteron
    deuteron.start("myrun")                  # backend="auto", context="shadow"
    with deuteron.scope("train", metrics={"flops": 2 * M * N * K}):
        ...
    deuteron.finalize()                      # writes myrun.hatchet
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

__all__ = [
    "__version__",
    "activate",
    "deactivate",
    "enter_scope",
    "exit_scope",
    "finalize",
    "profile",
    "scope",
    "start",
    "state",
]
