"""Record the native-context CUPTI fixture CI replays (tests/fixtures/cupti_native): run on a GPU.

    DEUTERON_CUPTI_RECORD=tests/fixtures/cupti_native python scripts/record_native_fixture.py

Known work, twice in scope ``step``: a torch elementwise add and a matmul (launched from
libtorch's C++), and a Triton kernel (launched from Triton's compiled launcher). The replay test
asserts which C/C++ frames each launch came from.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

import deuteron


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def step(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    c = a + b
    (c @ b).sum()
    scale_kernel[(triton.cdiv(a.numel(), 1024),)](a, out, a.numel(), BLOCK=1024)


def main() -> None:
    a, b = torch.randn(256, 256, device="cuda"), torch.randn(256, 256, device="cuda")
    out = torch.empty_like(a)
    step(a, b, out)  # warm-up: compile and lazy init outside the profile
    torch.cuda.synchronize()
    deuteron.start("fixture", backend="cupti", context="native")
    for _ in range(2):
        with deuteron.scope("step"):
            step(a, b, out)
    deuteron.finalize()


if __name__ == "__main__":
    main()
