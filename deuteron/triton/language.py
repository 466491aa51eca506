"""``pl.scope`` and Proton's other intra-kernel calls, compiled or interpreted.

Compiled (on a GPU, with the instrumentation backend on), a scope emits Triton's ``proton.record``
op at its start and end, as ``triton.profiler.language`` does. Like Proton, only the DSLs switched
on with :func:`enable_semantic` are instrumented: Gluon by default; Triton's own DSL needs
``enable_semantic("triton")``, because its compiler pipelines loops and reorders operations across
a scope's edges, which can make a scope's numbers mean less than they seem.

Interpreted (Triton's interpreter, ``TRITON_INTERPRET=1``), a kernel is plain Python run once per
program, the calls arrive without a compiler, and a scope tells the recorder set with
:func:`set_interpreter_recorder` (the interpreter backend's), which times it per program and counts
its bytes and flops. No semantic needs switching on there: nothing is reordered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_KNOWN = ("triton", "gluon")


class ScopeSettings:
    """Which DSLs are instrumented, whether instrumented kernels are being compiled, and who hears
    scopes in the interpreter."""

    def __init__(self) -> None:
        self.semantics: set[str] = {"gluon"}
        self.instrumenting = False
        self.recorder: Callable[[bool, str], None] | None = None


SCOPE_SETTINGS = ScopeSettings()


def enable_semantic(semantic_name: str) -> None:
    """Instrument kernels written in ``semantic_name`` ("triton" or "gluon")."""
    SCOPE_SETTINGS.semantics.add(_known(semantic_name))
    _tell_proton("enable_semantic", semantic_name)


def disable_semantic(semantic_name: str) -> None:
    """Stop instrumenting kernels written in ``semantic_name``."""
    SCOPE_SETTINGS.semantics.discard(_known(semantic_name))
    _tell_proton("disable_semantic", semantic_name)


def _known(name: str) -> str:
    if name not in _KNOWN:
        raise ValueError(f"unknown semantic {name!r}; choose one of: {', '.join(_KNOWN)}")
    return name


def _tell_proton(call: str, name: str) -> None:
    """Keep Triton's own ``triton.profiler.language`` in step, for code that mixes the two."""
    try:
        from triton.profiler import language as proton_language

        getattr(proton_language, call)(name)
    except Exception:  # noqa: BLE001 - no Proton package, or already in that state
        pass


def set_interpreter_recorder(recorder: Callable[[bool, str], None] | None) -> None:
    """Who hears ``(is_start, name)`` of each scope run in the interpreter (None: nobody)."""
    SCOPE_SETTINGS.recorder = recorder


def _semantic_name(semantic: Any) -> str:
    name = type(semantic).__name__
    return "gluon" if "Gluon" in name else "triton"


def _is_compiling(semantic: Any) -> bool:
    """True inside Triton's code generator; False in the interpreter (no semantic, or the
    interpreter's builder)."""
    return (
        semantic is not None
        and getattr(semantic, "builder", None) is not None
        and not type(getattr(semantic, "builder", None)).__name__.startswith("Interpreter")
    )


def record(is_start: Any, scope_name: Any, semantic: Any = None) -> Any:
    """One edge of a scope: a ``proton.record`` op when compiling an instrumented kernel, a call to
    the interpreter's recorder when interpreting, nothing otherwise."""
    is_start, scope_name = _plain(is_start), _plain(scope_name)
    if not _is_compiling(semantic):
        recorder = SCOPE_SETTINGS.recorder
        if recorder is not None:
            recorder(bool(is_start), str(scope_name))
        return None
    if not SCOPE_SETTINGS.instrumenting:
        return None
    dsl = _semantic_name(semantic)
    if dsl not in SCOPE_SETTINGS.semantics:
        raise TypeError(
            f"pl.scope in a {dsl} kernel is not instrumented: call "
            f"deuteron.language.enable_semantic({dsl!r}) "
            "first (off by default because the compiler may reorder work across a scope's edges)"
        )
    from triton._C.libtriton import proton as triton_proton
    from triton.language import core as tl

    return tl.tensor(triton_proton.create_proton_record(semantic.builder, is_start, scope_name), tl.void)


def _plain(value: Any) -> Any:
    return getattr(value, "value", value)  # a constexpr's value


def enter_scope(name: Any, _semantic: Any = None) -> None:
    """The start of scope ``name`` (pair it with :func:`exit_scope` in the same kernel)."""
    record(True, name, _semantic)


def exit_scope(name: Any, _semantic: Any = None) -> None:
    """The end of scope ``name``."""
    record(False, name, _semantic)


# Triton's code generator hands ``_semantic`` to functions marked as builtins.
TRITON_BUILTIN = "__triton_builtin__"  # triton.language.core's marker for builtins
for _fn in (enter_scope, exit_scope):
    setattr(_fn, TRITON_BUILTIN, True)


class scope:  # noqa: N801 - Proton's name
    """``with pl.scope("load"):`` around part of a kernel: its time per warp (on a GPU) or per
    program (in the interpreter)."""

    def __init__(self, name: str, _semantic: Any = None) -> None:
        self.name = name
        self.semantic = _semantic

    def __enter__(self) -> None:
        enter_scope(self.name, _semantic=self.semantic)

    def __exit__(self, *exc: object) -> None:
        exit_scope(self.name, _semantic=self.semantic)
