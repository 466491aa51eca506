"""A row softmax with one planted bug, for ``deuteron check examples/check_me.py``.

The load's mask compares with ``<=`` instead of ``<``, so the last lane of every row reads one
element past the row: inside the tensor for every row but the last (a silent wrong answer on a
GPU), past the end of the tensor for the last row. Run with ``--fixed`` for the corrected kernel.
"""

from __future__ import annotations

import argparse

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr, FIXED: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols if FIXED else cols <= n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixed", action="store_true", help="run the corrected kernel")
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--cols", type=int, default=100)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(args.rows, args.cols)
    out = torch.empty_like(x)
    block = triton.next_power_of_2(args.cols + 1)
    softmax_kernel[(args.rows,)](x, out, args.cols, x.stride(0), BLOCK=block, FIXED=args.fixed)
    close = torch.allclose(out, torch.softmax(x, dim=1), atol=1e-6)
    print(f"softmax of {args.rows}x{args.cols}: {'matches torch' if close else 'DIFFERS from torch'}")


if __name__ == "__main__":
    main()
