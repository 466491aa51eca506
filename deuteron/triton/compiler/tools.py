"""The CUDA tools the Triton wheel bundles (nvdisasm, cuobjdump, ptxas), run on a kernel's binary."""

from __future__ import annotations

import os
import subprocess
import tempfile

from deuteron.triton import TritonSupportError


def tool_path(name: str) -> str:
    """The bundled tool's path (``nvdisasm``, ``cuobjdump``); a one-line error when it is missing."""
    from triton import knobs

    try:
        path = getattr(knobs.nvidia, name).path
    except Exception as exc:  # the knob resolves the bundled binary; it raises when missing
        raise TritonSupportError(f"Triton's bundled {name} is missing ({exc}); reinstall triton") from None
    if not path or not os.path.exists(path):
        raise TritonSupportError(f"Triton's bundled {name} is missing; reinstall triton")
    return str(path)


def run_on_cubin(tool: str, args: list[str], cubin: bytes) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a bundled tool run on a cubin written to a temporary file."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
        path = f.name
    try:
        proc = subprocess.run([tool_path(tool), *args, path], capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(path)
    return proc.returncode, proc.stdout, proc.stderr


def ptxas_verbose(ptx: str, arch: int) -> tuple[int, str] | None:
    """(exit code, what ``ptxas -v`` printed) for a PTX module, or None when this Triton has no
    ptxas we know how to find."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability

        tool, gpu = get_ptxas(arch).path, sm_arch_from_capability(arch)
    except Exception:  # another Triton layout: no ptxas to ask
        return None
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w", encoding="utf-8") as f:
            f.write(ptx)
        proc = subprocess.run(
            [tool, "-v", "-lineinfo", f"--gpu-name={gpu}", src, "-o", os.path.join(tmp, "k.cubin")],
            capture_output=True,
            text=True,
            timeout=300,
        )
    return proc.returncode, proc.stderr + proc.stdout
