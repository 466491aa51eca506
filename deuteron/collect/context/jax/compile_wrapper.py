"""The JAX context's compile wrapper: ``jax._src.compiler.compile_or_get_cached`` wrapped, so that
every executable JAX compiles (every jitted function, every eagerly run op) hands over its
optimized HLO and the interval it compiled in.

Apart from the context source because it is the only code that touches JAX internals, and it runs
on the program's thread at every compile; what is kept (:class:`CompiledModule`) is parsed later,
off that thread, by whoever matches kernels to it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from deuteron.collect.context.jax.hlo import Executable, parse_module
from deuteron.model.errors import DeuteronError
from deuteron.process.patches import AttributePatch, after_import

COMPILER = "jax._src.compiler"


class JaxContextError(DeuteronError, RuntimeError):
    """``-c jax`` cannot work here (JAX missing, or its compiler entry point moved)."""


class CompiledModule:
    """One executable: its HLO text until parsed, its compile interval (session clock, ns)."""

    __slots__ = ("module", "text", "began", "ended", "parsed")

    def __init__(self, module: str, text: str | None, began: int, ended: int) -> None:
        self.module, self.text, self.began, self.ended = module, text, began, ended
        self.parsed: Executable | None = None

    def executable(self) -> Executable:
        if self.parsed is None:
            self.parsed = parse_module(self.text) if self.text else Executable(self.module)
            self.text = None
        return self.parsed


class CompileWrapper:
    """The wrapper of ``compile_or_get_cached`` for one session: installed now when JAX's compiler
    is imported, else when the program imports it; each compile is handed to ``on_compiled``
    (its modules' HLO texts, :func:`hlo_texts`, and when it began and ended)."""

    def __init__(self, on_compiled: Callable[[list[tuple[str, str | None]], int, int], None]) -> None:
        self.on_compiled = on_compiled
        self._patch: AttributePatch | None = None
        self._waiting: Callable[[], None] | None = None

    def start(self) -> None:
        if COMPILER in sys.modules:
            self._install()
        elif "jax" in sys.modules:
            raise JaxContextError(f"-c jax: this JAX has no {COMPILER} (JAX 0.4.30 or newer is needed)")
        else:  # wrapped when the program imports JAX
            self._waiting = after_import(COMPILER, self._install)

    def stop(self) -> None:
        if self._waiting is not None:
            self._waiting()
            self._waiting = None
        if self._patch is not None:
            self._patch.restore()
            self._patch = None

    def _install(self) -> None:
        self._waiting = None
        compiler = sys.modules.get(COMPILER)
        original = getattr(compiler, "compile_or_get_cached", None)
        if compiler is None or original is None:
            raise JaxContextError(f"-c jax: {COMPILER}.compile_or_get_cached is missing in this JAX version")
        on_compiled = self.on_compiled

        def compile_or_get_cached(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter_ns()
            executable = original(*args, **kwargs)
            ended = time.perf_counter_ns()
            on_compiled(hlo_texts(executable, module_name(args, kwargs)), began, ended)
            return executable

        compile_or_get_cached.__wrapped__ = original  # type: ignore[attr-defined]
        self._patch = AttributePatch(compiler, "compile_or_get_cached", compile_or_get_cached)
        self._patch.apply()


def hlo_texts(executable: Any, module: str) -> list[tuple[str, str | None]]:
    """An executable's optimized HLO, (module name, text) per module; ``[(module, None)]`` for an
    executable without HLO (a backend that keeps none: its interval still counts)."""
    try:
        texts = [(str(m.name), m.to_string()) for m in executable.hlo_modules()]
    except Exception:
        return [(module, None)]
    return texts or [(module, None)]


def module_name(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The name of the module ``compile_or_get_cached`` was called for (its ``sym_name``), or ``?``."""
    computation = kwargs.get("computation", args[1] if len(args) > 1 else None)
    try:
        return str(computation.operation.attributes["sym_name"]).strip('"')  # type: ignore[union-attr]
    except Exception:
        return "?"
