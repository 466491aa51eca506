"""GPU timing through CUPTI (the native shim lands with the GPU-backend issue).

Until that shim is built this backend reports itself unavailable, so ``auto`` falls back to
the interpreter and ``--backend cupti`` fails with a clear reason instead of half-working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...session import Session


def unavailable_reason() -> str | None:
    return "the native CUPTI shim is not part of this build yet"


class CuptiBackend:  # pragma: no cover - unreachable while unavailable_reason() is not None
    name = "cupti"

    def start(self, session: Session) -> None:
        raise NotImplementedError

    def stop(self, session: Session) -> None:
        raise NotImplementedError
