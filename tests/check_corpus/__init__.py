"""Real Triton kernels that the `deuteron check` tests run: correct ones, ones with one planted bug each,
and one that cannot be interpreted at all."""
