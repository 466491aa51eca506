"""Patterns from real kernels that a sanitizer must get right, each written here from scratch:

- concat by ``tl.where`` (one load whose lanes lie in two tensors);
- pointer arrays (grouped GEMM's list of tensors), with a bad pointer and a stray past a target;
- padded views (``x[:, :60]`` of a (100, 64) tensor) read and written inside the view, and a
  mask that lets lanes into the padding;
- a stray lane that lands in a neighbouring argument;
- a spin-lock reduction (layer-norm backward's pattern: partial sums of row groups guarded by one
  lock per group), clean, without the release, and with one access outside the lock;
- ``@triton.autotune`` with three configs, libdevice math, and Triton driver queries.

Clean cases return (got, want) so the test can compare real outputs with torch; planted bugs mark
their line with ``# BUG: <kind>`` (read back by :func:`bug_line`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

Pair = tuple[torch.Tensor, torch.Tensor]

# --- concat by tl.where -----------------------------------------------------------------------------


@triton.jit
def concat_kernel(a_ptr, b_ptr, out_ptr, na, nb, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_a = i < na
    src = tl.where(in_a, a_ptr + i, b_ptr + (i - na + SHIFT))
    x = tl.load(src, mask=i < na + nb)  # BUG: out-of-bounds
    tl.store(out_ptr + i, x, mask=i < na + nb)


def concat(shift: int = 0) -> Pair:
    a, b = torch.randn(300), torch.randn(500)
    out = torch.empty(800)
    concat_kernel[(triton.cdiv(800, 128),)](a, b, out, 300, 500, SHIFT=shift, BLOCK=128)
    return out, torch.cat([a, b])


# --- pointer arrays ---------------------------------------------------------------------------------


@triton.jit
def scale_each_kernel(ptrs, sizes, EXTRA: tl.constexpr, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    base = tl.load(ptrs + g).to(tl.pointer_type(tl.float32))
    n = tl.load(sizes + g)
    i = tl.arange(0, BLOCK)
    x = tl.load(base + i, mask=i < n + EXTRA)  # BUG: out-of-bounds
    tl.store(base + i, x * 2.0, mask=i < n)


def pointer_array(extra: int = 0, bad: bool = False, device: str = "cpu") -> Pair:
    tensors = [torch.randn(n, device=device) for n in (100, 37, 64)]
    want = [t * 2 for t in tensors]
    addresses = [t.data_ptr() for t in tensors]
    if bad:
        addresses[1] = 4096  # a pointer into no tensor
    ptrs = torch.tensor(addresses, dtype=torch.int64, device=device)
    sizes = torch.tensor([t.numel() for t in tensors], dtype=torch.int32, device=device)
    scale_each_kernel[(len(tensors),)](ptrs, sizes, EXTRA=extra, BLOCK=128)
    return torch.cat(tensors), torch.cat(want)


# --- padded views -----------------------------------------------------------------------------------


@triton.jit
def copy_rows_kernel(x_ptr, y_ptr, x_stride, y_stride, cols, MASK_COLS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    keep = c < MASK_COLS
    x = tl.load(x_ptr + row * x_stride + c, mask=keep, other=0.0)
    tl.store(y_ptr + row * y_stride + c, x + 1.0, mask=keep)  # BUG: outside-view


def padded_view(mask_cols: int = 60) -> Pair:
    """x and y are the first 60 columns of (100, 64) tensors: their rows are 64 apart."""
    x = torch.randn(100, 64)[:, :60]
    y_full = torch.zeros(100, 64)
    y = y_full[:, :60]
    copy_rows_kernel[(100,)](x, y, x.stride(0), y.stride(0), 60, MASK_COLS=mask_cols, BLOCK=64)
    return y, x + 1.0


# --- a stray that lands in a neighbour ---------------------------------------------------------------


@triton.jit
def stray_kernel(x_ptr, y_ptr, out_ptr, n, skew, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i + skew, mask=m)  # BUG: out-of-bounds
    y = tl.load(y_ptr + i, mask=m)
    tl.store(out_ptr + i, x + y, mask=m)


def stray_into_neighbour() -> int:
    """x's lanes are skewed by exactly the distance to y, so every one reads y's memory. Returns the
    skew: the first lane is x[skew], the index the finding must name."""
    x, y = torch.randn(1000), torch.randn(1000)
    skew = (y.data_ptr() - x.data_ptr()) // 4
    out = torch.empty(1000)
    stray_kernel[(8,)](x, y, out, 1000, skew, BLOCK=128)
    return skew


# --- spin lock reduction -----------------------------------------------------------------------------


@triton.jit
def grouped_sum_kernel(
    X, Partial, Lock, N, GROUP: tl.constexpr, BLOCK: tl.constexpr, RELEASE: tl.constexpr, GUARD: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0)
    group = row % GROUP
    Lock += group
    Count = Lock + GROUP
    Partial += group * N + cols
    if GUARD:
        while tl.atomic_cas(Lock, 0, 1) == 1:  # BUG: lock
            pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        x += tl.load(Partial, mask=mask)
    tl.store(Partial, x, mask=mask)  # BUG: race
    if RELEASE:
        tl.atomic_xchg(Lock, 0)


def grouped_sum(release: bool = True, guard: bool = True) -> Pair:
    rows, group, n = 24, 4, 50
    x = torch.randn(rows, n)
    partial = torch.zeros(group, n)
    lock = torch.zeros(2 * group, dtype=torch.int32)
    grouped_sum_kernel[(rows,)](x, partial, lock, n, GROUP=group, BLOCK=64, RELEASE=release, GUARD=guard)
    return partial, torch.stack([x[g::group].sum(0) for g in range(group)])


# --- autotune with three configs ------------------------------------------------------------------------


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((64, 2), (128, 4), (256, 8))],
    key=["n"],
)
@triton.jit
def tuned_axpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out_ptr + i, a * tl.load(x_ptr + i, mask=m) + tl.load(y_ptr + i, mask=m), mask=m)


def autotuned(n: int = 1000) -> Pair:
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    tuned_axpy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, 3.0, n)
    return out, 3.0 * x + y


# --- a config the compiler would reject, and warmup() (tutorials 06 and 02) ------------------------------


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (256, 64, 128)], key=["n"])
@triton.jit
def small_block_kernel(x_ptr, out_ptr, n, WIDTH: tl.constexpr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK <= WIDTH)  # configs with a bigger block do not compile
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.load(x_ptr + i, mask=i < n) + 1.0, mask=i < n)


def rejected_config(n: int = 500) -> Pair:
    x, out = torch.randn(n), torch.empty(n)
    small_block_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, WIDTH=128)
    return out, x + 1.0


@triton.jit
def persistent_rows_kernel(out_ptr, in_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        c = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * n_cols + c, mask=c < n_cols, other=0.0)
        tl.store(out_ptr + row * n_cols + c, x * 2.0, mask=c < n_cols)


def warmed_up_grid() -> Pair:
    """Size a persistent grid from the compiled kernel's resources, as tutorial 02 does."""
    x = torch.randn(300, 70)
    y = torch.empty_like(x)
    kernel = persistent_rows_kernel.warmup(y, x, 300, 70, BLOCK=128, num_warps=4, grid=(1,))
    kernel._init_handles()
    props = triton.runtime.driver.active.utils.get_device_properties(0)
    by_regs = props["max_num_regs"] // (kernel.n_regs * 32 * 4)
    per_sm = min(by_regs, props["max_shared_mem"] // kernel.metadata.shared)
    kernel[(props["multiprocessor_count"] * per_sm, 1, 1)](y, x, 300, 70, 128)
    return y, x * 2.0


# --- libdevice math (a layer norm as Liger writes it, and some others) --------------------------------------


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < N
    eps = eps.to(tl.float32)  # a float argument is an fp32 scalar on the GPU (Liger's norms do this)
    x = tl.load(x_ptr + row * N + c, mask=m, other=0.0)
    rstd = libdevice.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + c, mask=m)
    y = x * rstd * w + 0.5 * libdevice.erf(x) + libdevice.asin(libdevice.tanh(x))
    tl.store(y_ptr + row * N + c, y, mask=m)


