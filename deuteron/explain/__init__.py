"""``deuteron explain``: what Triton's compiler made of each kernel a script launches, and what to change.

    import deuteron.explain
    result = deuteron.explain.run("script.py", targets=["cuda:90"])
    result.report.as_json()

The journey: :mod:`.capture` records each distinct specialization at launch (Triton's own binder,
for the target's backend) -> :mod:`.cross_compile` compiles it -> :mod:`.analysis` reads the
stages, SASS and resources -> :mod:`.lints` (with :mod:`.flow` and :mod:`.vectorization`) turns
facts into findings -> :mod:`.report` (the JSON document; rendered by
``deuteron.render.explain_report``). :mod:`.roofline` joins a recorded profile; :mod:`.runner` is
the whole journey as one call. Every touch of Triton itself is in ``deuteron.triton.compiler``
(``capture``, ``compile``, ``tools``, ``targets``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from deuteron.explain.errors import ExplainError, KernelCompileError

if TYPE_CHECKING:
    from deuteron.explain.report import ExplainReport
    from deuteron.explain.runner import ExplainRun, compile_all, run

__all__ = ["ExplainError", "ExplainReport", "ExplainRun", "KernelCompileError", "compile_all", "run"]

# Loaded on first use (PEP 562): the command line imports the errors without the compiler's analyses.
_LAZY = {"ExplainReport": ".report", "ExplainRun": ".runner", "compile_all": ".runner", "run": ".runner"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
