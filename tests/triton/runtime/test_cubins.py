"""Finding live kernels' code for PC sampling: Triton's own compiled kernels, and torch.compile's
static launchers, whose cubin and PTX are read back from Triton's cache."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from deuteron.triton.runtime import cubins


class StaticallyLaunchedCudaKernel:
    """Stands in for Inductor's launcher after it loaded its kernel: a name and a hash, no cubin."""

    def __init__(self, name: str, kernel_hash: str) -> None:
        self.name = name
        self.hash = kernel_hash
        self.cubin_raw = None
        self.cubin_path = None


def test_a_static_launchers_code_is_read_from_the_triton_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel_hash = hashlib.sha256(b"triton_poi_fused_add_0").hexdigest()
    folder = tmp_path / base64.b32encode(bytes.fromhex(kernel_hash)).decode().rstrip("=")
    folder.mkdir()
    (folder / "triton_poi_fused_add_0.cubin").write_bytes(b"\x7fELF-cubin")
    (folder / "triton_poi_fused_add_0.ptx").write_text("// ptx\n")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    launcher = StaticallyLaunchedCudaKernel("triton_poi_fused_add_0", kernel_hash)
    found = cubins.compiled_kernels({"triton_poi_fused_add_0"})
    assert cubins.KernelAsm("triton_poi_fused_add_0", b"\x7fELF-cubin", "// ptx\n") in found
    assert cubins.compiled_kernels({"another"}) == []
    del launcher


def test_a_launcher_whose_cache_is_gone_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    launcher = StaticallyLaunchedCudaKernel("gone_kernel", "ab" * 32)
    assert cubins.compiled_kernels({"gone_kernel"}) == []
    del launcher
