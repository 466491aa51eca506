"""A persistent grid sized from ``kernel.warmup(...)``'s registers and shared memory, as Triton's
tutorial 02 (fused softmax) sizes it: with no GPU the warmed-up kernel must still launch."""

import torch
import triton
import triton.language as tl


@triton.jit
def persistent_rows_kernel(out_ptr, in_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        c = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * n_cols + c, mask=c < n_cols, other=0.0)
        tl.store(out_ptr + row * n_cols + c, x * 2.0, mask=c < n_cols)


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

if __name__ == "__main__":
    x = torch.randn(300, 70, device=DEVICE)
    y = torch.empty_like(x)
    kernel = persistent_rows_kernel.warmup(y, x, 300, 70, BLOCK=128, num_warps=4, grid=(1,))
    kernel._init_handles()
    props = triton.runtime.driver.active.utils.get_device_properties(0)
    by_regs = props["max_num_regs"] // (kernel.n_regs * 32 * 4)
    per_sm = min(by_regs, props["max_shared_mem"] // max(kernel.metadata.shared, 1))
    kernel[(min(props["multiprocessor_count"] * per_sm, 300), 1, 1)](y, x, 300, 70, 128)
    torch.testing.assert_close(y, x * 2.0)
    print("doubled", x.numel(), "floats")
