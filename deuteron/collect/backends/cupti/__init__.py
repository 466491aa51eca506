"""GPU timing through CUPTI (see :mod:`.backend`): a C shim (``_shim.c``) records launches and
kernel records without the GIL, :mod:`.records` decodes its buffers in bulk, :mod:`.join` matches
kernels to the contexts of their launches, :mod:`.library` finds libcupti; PC sampling is a C shim
of its own (``_sampling.c``), read by :mod:`.sampling` and turned into source lines by
:mod:`.sampled_lines`."""

from deuteron.collect.backends.cupti.backend import CuptiBackend
from deuteron.collect.backends.cupti.library import (
    CONFLICT_FIX,
    CuptiConflictError,
    loaded_library,
    unavailable_reason,
)
from deuteron.collect.backends.cupti.replay import replay
from deuteron.collect.backends.cupti.sampling import SampleConfig

__all__ = [
    "CONFLICT_FIX",
    "CuptiBackend",
    "CuptiConflictError",
    "loaded_library",
    "SampleConfig",
    "replay",
    "unavailable_reason",
]
