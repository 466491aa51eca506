"""Time the parts of a kernel: `pl.scope` around its load, its compute loop and its store.

On an NVIDIA GPU, `deuteron run -b instrumentation` compiles the kernel with Triton's own Proton
passes and times every scope on every warp of every CTA. Without a GPU, `deuteron run -b
interpreter` runs the same kernel in Triton's interpreter and times each scope per program, with
its exact bytes.
"""

import argparse

import torch
import triton
import triton.language as tl

import deuteron.language as pl

pl.enable_semantic("triton")  # Triton's DSL is instrumented only when asked (see docs/instrumentation.md)


@triton.jit
def scaled_sum(x_ptr, y_ptr, n, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    with pl.scope("load"):
        x = tl.load(x_ptr + offs, mask=mask)
    with pl.scope("compute"):
        for _ in range(STEPS):
            x = x * 1.0001 + 0.5
    with pl.scope("store"):
        tl.store(y_ptr + offs, x, mask=mask)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--launches", type=int, default=3)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        args.size = min(args.size, 1 << 12)  # the interpreter runs every program in Python
    x = torch.randn(args.size, device=device)
    y = torch.empty_like(x)
    grid = (triton.cdiv(args.size, 1024),)
    for _ in range(args.launches):
        scaled_sum[grid](x, y, args.size, STEPS=16, BLOCK=1024)
    expected = x.clone()
    for _ in range(16):
        expected = expected * 1.0001 + 0.5
    assert torch.allclose(y, expected, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    main()
