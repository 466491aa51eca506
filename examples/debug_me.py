"""A 2-D block kernel with one planted bug, for ``deuteron check --pdb`` and ``--program``.

``scale_rows`` multiplies each row of a (rows, 8) matrix by its row number, one 4x8 block of rows
per program. The row mask compares with ``<=`` instead of ``<``, so the last program's block
reaches one row past the end of ``x``. ``--print`` shows each block with ``tl.device_print``
and ``print`` (one program at a time under ``deuteron check --program``); ``--stop`` calls
``breakpoint()`` in the kernel; ``--fixed`` runs the corrected kernel.
"""

from __future__ import annotations

import argparse

import torch
import triton
import triton.language as tl


@triton.jit
def scale_rows(
    x_ptr,
    out_ptr,
    n_rows,
    BLOCK_R: tl.constexpr,
    COLS: tl.constexpr,
    FIXED: tl.constexpr,
    PRINT: tl.constexpr,
    STOP: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)[:, None]
    cols = tl.arange(0, COLS)[None, :]
    mask = rows < n_rows if FIXED else rows <= n_rows
    x = tl.load(x_ptr + rows * COLS + cols, mask=mask, other=0.0)
    y = x * rows.to(tl.float32)
    if PRINT:
        tl.device_print("y", y)
        print("rows", rows)
    if STOP:
        breakpoint()
    tl.store(out_ptr + rows * COLS + cols, y, mask=rows < n_rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixed", action="store_true", help="run the corrected kernel")
    parser.add_argument("--print", action="store_true", help="print each program's block")
    parser.add_argument("--stop", action="store_true", help="breakpoint() in the kernel")
    parser.add_argument("--rows", type=int, default=15)
    args = parser.parse_args()
    x = torch.arange(args.rows * 8, dtype=torch.float32).reshape(args.rows, 8)
    out = torch.full_like(x, -1.0)
    grid = (triton.cdiv(args.rows, 4),)
    scale_rows[grid](x, out, args.rows, BLOCK_R=4, COLS=8, FIXED=args.fixed, PRINT=args.print, STOP=args.stop)
    expected = x * torch.arange(args.rows, dtype=torch.float32)[:, None]
    done = (out != -1.0).all(dim=1)
    print(
        f"rows computed: {int(done.sum())} of {args.rows}; "
        f"{'all match' if torch.equal(out[done], expected[done]) else 'some DIFFER'}"
    )


if __name__ == "__main__":
    main()
