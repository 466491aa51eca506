"""``deuteron explain``: what Triton's compiler made of each kernel a script launches, and what to change.

    result = deuteron.explain.run("script.py", targets=["cuda:90"])
    result.report.as_json()

The journey: :mod:`.capture` records each distinct specialization at launch (Triton's own binder,
for the target's backend) -> :mod:`.compiler` cross-compiles it -> :mod:`.analysis` reads the
stages, SASS and resources -> :mod:`.lints` turns facts into findings -> :mod:`.report` (the JSON
document; rendered by ``deuteron.render.explain_report``). :mod:`.roofline` joins a recorded
profile; :mod:`.runner` is the whole journey as one call. Every touch of Triton itself is in
``deuteron.triton`` (``jit_capture``, ``compiler``, ``tools``, ``targets``).
"""

from .errors import ExplainError, KernelCompileError
from .report import ExplainReport
from .runner import ExplainRun, compile_all, run

__all__ = ["ExplainError", "ExplainReport", "ExplainRun", "KernelCompileError", "compile_all", "run"]