def libdevice_norm() -> Pair:
    x, w = torch.randn(16, 100), torch.randn(100)
    y = torch.empty_like(x)
    rms_norm_kernel[(16,)](x, w, y, 100, 1e-6, BLOCK=128)
    want = (
        x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-6) * w
        + 0.5 * torch.erf(x)
        + torch.asin(torch.tanh(x))
    )
    return y, want


# --- driver queries -----------------------------------------------------------------------------------------


def driver_queries() -> dict[str, object]:
    """What tutorial 02 asks before it launches anything."""
    driver = triton.runtime.driver.active
    props = driver.utils.get_device_properties(0)
    return {
        "device": str(driver.get_active_torch_device()),
        "target": driver.get_current_target(),
        "sms": props["multiprocessor_count"],
        "smem": props["max_shared_mem"],
        "regs": props["max_num_regs"],
        "warp": props["warpSize"],
        "bench": triton.testing.do_bench(lambda: torch.randn(64).sum(), rep=5),
    }


_BUG = re.compile(r"#\s*BUG:\s*(\S+)\s*$")


def bug_line(kernel: Callable[..., object], kind: str) -> int:
    """The line (in this file) of the kernel's ``# BUG: kind`` comment."""
    fn = getattr(kernel, "fn", kernel)
    while hasattr(fn, "fn"):
        fn = fn.fn
    source, first = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    for i, text in enumerate(source):
        match = _BUG.search(text)
        if match and match.group(1) == kind:
            return first + i
    raise LookupError(f"no '# BUG: {kind}' line in {getattr(fn, '__name__', fn)}")
