"""What the GPU tests (``*_gpu.py``, beside their CPU twins) share. They run only where the CUPTI
backend can run (the device machine), else are skipped (``tests/conftest.py`` marks them).

Each test profiles a small script in a fresh process through ``deuteron run``, the way a user
would, and checks the written profile.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from tests.helpers.cli import run_cli
from tests.helpers.sources import ADD_KERNEL_SOURCE

KERNELS = ADD_KERNEL_SOURCE + """
def add(x, y, o):
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, o, x.numel(), BLOCK=1024)
"""


def profile_script(
    tmp_path: Path, body: str, *args: str, env: dict[str, str] | None = None, expect: int = 0
) -> tuple[dict[str, Any], Any]:
    """Run ``body`` (after the shared kernels) under ``deuteron run -b cupti``; return (tree, proc)."""
    script = tmp_path / "script.py"
    script.write_text(KERNELS + textwrap.dedent(body))
    proc = run_cli("run", "-b", "cupti", "-n", "out", *args, "script.py", cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == expect, proc.stderr[-3000:]
    out = tmp_path / "out.hatchet"
    tree = json.loads(out.read_text()) if out.exists() else None
    return tree, proc
