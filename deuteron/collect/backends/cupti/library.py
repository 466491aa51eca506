"""Finding libcupti at run time, in a fixed order, so the same build works with any CUDA.

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
