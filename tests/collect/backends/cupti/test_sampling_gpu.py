"""PC sampling on a real GPU: `deuteron run --sample` finds the hot line of each kernel and its
stall, shares a kernel's samples between the places it ran by GPU time, and takes Proton's API.

The CPU twin (``test_sampling.py``) replays a drain recorded from ``examples/hot_line.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers.cli import fresh_process_env, run_cli
from tests.helpers.paths import REPO
from tests.helpers.profiles import json_find

EXAMPLE = REPO / "examples" / "hot_line.py"


def _line_of(text: str) -> int:
    return next(i for i, line in enumerate(EXAMPLE.read_text().splitlines(), 1) if text in line)


def _lines(kernel: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The kernel's sampled lines of the example, by line number."""
    out = {}
    for child in kernel["children"]:
        name = child["frame"]["name"]
        if name.startswith(str(EXAMPLE)) or name.split(":")[0].endswith("hot_line.py"):
            out[int(name.rsplit(":", 1)[1].split("@")[0])] = child["metrics"]
    return out


def test_sample_finds_each_kernels_hot_line_and_stall(tmp_path: Path) -> None:
    proc = run_cli("run", "--sample", "-n", "out", str(EXAMPLE), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((tmp_path / "out.hatchet").read_text())
    root = data[0]
    steps = json_find(root, "steps", "rms_scale")
    warm = json_find(root, "warmup", "rms_scale")
    lines = _lines(steps)
    sqrt_line = _line_of("tl.sqrt(x * x + 1.0)")
    hottest = max(lines, key=lambda n: lines[n]["num_samples"])
    assert hottest == sqrt_line, lines
    top = lines[sqrt_line]
    stalls = {k: v for k, v in top.items() if k.startswith("stalled_")}
    compute_stalls = ("stalled_mio_throttle", "stalled_math_pipe_throttle", "stalled_wait")
    assert max(stalls, key=lambda k: stalls[k]) in compute_stalls
    assert 0 < top["num_stalled_samples"] <= top["num_samples"]
    # one warm-up launch against nine: the steps get most of the kernel's samples
    warm_samples = sum(m["num_samples"] for m in _lines(warm).values())
    step_samples = sum(m["num_samples"] for m in lines.values())
    assert 0 < warm_samples < step_samples
    gather = _lines(json_find(root, "steps", "gather_add"))
    load_line = _line_of("x = tl.load(x_ptr + idx")
    assert max(gather, key=lambda n: gather[n]["num_samples"]) in (load_line, load_line + 1)
    meta = json.loads(root["frame"]["deuteron"])["metadata"]["pc_sampling"]
    assert meta["interval_cycles"] == 1024 and meta["samples"] >= step_samples
    assert "lines_missing" not in meta["kernels"]["rms_scale"]
    view = run_cli("view", "out.hatchet", "-m", "num_samples", "-d", "4", cwd=tmp_path)
    assert view.returncode == 0 and f"hot_line.py:{sqrt_line}@rms_scale" in view.stdout
    # explain compiles the same kernels with the same Triton: SASS and PTX get their own PCs' samples
    ex = run_cli(
        "explain", "--profile", "out.hatchet", "--json", "ex.json", str(EXAMPLE), cwd=tmp_path, timeout=300
    )
    assert ex.returncode == 0, ex.stderr[-2000:]
    kernel = next(
        k for k in json.loads((tmp_path / "ex.json").read_text())["kernels"] if k["name"] == "rms_scale"
    )
    heat = kernel["heat"]
    assert heat["by"]["sass"] == "PC" and heat["note"] == "", heat["note"]
    sass = heat["stages"]["sass"]
    hottest = kernel["stage_text"]["sass"]["lines"][sass.index(max(sass))]
    assert "MUFU" in hottest or "FSETP" in hottest or "FMUL" in hottest, hottest
    assert kernel["hot_lines"][0]["line"] == sqrt_line


def test_proton_api_modes_interval_and_mixed_sessions(tmp_path: Path) -> None:
    script = tmp_path / "api.py"
    script.write_text(
        f"""
import json, sys
sys.path.insert(0, {str(REPO)!r})
import torch, triton
import deuteron as proton
sys.path.insert(0, {str(EXAMPLE.parent)!r})
from hot_line import rms_scale
x = torch.rand(1 << 22, device="cuda"); y = torch.empty_like(x)
proton.start("a", mode=proton.mode.PCSampling(interval=4096))
proton.start("b", mode="pcsampling")  # a second sampling session shares the first
rms_scale[(4096,)](x, y, x.numel(), STEPS=8, BLOCK=1024)
proton.finalize()
meta = json.loads(json.load(open("a.hatchet"))[0]["frame"]["deuteron"])["metadata"]
print("INTERVAL", meta["pc_sampling"]["interval_cycles"])
proton.start("c", mode="pcsampling")
try:
    proton.start("d")
except Exception as e:
    print("MIXED", e)
finally:
    proton.finalize()
"""
    )
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=fresh_process_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "INTERVAL 4096" in proc.stdout
    assert "Cannot add a session with the same profiler but a different mode" in proc.stdout
    assert (tmp_path / "b.hatchet").exists()
