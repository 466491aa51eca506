"""Triton's own intra-kernel instrumentation passes, switched on and off for Deuteron's runtime.

Triton (3.6 and later) ships Proton's compiler dialect: ``proton.record`` ops that ``pl.scope``
emits, lowered by passes that give each CTA a circular buffer of clock readings (in shared or global
memory) and copy it into a *profile scratch* buffer at the end of the CTA. The compiler runs those
passes when ``backends[...].compiler.instrumentation`` holds an object with ``patch(stage, pm,
ctx)`` and ``load_dialects(ctx)``, and the launcher asks ``_allocation._profile_allocator`` for the
scratch buffer of each launch. Deuteron owns what happens around that: the allocator (one device
arena, drained rarely), the decoding, the files and the views.

Only this module and :mod:`deuteron.triton.language` touch those parts of Triton.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from deuteron.triton import unsupported

PROFILE_BUFFER_SIZE = 1  # Proton's: the passes size each CTA's slot themselves; this is a floor
PROFILE_BUFFER_ALIGNMENT = 128


@dataclass(frozen=True)
class PassOptions:
    """A mode's settings as the passes take them (names of Proton's enums, lower case)."""

    metric_type: str
    sampling_strategy: str
    sampling_options: str
    granularity: str
    buffer_strategy: str
    buffer_type: str
    buffer_size: int
    optimizations: tuple[str, ...]
    mode_text: str  # str(mode): keys Triton's kernel cache, so instrumented kernels compile apart


@dataclass(frozen=True)
class KernelScopes:
    """What decoding needs of one compiled, instrumented kernel."""

    name: str
    names: dict[int, str]  # scope id -> scope name
    parents: dict[int, int]  # scope id -> parent scope id (-1: at the kernel's top)
    num_warps: int
    scratch_size: int  # bytes of profile scratch per CTA; 0 when the kernel has no scope
    ttir: str = ""  # the kernel's IR before and after the GPU passes, to see what moved across scopes
    ttgir: str = ""


def _proton() -> Any:
    try:
        from triton._C.libtriton import proton as triton_proton
    except ImportError:
        raise unsupported("Proton instrumentation dialect (triton._C.libtriton.proton)") from None
    return triton_proton


def version() -> str:
    import triton

    return str(triton.__version__)


def _backend_name() -> str:
    import triton

    backend = triton.runtime.driver.active.get_current_target().backend
    return {"cuda": "nvidia", "hip": "amd"}.get(backend, backend)


class _Passes:
    """The object Triton's compiler consults at its two instrumentation points."""

    def __init__(
        self, options: PassOptions, max_shared: int | None = None, backend: str | None = None
    ) -> None:
        """``max_shared`` and ``backend``: the target's, for compiling without its GPU (explain,
        tests); read from the current device otherwise."""
        self.options = options
        proton = _proton()
        self.proton = proton
        self.arch = ""
        if max_shared is None:
            import triton

            device = triton.runtime.driver.active.get_current_device()
            props = triton.runtime.driver.active.utils.get_device_properties(device)
            max_shared = int(props["max_shared_mem"])
            self.arch = str(props.get("arch", "")).split(":")[0]
        self.max_shared = max_shared
        self.backend = backend or _backend_name()

    def load_dialects(self, ctx: Any) -> None:
        self.proton.load_dialects(ctx)

    def patch(self, stage: str, pm: Any, ctx: Any) -> None:
        from triton._C.libtriton import passes

        if ctx is not None:
            self.load_dialects(ctx)
        o, p = self.options, self.proton
        if stage == "ttgpuir_to_llvmir":
            p.add_convert_proton_to_protongpu(
                pm,
                getattr(p.METRIC_TYPE, o.metric_type.upper()),
                getattr(p.SAMPLING_STRATEGY, o.sampling_strategy.upper()),
                o.sampling_options,
                getattr(p.GRANULARITY, o.granularity.upper()),
                getattr(p.BUFFER_STRATEGY, o.buffer_strategy.upper()),
                getattr(p.BUFFER_TYPE, o.buffer_type.upper()),
                o.buffer_size,
                self.max_shared,
                PROFILE_BUFFER_SIZE,
                PROFILE_BUFFER_ALIGNMENT,
                "clock32" not in o.optimizations,
            )
            passes.common.add_cse(pm)
            if "sched_stores" in o.optimizations:
                p.add_schedule_buffer_store(pm)
            p.add_allocate_proton_shared_memory(pm)
            if "sched_barriers" in o.optimizations and self.backend == "amd":
                p.add_sched_barriers(pm)
        elif stage == "llvmir_to_llvm":
            if hasattr(p, "add_allocate_proton_global_scratch_buffer"):  # 3.6; later Triton does it itself
                p.add_allocate_proton_global_scratch_buffer(pm)
            if self.backend == "nvidia":
                p.add_convert_proton_nvidia_gpu_to_llvm(pm)
            elif self.backend == "amd":
                p.add_convert_proton_amd_gpu_to_llvm(pm, self.arch)


