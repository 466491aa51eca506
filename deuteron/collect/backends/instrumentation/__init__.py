"""The instrumentation backend: ``pl.scope``s inside kernels, timed per CTA and warp on the GPU.

:mod:`.decode` reads the buffers instrumented kernels write, :mod:`.aggregate` turns them into
scope rows and trace spans, :mod:`.runtime` holds the device memory, :mod:`.backend` ties them to
sessions and to Triton's compiler (through :mod:`deuteron.triton.instrument`).
"""

from deuteron.collect.backends.instrumentation.backend import InstrumentationBackend, unavailable_reason

__all__ = ["InstrumentationBackend", "unavailable_reason"]
