"""Find the line a kernel spends its time on: `deuteron run --sample` on two kernels.

`rms_scale` does its work in one line, a chain of square roots (the multi-function unit is the
bottleneck: samples stall on `mio_throttle`); `gather_add` waits on memory in the line that loads
through an index (`long_scoreboard`). On an NVIDIA GPU:

    deuteron run --sample examples/hot_line.py
    deuteron view deuteron.hatchet --advise

shows each kernel > `file:line@kernel` with its samples and stall reasons, and which line to change.
`rms_scale` runs from two places (one warm-up launch, then the steps), so its samples are shared
between them by GPU time. Without a GPU the script runs in Triton's interpreter, at a small size.
"""

import argparse

import torch
import triton
import triton.language as tl

import deuteron as proton


@triton.jit
def rms_scale(x_ptr, y_ptr, n, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    for _ in range(STEPS):
        x = tl.sqrt(x * x + 1.0)
    tl.store(y_ptr + offs, x, mask=mask)


@triton.jit
def gather_add(x_ptr, idx_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    x = tl.load(x_ptr + idx, mask=mask)
    tl.store(y_ptr + offs, x + 1.0, mask=mask)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=1 << 24)
    parser.add_argument("--steps", type=int, default=9)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        args.size, args.steps = 1 << 10, 1  # the interpreter runs every program in Python
    x = torch.rand(args.size, device=device)
    idx = torch.randint(0, args.size, (args.size,), device=device, dtype=torch.int32)
    y = torch.empty_like(x)
    grid = (triton.cdiv(args.size, 1024),)
    with proton.scope("warmup"):
        rms_scale[grid](x, y, args.size, STEPS=32, BLOCK=1024)
    with proton.scope("steps"):
        for _ in range(args.steps):
            rms_scale[grid](x, y, args.size, STEPS=32, BLOCK=1024)
            gather_add[grid](x, idx, y, args.size, BLOCK=1024)
    expected = x[idx.long()] + 1.0
    assert torch.allclose(y, expected), "gather_add wrote wrong values"


if __name__ == "__main__":
    main()
