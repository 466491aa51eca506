"""The instrumentation backend's buffers recorded on an H200 (tests/fixtures/instrumentation),
filed through a real session as the backend files a drain: no GPU needed."""

from __future__ import annotations

import struct

import numpy as np

from deuteron.collect import api
from deuteron.collect.backends.instrumentation.backend import Engine
from deuteron.collect.backends.instrumentation.runtime import Launch, Slot
from deuteron.triton.instrument import KernelScopes
from tests.helpers.paths import FIXTURES_DIR

INSTRUMENTATION_FIXTURES = FIXTURES_DIR / "instrumentation"
# The kernel the H200 buffers were recorded from: three scopes, 4 warps, 4 CTAs.
THREE_SCOPES = KernelScopes("three", {0: "load", 1: "compute", 2: "store"}, {0: -1, 1: -1, 2: -1}, 4, 8320)


def recorded_payload(bin_name: str) -> np.ndarray:
    """A recorded buffer's payload (the bytes after its header), as the drain hands it over."""
    data = (INSTRUMENTATION_FIXTURES / bin_name).read_bytes()
    return np.frombuffer(data[struct.unpack_from("<I", data, 12)[0] :], np.uint8)


def file_recorded_launches(
    session_id: int, bin_name: str, clock_khz: int = 1_980_000, launches: int = 1
) -> None:
    """``launches`` launches of the recorded kernel, each with the buffer ``bin_name``, filed into
    the open session ``session_id`` at the current scope, on a GPU clocked at ``clock_khz``."""
    payload = recorded_payload(bin_name)
    session = api.find(session_id)
    assert session is not None
    engine = Engine()
    engine.sessions.append(session)
    engine.clock_khz = clock_khz
    engine.kernels[1] = THREE_SCOPES
    place = [(session, *session.context_ids())]
    engine._file([(Launch(Slot(0, len(payload)), 1, place), payload) for _ in range(launches)])
