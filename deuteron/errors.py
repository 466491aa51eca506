"""Every error Deuteron raises for bad input derives from :class:`DeuteronError`; its message is
one line naming the cause and the way out. The command line prints it as ``deuteron: error: ...``
and exits 2. The base lives in ``model/`` so every layer can raise it; the others where they
are raised. Catch ``DeuteronError`` to catch them all.
"""

from deuteron.check.errors import CheckError
from deuteron.collect.backends import BackendError
from deuteron.collect.session import SessionError
from deuteron.explain.errors import ExplainError, KernelCompileError
from deuteron.formats import FormatError
from deuteron.model.errors import DeuteronError, MetricError
from deuteron.process.program import TargetError
from deuteron.repro.errors import ReproError
from deuteron.triton import TritonSupportError
from deuteron.view.processors import FilterError

__all__ = [
    "BackendError",
    "CheckError",
    "DeuteronError",
    "ExplainError",
    "FilterError",
    "FormatError",
    "KernelCompileError",
    "MetricError",
    "ReproError",
    "SessionError",
    "TargetError",
    "TritonSupportError",
]
