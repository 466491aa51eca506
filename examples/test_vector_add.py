"""A small test suite for the README's ``deuteron run pytest examples/test_vector_add.py``: the
example's kernels against torch, each test a scope of the profile."""

import torch

from examples.vector_add import add, matmul


def test_add_matches_torch() -> None:
    x, y = torch.rand(3000), torch.rand(3000)
    assert torch.allclose(add(x, y), x + y, rtol=1.3e-6, atol=1e-5)


def test_matmul_matches_torch() -> None:
    a, b = torch.rand(48, 40), torch.rand(40, 56)
    assert torch.allclose(matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
