"""A kernel that binds libdevice functions by name, as Liger's kernels do
(``from triton.language.extra.libdevice import rsqrt``): while it runs in the interpreter those names
hold Deuteron's wrappers, and a reproducer must still import Triton's own."""

import torch
import triton
import triton.language as tl
from triton.language.extra.libdevice import rsqrt, tanh


@triton.jit
def bound_norm_kernel(x_ptr, y_ptr, n, eps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    scale = rsqrt(tl.sum(x * x, axis=0) / n + eps)
    tl.store(y_ptr + offs, tanh(x * scale), mask=offs < n)


def launch() -> None:
    """Imported again first, as a script run under ``deuteron run`` imports it: after the
    interpreter's libdevice is in place, so the names bind Deuteron's wrappers."""
    import importlib
    import sys

    fresh = importlib.reload(sys.modules[__name__])
    x = torch.randn(100, generator=torch.Generator().manual_seed(3))
    fresh.bound_norm_kernel[(1,)](x, torch.empty_like(x), 100, 1e-6, BLOCK=128)
