"""Each launch of a Triton kernel as a reproducer needs it (``deuteron run --record-launches``).

A reproducer reruns one launch alone, so it needs what the launch point knows and nothing after
it: the ``@triton.jit`` function, every parameter's value by name (defaults applied), the launch
options given (``num_warps``, ``num_stages``, ... : the keywords that are no parameter), the grid
as resolved (a callable grid is called with the bound arguments, as Triton calls it), and, for
an autotuned kernel, the config the autotuner chose. The listener hears a :class:`Launch` just
before the kernel runs (so it can copy the inputs as the kernel will see them) and may return a
function called just after it (so it can see what the kernel wrote).

Wrapped, as one patch group (``launch.record``) through the patch manager (triton 3.6 to 3.9):

- ``JITFunction.run`` (compiled kernels) and ``InterpretedFunction.run`` (``TRITON_INTERPRET=1``);
  only a thread's outermost launch is heard (``deuteron explain`` runs an interpreted launch inside
  a compiled one's ``run``), and ``warmup`` calls are no launch;
- ``Autotuner.run``, to know the tuner of the launch it makes with its chosen config, and
  ``Autotuner._bench``: the launches that time each config are the autotuner's, not the program's,
  and are not heard. A config's ``pre_hook`` has run when the real launch is heard: its effect is
  in the values the listener copies.

Values are handed over as Python gives them, except Triton's own: a ``tl.constexpr`` is unwrapped
and a ``tl.dtype`` becomes a :class:`TritonDtype` naming its attribute of ``triton.language``, so
the listener never needs Triton. A listener that raises is noted (:func:`problems`), never raised
into the program.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from deuteron.process.patches import MANAGER, Patch, WrapPatch
from deuteron.triton import unsupported

GROUP = "launch.record"
After = Callable[[str], None]  # called after the launch with "" or the error it raised
OnLaunch = Callable[["Launch"], "After | None"]


@dataclass(frozen=True)
class TritonDtype:
    """A ``tl.dtype`` passed as an argument, by its name in ``triton.language`` (``float16``)."""

    name: str


@dataclass
class Launch:
    """One launch, just before it runs (see the module's text)."""

    kernel: Any  # the JITFunction or InterpretedFunction that runs
    name: str
    args: dict[str, Any]  # parameter -> value, in the kernel's order, defaults applied
    constexprs: list[str]  # the parameters annotated tl.constexpr
    options: dict[str, Any]  # launch options given: the keywords that are no parameter
    grid: tuple[int, int, int] | None
    grid_error: str = ""
    interpreted: bool = False
    tuner: dict[str, Any] | None = None  # configs, the chosen config, key, pre_hook


@dataclass
class _State:
    """The one listener, and per thread: the launch being heard, the autotuners running, benchmarks."""

    listener: OnLaunch | None = None
    problems: list[str] = field(default_factory=list)
    local: threading.local = field(default_factory=threading.local)


_s = _State()


def start(listener: OnLaunch) -> None:
    """Hear every launch from now on (one listener at a time); imports Triton."""
    if _s.listener is not None:
        raise RuntimeError("launches are already being recorded")
    try:
        import triton.runtime.jit  # noqa: F401
    except ImportError:
        raise unsupported("launch recording (triton is needed)") from None
    _s.listener = listener
    _s.problems = []
    try:
        MANAGER.acquire(GROUP, _patches)
    except BaseException:
        _s.listener = None
        raise


def stop() -> None:
    if _s.listener is not None:
        _s.listener = None
        MANAGER.release(GROUP)


def problems() -> list[str]:
    """What went wrong while hearing launches (each once): a launch not recorded, and why."""
    return list(_s.problems)


def _note(text: str) -> None:
    if text not in _s.problems and len(_s.problems) < 100:
        _s.problems.append(text)


def _patches() -> list[Patch]:
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    return [
        WrapPatch(JITFunction, "run", _heard),
        WrapPatch(InterpretedFunction, "run", _heard),
        WrapPatch(Autotuner, "run", _tuning),
        WrapPatch(Autotuner, "_bench", _benchmarking),
    ]


def _heard(current: Callable[..., Any]) -> Callable[..., Any]:
    def run(fn: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        local, listener = _s.local, _s.listener
        if warmup or listener is None or getattr(local, "busy", False) or getattr(local, "benchmarks", 0):
            return current(fn, *args, grid=grid, warmup=warmup, **kwargs)
        local.busy = True
        try:
            after = _tell(listener, fn, args, grid, kwargs)
            try:
                result = current(fn, *args, grid=grid, warmup=warmup, **kwargs)
            except BaseException as exc:
                _after(after, f"{type(exc).__name__}: {exc}")
                raise
            _after(after, "")
            return result
        finally:
            local.busy = False

    return run


def _tell(
    listener: OnLaunch, fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]
) -> After | None:
    name = str(getattr(fn, "__name__", "kernel"))
    try:
        return listener(describe(fn, args, grid, kwargs))
    except Exception as exc:  # the program's launch goes on; the record says what was missed
        _note(f"{name}: a launch was not recorded ({type(exc).__name__}: {exc})")
        return None


def _after(after: After | None, error: str) -> None:
    if after is None:
        return
    try:
        after(error)
    except Exception as exc:
        _note(f"the values after a launch were not recorded ({type(exc).__name__}: {exc})")


def _tuning(current: Callable[..., Any]) -> Callable[..., Any]:
    def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
        stack = _s.local.__dict__.setdefault("tuners", [])
        stack.append(tuner)
        try:
            return current(tuner, *args, **kwargs)
        finally:
            stack.pop()

    return run


def _benchmarking(current: Callable[..., Any]) -> Callable[..., Any]:
    def bench(tuner: Any, *args: Any, **kwargs: Any) -> Any:
        local = _s.local
        local.benchmarks = getattr(local, "benchmarks", 0) + 1
        try:
            return current(tuner, *args, **kwargs)
        finally:
            local.benchmarks -= 1

    return bench


def describe(fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]) -> Launch:
    """The launch ``fn[grid](*args, **kwargs)`` as a :class:`Launch` (see the module's text)."""
    from triton.runtime.interpreter import InterpretedFunction

    signature = getattr(fn, "signature", None) or inspect.signature(fn.fn)
    params = signature.parameters
    bound = signature.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in params})
    bound.apply_defaults()
    values = {name: plain(value) for name, value in bound.arguments.items()}
    options = {k: plain(v) for k, v in kwargs.items() if k not in params}
    constexprs = [name for name, p in params.items() if "constexpr" in str(p.annotation)]
    launch = Launch(fn, str(fn.__name__), values, constexprs, options, None)
    launch.interpreted = isinstance(fn, InterpretedFunction)
    try:
        resolved = grid(dict(bound.arguments)) if callable(grid) else grid
        sizes = [int(plain(x)) for x in (resolved if isinstance(resolved, (tuple, list)) else (resolved,))]
        if not 1 <= len(sizes) <= 3:
            raise ValueError(f"a grid of {len(sizes)} dimensions")
        launch.grid = (*sizes, 1, 1)[:3]  # type: ignore[assignment]
    except Exception as exc:  # the launch itself will say what is wrong with its grid
        launch.grid_error = f"{type(exc).__name__}: {exc}"
    tuners = getattr(_s.local, "tuners", [])
    if tuners and _inner(tuners[-1]) is fn:
        launch.tuner = _tuner_facts(tuners[-1])
    return launch


