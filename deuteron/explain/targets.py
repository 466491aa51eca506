"""Compilation targets: ``cuda:90``-style names, the default, and which backends the wheel has."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from deuteron.explain.errors import ExplainError
from deuteron.triton.compiler import targets as triton_targets

# Architectures ptxas in the wheel can build for (and that the occupancy table knows).
CUDA_ARCHS = (80, 86, 87, 89, 90, 100, 103, 120)
_CUDA_RE = re.compile(r"^(?:cuda|sm)[:_]?(\d+)a?$")
_HIP_RE = re.compile(r"^(?:hip|rocm|amd)[:_]?(gfx[0-9a-f]+)$")
# Wave size of the AMD architectures we name: CDNA is wave64, RDNA wave32.
_HIP_WARP = {"gfx90a": 64, "gfx942": 64, "gfx950": 64, "gfx1100": 32, "gfx1200": 32, "gfx1201": 32}


@dataclass(frozen=True)
class Target:
    """A compilation target as explain names it (``cuda:90``, ``hip:gfx942``).

    The warp size is kept because Triton's compiler needs it and the name does not say it for AMD
    (CDNA is wave64, RDNA wave32). Frozen: one target is shared by every specialization made for it.
    """

    backend: str  # "cuda" | "hip"
    arch: int | str  # 90 for cuda, "gfx942" for hip
    warp_size: int

    @property
    def name(self) -> str:
        return f"{self.backend}:{self.arch}"

    def gpu_target(self) -> Any:
        """Triton's own target object, for its compiler."""
        return triton_targets.gpu_target(self.backend, self.arch, self.warp_size)

    def has_tensor_cores(self) -> bool:
        return self.backend == "cuda" and isinstance(self.arch, int) and self.arch >= 70


def parse_target(text: str) -> Target:
    t = text.strip().lower()
    m = _CUDA_RE.match(t)
    if m:
        arch = int(m.group(1))
        if arch not in CUDA_ARCHS:
            raise ExplainError(
                f"unknown target {text!r}: CUDA architectures are "
                f"{', '.join(f'cuda:{a}' for a in CUDA_ARCHS)}"
            )
        _require_backend("nvidia", text)
        return Target("cuda", arch, 32)
    m = _HIP_RE.match(t)
    if m:
        gfx = m.group(1)
        if gfx not in _HIP_WARP:
            raise ExplainError(
                f"unknown target {text!r}: AMD architectures are {', '.join(f'hip:{a}' for a in _HIP_WARP)}"
            )
        _require_backend("amd", text)
        return Target("hip", gfx, _HIP_WARP[gfx])
    raise ExplainError(f"unknown target {text!r}; write cuda:90, cuda:80, cuda:100 or hip:gfx942")


def _require_backend(name: str, text: str) -> None:
    have = triton_targets.available_backends()
    if name not in have:
        raise ExplainError(
            f"target {text!r} needs Triton's {name} backend, which this wheel lacks (has: {have})"
        )


def local_target() -> Target | None:
    """The GPU this process would launch on, or None on a machine without one."""
    found = triton_targets.local_target()
    return Target(*found) if found is not None else None


def default_target() -> Target:
    return local_target() or Target("cuda", 90, 32)
