"""bf16 in the interpreter: Triton's own interpreter does arithmetic on bf16's bits; under Deuteron
(checking or profiling) bf16 kernels compute what torch computes, bit for bit."""

from __future__ import annotations

import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import deuteron  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@triton.jit
def elementwise_kernel(x_ptr, y_ptr, out_ptr, cmp_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m)
    y = tl.load(y_ptr + i, mask=m)
    if OP == "mul":
        r = x * y
    elif OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "div":
        r = x / y
    elif OP == "max":
        r = tl.maximum(x, y)
    elif OP == "where":
        r = tl.where(x < y, x, y)
    elif OP == "fma":
        r = x * y + x
    else:
        r = (tl.exp(x.to(tl.float32)) * 0.5).to(tl.bfloat16)
    tl.store(out_ptr + i, r, mask=m)
    tl.store(cmp_ptr + i, (x < y).to(tl.int32), mask=m)


@triton.jit
def reduce_kernel(x_ptr, sum_ptr, max_ptr, arg_ptr, cum_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(sum_ptr, tl.sum(x, axis=0))
    tl.store(max_ptr, tl.max(x, axis=0))
    tl.store(arg_ptr, tl.argmax(x, axis=0))
    tl.store(cum_ptr + i, tl.cumsum(x.to(tl.float32), axis=0))


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b))


@triton.jit
def cast_kernel(x_ptr, bf_ptr, int_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m)
    b = x.to(tl.bfloat16)
    tl.store(bf_ptr + i, b, mask=m)
    tl.store(int_ptr + i, b.to(tl.int32), mask=m)


REFERENCE = {
    "mul": lambda x, y: x * y,
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "div": lambda x, y: x / y,
    "max": torch.maximum,
    "where": lambda x, y: torch.where(x < y, x, y),
    "fma": lambda x, y: x * y + x,  # two roundings, as the interpreter (and an unfused GPU) does
    "exp": lambda x, y: (torch.exp(x.float()) * 0.5).bfloat16(),
}


@pytest.mark.parametrize("op", sorted(REFERENCE))
def test_elementwise_bf16_matches_torch_bit_for_bit(op: str) -> None:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1000, generator=g).bfloat16()
    y = torch.randn(1000, generator=g).bfloat16() + 3  # no division by ~0
    out, cmp = torch.empty_like(x), torch.empty(1000, dtype=torch.int32)
    with deuteron.check() as check:
        elementwise_kernel[(8,)](x, y, out, cmp, 1000, OP=op, BLOCK=128)
    assert not check.report.findings
    assert torch.equal(out, REFERENCE[op](x, y))
    assert torch.equal(cmp.bool(), x < y)


def test_bf16_reductions_dot_and_casts_under_profiling_too(tmp_path) -> None:  # type: ignore[no-untyped-def]
    x = torch.randn(64).bfloat16()
    s, mx, arg, cum = torch.empty(1, dtype=torch.bfloat16), torch.empty(1, dtype=torch.bfloat16), torch.empty(
        1, dtype=torch.int32
    ), torch.empty(64)
    a, b = torch.randn(32, 32).bfloat16(), torch.randn(32, 32).bfloat16()
    c = torch.empty(32, 32)
    f = torch.tensor([1.00390625, 1.01171875, -2.5, 3.999, 1e30, -7.7] * 4)  # RNE ties and carries
    bf, ints = torch.empty(24, dtype=torch.bfloat16), torch.empty(24, dtype=torch.int32)
    with deuteron.profile(str(tmp_path / "p"), backend="interpreter"):  # CPU tensors, on a GPU machine too
        reduce_kernel[(1,)](x, s, mx, arg, cum, N=64)
        dot_kernel[(1,)](a, b, c, N=32)
        cast_kernel[(1,)](f, bf, ints, 24, BLOCK=32)
    assert s.item() == x.float().sum().bfloat16().item()
    assert mx.item() == x.max().item() and arg.item() == int(x.float().argmax())
    torch.testing.assert_close(cum, torch.cumsum(x.float(), 0))
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-5, atol=1e-4)
    assert torch.equal(bf, f.bfloat16())  # round to nearest even, as the GPU's cvt.rn does
    assert torch.equal(ints, f.bfloat16().to(torch.int32))


def test_a_nan_made_in_bf16_is_found_where_it_is_made() -> None:
    x = torch.zeros(128, dtype=torch.bfloat16)
    out, cmp = torch.empty_like(x), torch.empty(128, dtype=torch.int32)
    with deuteron.check(raise_on=None) as check:
        elementwise_kernel[(1,)](x, x, out, cmp, 128, OP="div", BLOCK=128)  # 0 / 0
    (f,) = check.report.findings
    assert f.kind == "nan" and "divide" in f.message
    assert torch.isnan(out).all()
