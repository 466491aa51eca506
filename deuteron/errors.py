"""Every error Deuteron raises for bad input derives from :class:`DeuteronError`; its message is
one line naming the cause and the way out. The command line prints it as ``deuteron: error: ...``
and exits 2. The base lives in ``model/`` so every layer can raise it; the others where they
are raised. Catch ``DeuteronError`` to catch them all.
"""

from .check.errors import CheckError
from .collect.backends import BackendError
from .collect.session import SessionError
from .explain.errors import ExplainError, KernelCompileError
from .formats import FormatError
from .model.errors import DeuteronError, MetricError
from .processors import FilterError
from .target import TargetError
from .triton import TritonSupportError

__all__ = [
    "BackendError",
    "CheckError",
    "DeuteronError",
    "ExplainError",
    "FilterError",
    "FormatError",
    "KernelCompileError",
    "MetricError",
    "SessionError",
    "TargetError",
    "TritonSupportError",
]
