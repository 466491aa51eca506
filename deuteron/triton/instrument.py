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

    def __init__(self, options: PassOptions) -> None:
        import triton

        self.options = options
        proton = _proton()
        self.proton = proton
        device = triton.runtime.driver.active.get_current_device()
        props = triton.runtime.driver.active.utils.get_device_properties(device)
        self.max_shared = props["max_shared_mem"]
        self.arch = str(props.get("arch", "")).split(":")[0]
        self.backend = _backend_name()

    def load_dialects(self, ctx: Any) -> None:
        self.proton.load_dialects(ctx)

    def patch(self, stage: str, pm: Any, ctx: Any) -> None:
        from triton._C.libtriton import passes

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
            p.add_allocate_proton_global_scratch_buffer(pm)
            if self.backend == "nvidia":
                p.add_convert_proton_nvidia_gpu_to_llvm(pm)
            elif self.backend == "amd":
                p.add_convert_proton_amd_gpu_to_llvm(pm, self.arch)


_installed: dict[str, Any] = {}


def install(options: PassOptions, allocator: Callable[[int, int, int | None], Any]) -> None:
    """Instrument kernels compiled from now on with ``options``; ``allocator(size, alignment,
    stream)`` gives each instrumented launch its profile scratch buffer (a device tensor)."""
    import triton
    from triton.backends import backends
    from triton.runtime import _allocation

    passes = _Passes(options)
    compiler = backends[passes.backend].compiler
    _installed.update(
        compiler=compiler,
        before=getattr(compiler, "instrumentation", None),
        mode=triton.knobs.compilation.instrumentation_mode,
        allocator=_allocation._profile_allocator.get(),
        language=_language_flag(True),
    )
    compiler.instrumentation = passes
    _allocation.set_profile_allocator(allocator)
    triton.knobs.compilation.instrumentation_mode = options.mode_text


def uninstall() -> None:
    """Compile plain kernels again, and give back the allocator the program had."""
    if not _installed:
        return
    import triton
    from triton.runtime import _allocation

    _installed["compiler"].instrumentation = _installed["before"]
    triton.knobs.compilation.instrumentation_mode = _installed["mode"]
    _allocation.set_profile_allocator(_installed["allocator"])
    _language_flag(_installed["language"])
    _installed.clear()


def _language_flag(on: bool) -> bool:
    """Tell ``deuteron.language`` (and Triton's own ``triton.profiler.language``) that ``pl.scope``
    now emits records; returns what it was."""
    from deuteron.triton import language

    before = language.STATE.instrumenting
    language.STATE.instrumenting = on
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
    return KernelScopes(name, names, parents, int(meta.get("num_warps", 4)), scratch)


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

    had_triton = "triton" in language.STATE.semantics
    language.STATE.semantics.add("triton")
    try:
        # the mode in the options keys Triton's cache apart from plain and other modes' probes
        source = ASTSource(fn=deuteron_probe, signature={"x_ptr": "*fp32"}, constexprs={})
        triton.compile(source, options={"instrumentation_mode": options.mode_text})
    except Exception as exc:  # noqa: BLE001 - the compiler's own failure, said in one line
        text = str(exc).strip().splitlines()
        return text[-1] if text else type(exc).__name__
    finally:
        if not had_triton:
            language.STATE.semantics.discard("triton")
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
