"""Finding and loading libcupti at run time, in a fixed order, so the same build works with any
CUDA; and whether the CUPTI backend can run here at all (``unavailable_reason``), and why not.

Order: ``DEUTERON_CUPTI_LIB``; a libcupti this process has already loaded (torch's kineto
loads one at import, and two CUPTI copies in one process fight over the driver's single
tools slot); the copy bundled in the ``triton`` wheel; the ``nvidia-cuda-cupti`` wheel; the
CUDA toolkit (``CUDA_HOME``/``CUDA_PATH``, ``/usr/local/cuda*``).
"""

from __future__ import annotations

import glob
import importlib.util
import os
from pathlib import Path

from deuteron.collect.backends.port import BackendError

ENV = "DEUTERON_CUPTI_LIB"


def _loaded() -> list[Path]:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = {line.split()[-1] for line in f if "libcupti.so" in line}
    except OSError:
        return []
    return sorted(Path(p) for p in paths if p.startswith("/"))


def _package_dirs(name: str) -> list[Path]:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    return [Path(p) for p in (spec.submodule_search_locations or [])]


def _libs_in(folder: Path) -> list[Path]:
    # Prefer the plain name, then versioned ones (libcupti.so.13, libcupti.so.2025.1.1).
    found = sorted(Path(p) for p in glob.glob(str(folder / "libcupti.so*")))
    return sorted(found, key=lambda p: (p.name != "libcupti.so", p.name))


def candidates() -> list[tuple[str, Path]]:
    """(where it came from, path) in the order they are tried; existing files only."""
    out: list[tuple[str, Path]] = []
    env = os.environ.get(ENV)
    if env:
        out.append((f"${ENV}", Path(env)))
    out += [("already loaded", p) for p in _loaded()]
    for root in _package_dirs("triton"):
        out += [("triton wheel", p) for p in _libs_in(root / "backends" / "nvidia" / "lib" / "cupti")]
    for root in _package_dirs("nvidia"):
        for sub in ("cuda_cupti/lib", "cu13/lib", "cu12/lib"):
            out += [("nvidia-cuda-cupti wheel", p) for p in _libs_in(root / sub)]
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    homes += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for home in dict.fromkeys(h for h in homes if h):
        for sub in ("extras/CUPTI/lib64", "lib64", "lib"):
            out += [("CUDA toolkit", p) for p in _libs_in(Path(home) / sub)]
    seen: set[Path] = set()
    unique = []
    for source, path in out:
        real = path.resolve()
        if real not in seen and (source == f"${ENV}" or path.exists()):
            seen.add(real)
            unique.append((source, path))
    return unique


try:
    from deuteron.collect.backends.cupti import _shim as shim
except ImportError as _exc:  # the optional extension was not built
    shim = None  # type: ignore[assignment]
    _IMPORT_ERROR: str | None = str(_exc)
else:
    _IMPORT_ERROR = None

_loaded_from: tuple[str, Path] | None = None
_reason_cache: str | None = None
_checked = False


class CuptiConflictError(BackendError):
    """Another CUPTI client holds the process; the message names it and the way out."""


def _load() -> str | None:
    """Load libcupti once; None on success, else why not (each candidate's error)."""
    global _loaded_from
    if _loaded_from is not None:
        return None
    tried = []
    for source, path in candidates():
        try:
            shim.load(str(path))
        except OSError as exc:
            tried.append(f"{path} ({source}): {exc}")
            continue
        _loaded_from = (source, path)
        return None
    if not tried:
        return (
            "libcupti was not found (looked at $DEUTERON_CUPTI_LIB, the triton wheel, the "
            "nvidia-cuda-cupti wheel and the CUDA toolkit); set DEUTERON_CUPTI_LIB=/path/to/libcupti.so"
        )
    return "libcupti could not be loaded: " + "; ".join(tried)


def unavailable_reason() -> str | None:
    """Why the CUPTI backend cannot run here, or None if it can (checked once per process)."""
    global _checked, _reason_cache
    if _checked:
        return _reason_cache
    if shim is None:
        _reason_cache = (
            f"the native CUPTI shim is not built ({_IMPORT_ERROR}); reinstall with a C compiler "
            "present: pip install -e ."
        )
    else:
        devices = shim.cuda_devices()
        if isinstance(devices, str):
            _reason_cache = f"no NVIDIA GPU: {devices}"
        elif devices == 0:
            _reason_cache = "no NVIDIA GPU: the driver reports no CUDA devices"
        else:
            _reason_cache = _load()
    _checked = True
    return _reason_cache


def loaded_library() -> tuple[str, Path] | None:
    """Where libcupti was loaded from (the candidate's source and path), once it was."""
    return _loaded_from


def conflict_message() -> str | None:
    """Name a CUPTI client that cannot share the process, from what the process shows."""
    if os.environ.get("NSYS_PROFILING_SESSION_ID") or "libToolsInjection" in os.environ.get("LD_PRELOAD", ""):
        return "Nsight Systems (nsys) is tracing CUDA in this process"
    if "libToolsInjection" in os.environ.get("CUDA_INJECTION64_PATH", ""):
        return "an Nsight tool is injected into this process (CUDA_INJECTION64_PATH)"
    return None


CONFLICT_FIX = (
    "CUPTI serves one client per process. Stop the other profiler (torch.profiler, Proton, "
    "Nsight Systems) before starting Deuteron, or run Deuteron alone; DEUTERON_DISABLE=1 turns "
    "Deuteron off and leaves the script running"
)
