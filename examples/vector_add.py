"""Vector add and a blocked matmul under scopes: the README's first example.

Runs anywhere: on a machine without a GPU, `deuteron run` executes the kernels in Triton's
interpreter (the profile then carries exact bytes and flops); with a GPU, torch uses it.
"""

import argparse

import torch
import triton
import triton.language as tl

import deuteron


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(
            a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K)
        )
        b = tl.load(
            b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N)
        )
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=torch.float32, device=a.device)
    matmul_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=32)
    return c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000, help="vector length")
    parser.add_argument("--size", type=int, default=64, help="matmul M = N = K")
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() and not triton.knobs.runtime.interpret else "cpu"
    x, y = torch.rand(args.n, device=device), torch.rand(args.n, device=device)
    s = args.size
    a, b = torch.rand(s, s, device=device), torch.rand(s, s, device=device)
    for _ in range(args.steps):
        # The interpreter counts bytes and flops itself; on a GPU, give a scope
        # metrics={"flops": ...} to get tflop/s (they add to whatever kernels report).
        with deuteron.scope("vector_add"):
            out = add(x, y)
        with deuteron.scope("matmul"):
            c = matmul(a, b)
    assert torch.allclose(out, x + y, rtol=1.3e-6, atol=1e-5)
    assert torch.allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    print(f"ok: vector add of {args.n} and a {s}x{s}x{s} matmul, {args.steps} steps each")


if __name__ == "__main__":
    main()
