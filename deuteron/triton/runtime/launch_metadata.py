"""A kernel's ``launch_metadata`` hook, evaluated for an interpreted launch as Triton would on a GPU:
``hook(grid, metadata, bound arguments)`` with the caller's defaults filled in, and ``metadata``
the same ``KernelMetadata`` record a compiled launch passes (every field Triton's compiler sets:
``num_ctas``, ``target``, ``arch``, ``shared``, ...), built from the backend's own option parsing
for the target Triton's driver reports. What only a real compile knows (``shared``, ``hash``) is 0
or empty: the interpreter compiles nothing."""

from __future__ import annotations

from collections import namedtuple
from functools import lru_cache
from typing import Any

from deuteron.triton import quiet_compile_notice

# Set by Triton's compile pipeline beside the backend's options (their values for a kernel that
# compiled to nothing: the interpreter compiles nothing).
_COMPILED = {
    "hash": "",
    "shared": 0,
    "tmem_size": 0,
    "global_scratch_size": 0,
    "global_scratch_align": 1,
    "profile_scratch_size": 0,
    "profile_scratch_align": 1,
    "tensordesc_meta": [],
}


def lazy(jit_fn: Any, grid: tuple[int, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The ``LazyDict`` a compiled launch hands Triton's launch hooks: the kernel's name (no
    function or stream: the interpreter loads no module), and its ``launch_metadata`` hook, if it
    has one, to be evaluated only when a hook asks (``.get()``)."""
    from triton.compiler.compiler import LazyDict

    name = jit_fn.fn.__name__
    found = LazyDict({"name": name, "function": None, "stream": None})
    hook = getattr(jit_fn, "kwargs", {}).get("launch_metadata")
    if hook is None:
        return found

    def evaluate() -> dict[str, Any]:
        import inspect

        names = list(getattr(jit_fn, "arg_names", []))
        bound: dict[str, Any] = dict(zip(names, args, strict=False))
        bound.update({k: v for k, v in kwargs.items() if k in names})
        # Defaults the caller left out, as Triton's own binding would fill them in.
        for p in inspect.signature(jit_fn.fn).parameters.values():
            if p.name not in bound and p.default is not inspect.Parameter.empty:
                bound[p.name] = p.default
        result = hook(grid, kernel_metadata(name, kwargs), bound)
        return dict(result) if result else {}

    found.add(evaluate, ())
    return found


def grid_of(jit_fn: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, int, int]:
    """The launch's grid before it runs, as Triton resolves it (a callable gets the bound
    arguments), padded to three dimensions."""
    if callable(grid):
        bound = dict(zip(getattr(jit_fn, "arg_names", []), args, strict=False))
        bound.update(kwargs)
        grid = grid(bound)
    dims = tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))
    dims = (dims + (1, 1, 1))[:3]
    return dims[0], dims[1], dims[2]


def kernel_metadata(name: str, launch_kwargs: dict[str, Any]) -> Any:
    """The ``KernelMetadata`` record a compiled launch of kernel ``name`` with these options would
    carry, for the target Triton's driver reports."""
    options = tuple(
        sorted((k, v) for k, v in launch_kwargs.items() if isinstance(v, (int, float, str, bool, type(None))))
    )
    fields = dict(_options(options))
    fields["name"] = name
    return _record_type(tuple(sorted(fields)))(**fields)


@lru_cache(maxsize=8)
def _record_type(names: tuple[str, ...]) -> Any:
    """One ``KernelMetadata`` class per field set (making a namedtuple class is not cheap)."""
    return namedtuple("KernelMetadata", names)  # type: ignore[misc]


@lru_cache(maxsize=64)
def _options(options: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    import triton
    from triton.compiler.compiler import make_backend
    from triton.runtime import driver

    quiet_compile_notice()
    target = driver.active.get_current_target()
    backend = make_backend(target)
    known = backend.parse_options({}).__dict__
    parsed = backend.parse_options({k: v for k, v in options if k in known}).__dict__
    fields: dict[str, Any] = {**_COMPILED, **parsed, "target": target}
    fields["triton_version"] = triton.__version__
    arch = target.arch
    fields["arch"] = f"sm{arch}" if target.backend == "cuda" else str(arch)
    fields.setdefault("warp_size", target.warp_size)
    return tuple(fields.items())
