"""Building the torch context's native op probe (``_torch_ops.cpp``) against the installed torch.

Why at run time rather than at install: the library must match the torch it is loaded into (its
headers, its C++ ABI and its version), and torch may be installed, upgraded or swapped after
Deuteron. The build takes a few seconds once per torch version; the result is cached in
``$DEUTERON_CACHE`` (default ``~/.cache/deuteron``) under a key of the source, the torch version and
the ABI, and written atomically so concurrent first runs do not see half a file. This module never
imports torch: the torch context hands it the paths and flags.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from deuteron.model.errors import DeuteronError

SOURCE = Path(__file__).with_name("_torch_ops.cpp")
LIBRARY = "libdeuteron_torch_ops.so"


class TorchBuildError(DeuteronError, RuntimeError):
    """The op probe could not be built; the message says why and what to install."""


def cache_root() -> Path:
    base = os.environ.get("DEUTERON_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "deuteron"
    )
    return Path(base)


def compiler() -> str | None:
    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if name and shutil.which(name):
            return name
    return None


def python_include() -> str | None:
    """This Python's C headers, for the module-call fast path; None when they are not installed
    (the library is then built without it, and module calls take the Python wrapper)."""
    include = sysconfig.get_paths().get("include")
    return include if include and os.path.exists(os.path.join(include, "Python.h")) else None


def library_path(torch_version: str, torch_dir: str, abi: int) -> Path:
    python = f"{sys.implementation.cache_tag}:{python_include()}"  # the fast path is built for one Python
    parts = [SOURCE.read_bytes(), torch_version.encode(), torch_dir.encode(), str(abi).encode()]
    parts.append(python.encode())
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]
    return cache_root() / "torch_ops" / key / LIBRARY


def build(torch_version: str, torch_dir: str, abi: int) -> Path:
    """The probe for this torch: the cached build, else a new one (a few seconds, said on stderr)."""
    target = library_path(torch_version, torch_dir, abi)
    if target.exists():
        return target
    cxx = compiler()
    if cxx is None:
        raise TorchBuildError(
            "-c torch needs a C++ compiler to build its op probe against your torch (looked for $CXX, "
            "g++, c++, clang++); install one (e.g. apt install g++) or profile with -c python"
        )
    include = os.path.join(torch_dir, "include")
    lib = os.path.join(torch_dir, "lib")
    if not os.path.isdir(include):
        raise TorchBuildError(
            f"-c torch needs torch's C++ headers, which this torch lacks ({include} is missing); "
            "install a torch wheel from pytorch.org or PyPI, or profile with -c python"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    print(
        f"deuteron: building the torch op probe for torch {torch_version} (once; a few seconds)",
        file=sys.stderr,
    )
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / LIBRARY
        errors: list[str] = []
        py_include = python_include()
        python_flags = ["-DDEUT_PYTHON", "-I", py_include] if py_include else []
        for std in ("c++20", "c++17"):
            command = [
                cxx, *python_flags, "-O2", "-DNDEBUG", "-shared", "-fPIC", f"-std={std}",
                f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
                "-I", include, "-I", os.path.join(include, "torch", "csrc", "api", "include"),
                str(SOURCE), "-L", lib, "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{lib}", "-o", str(out), "-w",
            ]  # fmt: skip
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode == 0:
                break
            errors = result.stderr.strip().splitlines()
        else:
            first = next((line for line in errors if "error" in line), errors[0] if errors else "")
            raise TorchBuildError(
                f"building the torch op probe with {cxx} failed: {first.strip()[:300]}; "
                "profile with -c python, or report this with your torch version"
            )
        os.replace(out, target)
    print(f"deuteron: built {target} in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    return target
