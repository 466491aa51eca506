"""The cubins of the Triton kernels alive in this process, by kernel name: what PC sampling needs
to turn a sampled offset into a source line.

CUPTI names each sample's module by a CRC of its cubin; Triton keeps every compiled kernel's cubin
and PTX in ``CompiledKernel.asm``. Triton has no registry of compiled kernels, so they are found
among the objects the garbage collector tracks (once per drain, only for names that were sampled
and not found before): a kernel compiled and launched before profiling started is found too, which
a module-load callback would miss.

``torch.compile`` launches Inductor's kernels through its own static launcher
(``StaticallyLaunchedCudaKernel``), which drops the cubin once loaded but keeps the kernel's name
and Triton hash: its cubin and PTX are read back from Triton's cache, where Triton wrote them
(``<cache>/<the hash in base32>/<name>.cubin``; Inductor points ``TRITON_CACHE_DIR`` there).
"""

from __future__ import annotations

import base64
import gc
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATIC_LAUNCHERS = ("StaticallyLaunchedCudaKernel",)  # torch.compile's launcher classes, by name


@dataclass(frozen=True)
class KernelAsm:
    """One compiled Triton kernel's machine code and PTX."""

    name: str
    cubin: bytes
    ptx: str | None


def _cache_dirs() -> list[Path]:
    dirs = [os.environ.get("TRITON_CACHE_DIR", "")]
    try:
        from triton import knobs

        dirs.append(str(knobs.cache.dir or ""))
    except (ImportError, AttributeError):
        pass
    dirs.append(os.path.join(os.path.expanduser("~"), ".triton", "cache"))
    return [Path(d) for d in dict.fromkeys(d for d in dirs if d)]


def _cache_keys(kernel_hash: str) -> list[str]:
    """The cache folder names a kernel's hash may have: Triton names each by the hash's bytes in
    base32 (``FileCacheManager``), older Triton by the hash itself."""
    keys = [kernel_hash]
    try:
        keys.insert(0, base64.b32encode(bytes.fromhex(kernel_hash)).decode("ascii").rstrip("="))
    except ValueError:
        pass
    return keys


def _from_cache(name: str, kernel_hash: str) -> KernelAsm | None:
    for folder in _cache_dirs():
        cubin = next(
            (c for key in _cache_keys(kernel_hash) if (c := folder / key / f"{name}.cubin").is_file()), None
        )
        if cubin is not None:
            ptx = cubin.with_suffix(".ptx")
            text = ptx.read_text(encoding="utf-8", errors="replace") if ptx.is_file() else None
            return KernelAsm(name, cubin.read_bytes(), text)
    return None


def _asm_of(obj: Any) -> KernelAsm | None:
    name = getattr(obj, "name", None)
    asm = getattr(obj, "asm", None)
    if isinstance(asm, dict):  # Triton's CompiledKernel
        cubin, ptx = asm.get("cubin"), asm.get("ptx")
        if isinstance(cubin, bytes):
            return KernelAsm(str(name), cubin, ptx if isinstance(ptx, str) else None)
        return None
    key = getattr(obj, "hash", None)  # Inductor's static launcher: the cache has what it dropped
    found = _from_cache(str(name), str(key)) if isinstance(key, str) else None
    raw = getattr(obj, "cubin_raw", None)
    if found is None and isinstance(raw, bytes):
        return KernelAsm(str(name), raw, None)
    return found


def _candidates() -> Iterator[Any]:
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError:
        return
    for obj in gc.get_objects():
        kind = type(obj)
        if kind is CompiledKernel or kind.__name__ in STATIC_LAUNCHERS:
            yield obj


def compiled_kernels(names: Iterable[str]) -> list[KernelAsm]:
    """Every live compiled Triton kernel called one of ``names`` whose cubin can be had (NVIDIA)."""
    wanted = set(names)
    out: list[KernelAsm] = []
    seen: set[int] = set()
    for obj in _candidates():
        if id(obj) in seen or getattr(obj, "name", None) not in wanted:
            continue
        seen.add(id(obj))
        asm = _asm_of(obj)
        if asm is not None:
            out.append(asm)
    return out
