"""A copy whose loads are 128-bit when ``offset`` is a multiple of 16 and 32-bit when it is not."""

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, offset, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offset + offs)
    tl.store(dst + offs, x)


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

if __name__ == "__main__":
    offset = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    n = 4096
    src = torch.arange(n + 64, dtype=torch.float32, device=DEVICE)
    dst = torch.empty(n, dtype=torch.float32, device=DEVICE)
    copy_kernel[(n // 1024,)](src, dst, offset, BLOCK=1024)
    assert torch.equal(dst, src[offset : offset + n])
    print("copied", n, "floats from offset", offset)
