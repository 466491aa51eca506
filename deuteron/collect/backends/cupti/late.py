"""Placement decided when kernel records arrive, not at launch: a framework that names its
kernels (JAX: each kernel is an HLO instruction of an executable) places them from the records
themselves. The backend only passes the records along; the framework's context source decides.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from deuteron.collect.backends.cupti.join import Resolve
from deuteron.collect.backends.port import Recorder


class Names(Protocol):
    """What the resolver needs of the CUPTI backend: kernel names by pointer, the clock offset, and
    the sessions it files into (whose JAX context, if any, places the kernels)."""

    clock_offset: int
    attached: list[Recorder]

    def kernel_name(self, ptr: int) -> str: ...


def late_placement(backend: Names) -> Resolve | None:
    """The place column's resolver for the first attached session with a JAX context, or None."""
    contexts = [session.setup.frameworks.jax for session in backend.attached]
    jax_context = next((c for c in contexts if c is not None), None)
    if jax_context is None:
        return None

    def resolve(
        kernels: np.ndarray,
        context_ids: np.ndarray,
        launch_ts: np.ndarray,
        thread: np.ndarray,
        place_ids: np.ndarray,
    ) -> np.ndarray:
        ptrs, inverse = np.unique(kernels["name_ptr"], return_inverse=True)
        texts = [backend.kernel_name(int(p)) for p in ptrs.tolist()]
        names = [texts[i] for i in inverse.reshape(-1).tolist()]
        ts = launch_ts.astype(np.int64)
        places = jax_context.assign(
            names,
            kernels["graph_id"].astype(np.int64),
            kernels["correlation"].astype(np.int64),
            kernels["start"].astype(np.int64),
            np.where(ts > 0, ts - backend.clock_offset, 0),
            thread,
            context_ids,
        )
        # a torch place, when there is one, stays
        return np.where((place_ids == 0) & (places != 0), places, place_ids)

    return resolve
