"""The instrumentation backend on a GPU, as a user runs it: ``deuteron run -b instrumentation``,
with CUPTI beside it, Proton's API, bad modes, and what 1,000 instrumented launches cost."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.helpers.cli import fresh_process_env, run_cli
from tests.helpers.profiles import json_find

SCRIPT = """
import torch, triton, triton.language as tl
import deuteron as proton
import deuteron.language as pl
pl.enable_semantic("triton")

@triton.jit
def three(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    with pl.scope("load"):
        x = tl.load(x_ptr + offs, mask=m)
    with pl.scope("compute"):
        for i in range(16):
            with pl.scope("step"):
                x = x * 1.0001 + 0.5
    with pl.scope("store"):
        tl.store(y_ptr + offs, x, mask=m)

x = torch.randn(1 << 16, device="cuda"); y = torch.empty_like(x)
LAUNCHES = int(__import__("os").environ.get("LAUNCHES", "3"))
with proton.scope("work"):
    for _ in range(LAUNCHES):
        three[(64,)](x, y, x.numel(), BLOCK=1024, num_warps=4)
torch.cuda.synchronize()
assert torch.allclose(y, y)  # the kernel still computes
"""


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None, expect: int = 0):  # type: ignore[no-untyped-def]
    (tmp_path / "k.py").write_text(textwrap.dedent(SCRIPT))
    proc = run_cli("run", *args, "-n", "k", "k.py", cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == expect, proc.stderr[-3000:]
    return proc


def test_scopes_per_cta_and_warp(tmp_path: Path) -> None:
    _run(tmp_path, "-b", "instrumentation", "--trace")
    tree = json.loads((tmp_path / "k.hatchet").read_text())
    kernel = json_find(tree[0], "work", "three")
    compute = json_find(kernel, "compute")
    step = json_find(compute, "step")
    assert step["metrics"]["instances"] == 3 * 64 * 4 * 16  # launches x CTAs x warps x loop steps
    assert json_find(kernel, "load")["metrics"]["instances"] == 3 * 64 * 4
    for node in (compute, step, json_find(kernel, "store")):
        assert node["metrics"]["cycles"] > 0 and node["metrics"]["time (ns)"] > 0
    assert compute["metrics"]["cycles"] >= step["metrics"]["cycles"]  # Proton's cycles include nested scopes
    meta = tree[0]["frame"]["deuteron"]
    inst = (
        json.loads(meta)["metadata"]["instrumentation"]
        if isinstance(meta, str)
        else meta["metadata"]["instrumentation"]
    )
    assert inst["launches"] == 3 and inst["unmatched"] == 0 and inst["bad_ctas"] == 0
    assert inst["drains"] == 1  # read back once, at the end: no synchronisation per launch
    trace = json.loads((tmp_path / "k.chrome_trace").read_text())["traceEvents"]
    inside = [e for e in trace if e.get("cat") == "intra"]
    assert {e["name"] for e in inside} == {"load", "compute", "step", "store"}
    names = {e["args"]["name"] for e in trace if e.get("ph") == "M"}
    assert any(" CTA" in n and "warp" in n for n in names)


def test_with_cupti_one_clock_and_kernel_time_kept(tmp_path: Path) -> None:
    _run(tmp_path, "-b", "cupti,instrumentation", "--trace")
    tree = json.loads((tmp_path / "k.hatchet").read_text())
    kernel = json_find(tree[0], "work", "three")
    own = kernel["metrics"]["time (ns)"]
    scopes = sum(c["metrics"].get("time (ns)", 0) for c in kernel["children"])
    assert (
        own > 0 and scopes > 0
    )  # CUPTI's time minus the scopes' own time: the kernel's inclusive time is CUPTI's
    trace = json.loads((tmp_path / "k.chrome_trace").read_text())["traceEvents"]
    kernels = sorted(
        (e["ts"], e["ts"] + e["dur"]) for e in trace if e.get("cat") == "kernel" and e["name"] == "three"
    )
    inside = [e for e in trace if e.get("cat") == "intra"]
    assert len(kernels) == 3 and inside
    slack = 5.0  # us: the global timer's tick and the host clock calibration
    for e in inside:
        assert any(a - slack <= e["ts"] and e["ts"] + e["dur"] <= b + slack for a, b in kernels), e


def test_protons_api_and_trace(tmp_path: Path) -> None:
    body = SCRIPT.replace(
        'with proton.scope("work"):',
        'proton.start("p", backend="instrumentation", mode="default:buffer_size=4096", data="trace")'
        "\nif True:",
    )
    (tmp_path / "p.py").write_text(textwrap.dedent(body) + "\nproton.finalize()\n")
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "p.py"],
        cwd=tmp_path,
        env={**fresh_process_env(), "LAUNCHES": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = json.loads((tmp_path / "p.chrome_trace").read_text())["traceEvents"]
    assert len(events) == 64 * 4 * (3 + 16)  # Proton's shape: scope events only
    assert all(" CTA" in e["pid"] and e["tid"].startswith("warp ") for e in events)


def test_a_mode_triton_cannot_compile_is_one_line(tmp_path: Path) -> None:
    proc = _run(tmp_path, "-b", "instrumentation", "--mode", "default:granularity=warp_2", expect=2)
    assert "Traceback" not in proc.stderr
    assert "cannot compile kernels with mode" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_thousand_launches_stay_small_and_quick(tmp_path: Path) -> None:
    import subprocess
    import sys

    body = (
        SCRIPT.replace(
            'with proton.scope("work"):', 'proton.start("many", backend="instrumentation")\nif True:'
        )
        + "\nimport time\nt = time.perf_counter()\nproton.finalize()"
        + "\nprint('finalize', time.perf_counter() - t)\n"
    )
    (tmp_path / "many.py").write_text(textwrap.dedent(body))
    env = {**fresh_process_env(), "LAUNCHES": "1000"}
    proc = subprocess.run(
        [sys.executable, "many.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    finalize = float(proc.stdout.split("finalize")[-1])
    size = (tmp_path / "many.hatchet").stat().st_size
    meta = json.loads((tmp_path / "many.hatchet").read_text())[0]["frame"]["deuteron"]
    inst = (json.loads(meta) if isinstance(meta, str) else meta)["metadata"]["instrumentation"]
    print(
        f"1000 launches: file {size} B, finalize {finalize:.3f} s, "
        f"decode {inst['decode_seconds']:.3f} s in {inst['drains']} drains"
    )
    assert size < 10_000_000 and inst["launches"] == 1000 and finalize < 1.0


def test_python_call_paths_hold_the_kernel_and_its_scopes(tmp_path: Path) -> None:
    _run(tmp_path, "-b", "instrumentation", "-c", "python")
    tree = json.loads((tmp_path / "k.hatchet").read_text())

    def walk(node: dict, path: tuple[str, ...] = ()):  # type: ignore[type-arg, no-untyped-def]
        yield path + (node["frame"]["name"],), node
        for child in node["children"]:
            yield from walk(child, path + (node["frame"]["name"],))

    kernels = [(path, node) for path, node in walk(tree[0]) if path[-1] == "three"]
    assert kernels, "no kernel node"
    path, node = kernels[0]
    assert any("k.py" in frame for frame in path[:-1])  # under the script's Python frame
    assert {c["frame"]["name"] for c in node["children"]} == {"load", "compute", "store"}
