"""GPU targets as Triton knows them: ``GPUTarget`` objects, the backends this wheel has, and the
target of the GPU this process would launch on."""

from __future__ import annotations

from typing import Any


def gpu_target(backend: str, arch: int | str, warp_size: int) -> Any:
    from triton.backends.compiler import GPUTarget

    return GPUTarget(backend, arch, warp_size)


def available_backends() -> list[str]:
    from triton.backends import backends

    return sorted(backends)


def local_target() -> tuple[str, int | str, int] | None:
    """(backend, arch, warp size) of the GPU this process would launch on, or None without one."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        from triton.runtime import driver

        t = driver.active.get_current_target()
    except Exception:  # no driver, no device: no local target
        return None
    if t.backend == "cuda":
        return "cuda", int(t.arch), int(t.warp_size)
    return str(t.backend), str(t.arch), int(t.warp_size)
