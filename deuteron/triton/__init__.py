"""The only package of Deuteron that imports ``triton``; everything else gets Triton facts from here.

Modules: :mod:`.language` (``pl.scope``, compiled or interpreted), :mod:`.instrument` (Triton's
Proton passes on and off, a kernel's scopes), :mod:`.interpreter` (events from Triton's
interpreter: bytes and flops for profiling in ``interpreter.profiling``, accesses for the sanitizer
in ``interpreter.checking`` under the protocol of ``interpreter.sanitizer_protocol``, wired in by
``interpreter.adapter``; mends of the interpreter in ``interpreter.mends``), :mod:`.runtime` (the
emulated driver, ``@triton.autotune``, Triton's launch-hook chains in ``runtime.launch_hooks``, one
compiled-mode launch run in the interpreter in ``runtime.jit_launch``, ``runtime.launch_metadata``,
the live kernels' code in ``runtime.cubins``) and :mod:`.compiler` (each launch keyed with Triton's
own binder in ``compiler.capture``, ``compiler.compile`` for a target without a GPU,
``compiler.tools``: the CUDA tools the wheel bundles, ``compiler.targets``: GPU targets). Every
interception goes through the one patch manager, :data:`deuteron.process.patches.MANAGER`.

Importing this package does not import ``triton``: ``deuteron run`` must set ``TRITON_INTERPRET``
before the user's script imports it, so every module here imports Triton inside its functions.
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib import metadata

from deuteron.model.errors import DeuteronError

# The Triton versions every module here is written and tested against (both ends in CI).
SUPPORTED = ((3, 6), (3, 9))
SUPPORTED_TEXT = f"triton {SUPPORTED[0][0]}.{SUPPORTED[0][1]} to {SUPPORTED[1][0]}.{SUPPORTED[1][1]}"


class TritonSupportError(DeuteronError, RuntimeError):
    """The installed Triton lacks something Deuteron relies on; the message says what and which
    versions are supported."""


def installed_version() -> str:
    """The installed triton's version string ("" when it is not installed), without importing it."""
    module = sys.modules.get("triton")
    if module is not None and isinstance(getattr(module, "__version__", None), str):
        return str(module.__version__)
    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return ""


def proton_knob(name: str) -> object:
    """``triton.knobs.proton.<name>`` as the program set it, None when unset or when Triton has not
    been imported (reading it never imports Triton)."""
    triton = sys.modules.get("triton")
    return getattr(getattr(getattr(triton, "knobs", None), "proton", None), name, None)


def unsupported(what: str) -> TritonSupportError:
    """The error for a Triton that lacks ``what``."""
    version = installed_version()
    if not version:
        return TritonSupportError(
            f"triton is not installed (needed for {what.split(' (')[0]}): pip install 'deuteron[triton]'"
        )
    return TritonSupportError(f"triton {version} has no {what}; supported: {SUPPORTED_TEXT}")


def enable_interpreter_mode() -> None:
    """Make kernels defined from now on run in the interpreter (Triton reads this at decoration)."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        if "triton" in sys.modules:
            warnings.warn(
                "deuteron: triton was imported before TRITON_INTERPRET=1 was set; kernels defined "
                "earlier are not interpreted and not profiled. Use `deuteron run script.py` or set "
                "TRITON_INTERPRET=1 before importing triton.",
                stacklevel=3,
            )
        os.environ["TRITON_INTERPRET"] = "1"


def quiet_compile_notice() -> None:
    """Triton 3.9 warns once per process, when options are first parsed, that
    ``TRITON_DEFAULT_FP_FUSION`` is unset. Where Deuteron parses options itself (explain's compiles,
    a ``launch_metadata`` record under the interpreter) the notice is about Deuteron's compile,
    not the user's program: it is spent silently, as Triton's own test setup does."""
    try:
        from triton._utils import FP_FUSION_DEFAULT_WARNING, warn_once
    except ImportError:  # a Triton without the notice
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warn_once(FP_FUSION_DEFAULT_WARNING)