def _inner(kernel: Any) -> Any:
    while not hasattr(kernel, "run") or type(kernel).__name__ in ("Autotuner", "Heuristics"):
        kernel = kernel.fn
    return kernel


def _tuner_facts(tuner: Any) -> dict[str, Any]:
    config = getattr(tuner, "best_config", None)
    chosen = {k: plain(v) for k, v in config.all_kwargs().items()} if config is not None else {}
    return {
        "configs": len(getattr(tuner, "configs", []) or []),
        "config": {k: v for k, v in chosen.items() if isinstance(v, (bool, int, float, str))},
        "key": [str(k) for k in getattr(tuner, "keys", []) or []],
        "pre_hook": bool(config is not None and config.pre_hook is not None),
    }


def plain(value: Any) -> Any:
    """Triton's own values as plain ones: a ``tl.constexpr``'s value, a ``tl.dtype``'s name."""
    import triton.language as tl

    if isinstance(value, tl.constexpr):
        return plain(value.value)
    if isinstance(value, tl.dtype):
        return TritonDtype(dtype_name(value))
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(plain(v) for v in value)
    return value


def dtype_name(value: Any) -> str:
    """The attribute of ``triton.language`` that is this dtype (``float16`` for ``tl.float16``)."""
    import triton.language as tl

    for name, candidate in vars(tl).items():
        if not name.startswith("_") and isinstance(candidate, tl.dtype) and candidate == value:
            return name
    return str(value)