_installed: dict[str, Any] = {}
# the compiler's instrumentation points (later Triton's registry names) -> our stage names
_POINTS = {
    "load-dialects": None,
    "ttgpuir-to-llvmir": "ttgpuir_to_llvmir",
    "llvmir-to-llvm": "llvmir_to_llvm",
}


def _attach(passes: _Passes) -> Any:
    """Put the passes where the compiler looks: Triton 3.6's ``compiler.instrumentation`` object,
    or the callback registry later versions have (``triton._instrumentation``). Returns the undo."""
    try:
        from triton import _instrumentation as registry
    except ImportError:
        registry = None
    if registry is not None and hasattr(registry, "register_instrumentation"):
        for point, stage in _POINTS.items():
            registry.unregister_instrumentation(point=point, backend=passes.backend)
            callback = passes.load_dialects if stage is None else _stage(passes, stage)
            registry.register_instrumentation(point=point, backend=passes.backend, callback=callback)

        def undo() -> None:
            for point in _POINTS:
                registry.unregister_instrumentation(point=point, backend=passes.backend)

        return undo
    from triton.backends import backends

    compiler = backends[passes.backend].compiler
    before = getattr(compiler, "instrumentation", None)
    compiler.instrumentation = passes

    def restore() -> None:
        compiler.instrumentation = before

    return restore


def _stage(passes: _Passes, stage: str) -> Any:
    return lambda pm: passes.patch(stage, pm, None)


def compiling_for(options: PassOptions, max_shared: int) -> Any:
    """A context manager: kernels compiled inside it (for an NVIDIA target, maybe not this machine's)
    are instrumented with ``options``; for reading their IR without a GPU."""
    from contextlib import contextmanager

    @contextmanager
    def scope() -> Any:
        was = _language_flag(True)
        undo = _attach(_Passes(options, max_shared=max_shared, backend="nvidia"))
        try:
            yield
        finally:
            undo()
            _language_flag(was)

    return scope()


def install(options: PassOptions, allocator: Callable[[int, int, int | None], Any]) -> None:
    """Instrument kernels compiled from now on with ``options``; ``allocator(size, alignment,
    stream)`` gives each instrumented launch its profile scratch buffer (a device tensor)."""
    import triton
    from triton.runtime import _allocation

    passes = _Passes(options)
    _installed.update(
        undo=_attach(passes),
        mode=triton.knobs.compilation.instrumentation_mode,
        allocator=_allocation._profile_allocator.get(),
        language=_language_flag(True),
    )
    _allocation.set_profile_allocator(allocator)
    triton.knobs.compilation.instrumentation_mode = options.mode_text


def uninstall() -> None:
    """Compile plain kernels again, and give back the allocator the program had."""
    if not _installed:
        return
    import triton
    from triton.runtime import _allocation

    _installed["undo"]()
    triton.knobs.compilation.instrumentation_mode = _installed["mode"]
    _allocation.set_profile_allocator(_installed["allocator"])
    _language_flag(_installed["language"])
    _installed.clear()


def _language_flag(on: bool) -> bool:
    """Tell ``deuteron.language`` (and Triton's own ``triton.profiler.language``) that ``pl.scope``
    now emits records; returns what it was."""
    from deuteron.triton import language

    before = language.SCOPE_SETTINGS.instrumenting
    language.SCOPE_SETTINGS.instrumenting = on
    try:
        from triton.profiler.flags import flags

        flags.instrumentation_on = on
    except Exception:  # noqa: BLE001 - Triton without Proton's Python package: nothing to tell
        pass
    return before


