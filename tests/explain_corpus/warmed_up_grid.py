"""A persistent grid sized from ``kernel.warmup(...)``'s registers and shared memory, as Triton's
tutorial 02 (fused softmax) sizes it: with no GPU the warmed-up kernel must still launch. The
kernel and its launch are the sanitizer corpus's (``tests.check_corpus.patterns``), run here as a
program for ``deuteron explain``."""

import torch

from tests.check_corpus.patterns import warmed_up_grid

if __name__ == "__main__":
    doubled, expected = warmed_up_grid()
    assert torch.allclose(doubled, expected, rtol=1.3e-6, atol=1e-5)
    print("doubled", doubled.numel(), "floats")
