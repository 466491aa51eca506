"""Two Triton kernels whose time sits on one line each (marked ``# HOT``), to check on a GPU that
``deuteron run --sample`` puts their PC samples on that line (issue 39).

Why this exists: libdevice's transcendentals and Triton's own ``tl.sum`` are inlined into the
kernel, and their debug info put samples on ``<no source line>``, on the line after the call (an
inline-asm block's ``.loc`` lines) or on Triton's ``standard.py``. Here:

- ``sin_exp_loop``: a loop of ``tl.sin`` and ``tl.exp`` on one line (libdevice's sinf inlined, with
  its range reduction); its values stay in [-1, 3], so sinf never takes its slow path;
- ``row_sum_loop``: a loop of ``tl.sum`` over a register tile on one line (Triton's reduction
  inlined from ``standard.py``): the samples must land on the ``# HOT`` line, with
  ``tl.sum (standard.py:N)`` below it.

On an NVIDIA GPU::

    deuteron run --sample benchmarks/hot_line_kernel.py
    python benchmarks/hot_line_check.py deuteron.hatchet      # the # HOT line's share, the unplaced share

and to record the replay fixture CI runs (``tests/collect/backends/cupti/test_hot_line_fixture.py``)::

    DEUTERON_CUPTI_RECORD=tests/fixtures/cupti_hot_line deuteron run --sample benchmarks/hot_line_kernel.py

Target: each kernel's ``# HOT`` line holds 90% or more of its samples, under 2% unplaced. Without a
GPU the script runs in Triton's interpreter at a small size (there is nothing to sample).
"""

from __future__ import annotations

import argparse

import triton
import triton.language as tl


@triton.jit
def sin_exp_loop(x_ptr, y_ptr, n, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.load(x_ptr + offs, mask=mask, other=0.0)
    for _ in range(STEPS):
        acc = tl.sin(acc) * 0.999 + tl.exp(acc * -0.5)  # HOT
    tl.store(y_ptr + offs, acc, mask=mask)


@triton.jit
def row_sum_loop(x_ptr, y_ptr, STEPS: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    x = tl.load(x_ptr + rows[:, None] * COLS + tl.arange(0, COLS)[None, :])
    acc = tl.zeros((ROWS,), tl.float32)
    for i in range(STEPS):
        acc += tl.sum(x * (i + 1.0), axis=1)  # HOT
    tl.store(y_ptr + rows, acc)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=1 << 22, help="elements of sin_exp_loop's input")
    parser.add_argument("--rows", type=int, default=1 << 15, help="rows of row_sum_loop's input")
    parser.add_argument("--steps", type=int, default=256, help="loop trips of each kernel")
    parser.add_argument("--repeat", type=int, default=5, help="launches of each kernel")
    args = parser.parse_args()
    import torch  # here: the tests compile the kernels above without paying for torch's import

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":  # the interpreter runs every program in Python
        args.size, args.rows, args.steps, args.repeat = 1 << 11, 64, 2, 1
    block, rows, cols = 2048, 32, 128
    x = torch.rand(args.size, device=device)
    y = torch.empty_like(x)
    tile = torch.rand(args.rows, cols, device=device)
    sums = torch.empty(args.rows, device=device)
    for _ in range(args.repeat):
        sin_exp_loop[(triton.cdiv(args.size, block),)](x, y, args.size, STEPS=args.steps, BLOCK=block)
        row_sum_loop[(args.rows // rows,)](tile, sums, STEPS=args.steps, ROWS=rows, COLS=cols)
    expected = tile.sum(dim=1) * (args.steps * (args.steps + 1) / 2)
    assert torch.allclose(sums, expected, rtol=1e-3), "row_sum_loop summed wrong"
    assert bool(torch.isfinite(y).all()), "sin_exp_loop left its bounds"


if __name__ == "__main__":
    main()