def kernel_scopes(name: str, metadata_group: dict[str, str]) -> KernelScopes | None:
    """The scopes of a kernel Triton just loaded, read from its TTGIR (scope ids are assigned by
    the passes, so they are asked, not guessed); None when the kernel was not instrumented."""
    ir_path = next((p for k, p in metadata_group.items() if k.endswith("ttgir")), None)
    meta_path = next((p for k, p in metadata_group.items() if k.endswith("json")), None)
    if ir_path is None or meta_path is None:
        return None
    with open(meta_path) as f:
        meta = json.load(f)
    scratch = int(meta.get("profile_scratch_size") or 0)
    if not meta.get("instrumentation_mode") or not scratch:
        return None
    from triton._C.libtriton import ir

    context = ir.context()
    ir.load_dialects(context)
    backend = _backend_name()
    if backend == "nvidia":
        from triton._C.libtriton import nvidia

        nvidia.load_dialects(context)
    proton = _proton()
    proton.load_dialects(context)
    module = ir.parse_mlir_module(ir_path, context)
    module.context = context
    names = {int(i): str(n) for i, n in proton.get_scope_id_names(module)}
    parents = {int(i): int(p) for i, p in proton.get_scope_id_parents(module)}
    ttir_path = next((p for k, p in metadata_group.items() if k.endswith(".ttir")), None)
    ttir = ""
    if ttir_path:
        with open(ttir_path) as f:
            ttir = f.read()
    with open(ir_path) as f:
        ttgir = f.read()
    return KernelScopes(name, names, parents, int(meta.get("num_warps", 4)), scratch, ttir, ttgir)


def device_row() -> tuple[str, dict[str, object]]:
    """The current GPU's id and its row of the device table (what ``util`` and the trace need),
    with the SM clock rate the driver reports (its boost clock, kHz) as ``clock_rate``."""
    import triton

    driver = triton.runtime.driver.active
    device = driver.get_current_device()
    props = driver.utils.get_device_properties(device)
    major, minor = driver.get_device_capability(device)
    return str(device), {
        "arch": f"{major}{minor}",
        "bus_width": props.get("mem_bus_width", 0),
        "clock_rate": props["sm_clock_rate"],
        "memory_clock_rate": props.get("mem_clock_rate", 0),
        "num_sms": props.get("multiprocessor_count", 0),
    }


def probe(options: PassOptions) -> str | None:
    """Compile a one-scope kernel with ``options`` (Triton caches it, so this costs once): the
    lowering in some Triton versions fails for some modes (3.6: granularity warp_2 and up, cta),
    and a failure here is one line at ``start`` instead of a traceback at the program's first
    instrumented launch. Returns the failure, or None."""
    import triton
    import triton.language as tl
    from triton.compiler import ASTSource

    from deuteron.triton import language

    @triton.jit
    def deuteron_probe(x_ptr):  # type: ignore[no-untyped-def]
        language.enter_scope("probe")
        tl.store(x_ptr, tl.load(x_ptr) + 1)
        language.exit_scope("probe")

    import tempfile

    from deuteron.triton.compiler.compile import stderr_to

    had_triton = "triton" in language.SCOPE_SETTINGS.semantics
    language.SCOPE_SETTINGS.semantics.add("triton")
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "probe.txt")
        try:
            # the mode in the options keys Triton's cache apart from plain and other modes' probes
            source = ASTSource(fn=deuteron_probe, signature={"x_ptr": "*fp32"}, constexprs={})
            with stderr_to(log):  # MLIR prints the failing pass pipeline there: kept for the reason
                triton.compile(source, options={"instrumentation_mode": options.mode_text})
        except Exception as exc:  # noqa: BLE001 - the compiler's own failure, said in one line
            with open(log, errors="replace") as f:
                said = re.findall(r"error: (.+)", f.read())
            text = str(exc).strip().splitlines()
            return said[0] if said else (text[-1] if text else type(exc).__name__)
        finally:
            if not had_triton:
                language.SCOPE_SETTINGS.semantics.discard("triton")
    return None


def unavailable_reason() -> str | None:
    """Why Triton cannot instrument kernels here, or None when it can."""
    try:
        proton = _proton()
    except Exception as exc:  # noqa: BLE001 - TritonSupportError, or a broken install
        return str(exc)
    if not hasattr(proton, "add_convert_proton_to_protongpu"):
        return "this Triton's compiler lacks Proton's instrumentation passes"
    try:
        backend = _backend_name()
    except Exception as exc:  # noqa: BLE001 - no active driver
        return f"Triton has no GPU driver here ({exc})"
    if backend != "nvidia":
        return f"instrumentation is supported on NVIDIA GPUs here, not {backend}"
    return None
