"""``deuteron explain``: what Triton's compiler made of each kernel a script launches, and what to change.

The journey: :mod:`.capture` records each distinct specialization at launch (Triton's own binder,
for the target's backend) -> :mod:`.compiler` cross-compiles it -> :mod:`.analysis` reads the
stages, SASS and resources -> :mod:`.lints` turns facts into findings -> :mod:`.report` renders.
:mod:`.roofline` joins a recorded profile. Every touch of Triton's internals lives in this package:
the JIT in ``capture``, the compiler in ``compiler``, the bundled CUDA tools' paths in ``sass``
and the local GPU's target in ``targets``; supported: triton 3.6 to 3.9.
"""

from .errors import ExplainError, KernelCompileError

__all__ = ["ExplainError", "KernelCompileError"]
