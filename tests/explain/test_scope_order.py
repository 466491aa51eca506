"""What the compiler moved across a pl.scope: a real kernel, instrumented and compiled for an H100
on this CPU machine with Triton's own Proton passes, its TTIR against its TTGIR."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from deuteron.explain.scope_order import scope_notes

REPO = Path(__file__).resolve().parents[2]
PROGRAM = textwrap.dedent(
    """
    import json, sys
    import triton, triton.language as tl
    import deuteron.language as pl
    from deuteron.explain.scope_order import scope_notes
    from deuteron.triton import instrument
    from deuteron.triton.compiler.compile import compile_kernel
    from deuteron.triton.compiler.targets import gpu_target

    @triton.jit
    def tiled(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK, BLOCK), tl.float32)
        for k in range(0, K, BLOCK):
            with pl.scope("load"):  # its address math does not depend on k: hoisted out of the loop
                a = tl.load(a_ptr + offs[:, None] * K + k + offs[None, :])
                b = tl.load(b_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
            with pl.scope("dot"):
                acc = tl.dot(a, b, acc)
        tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)

    pl.enable_semantic("triton")
    options = instrument.PassOptions("cycle", "none", "", "warp", "circular", "shared", 0, (), "default")
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    with instrument.compiling_for(options, max_shared=232448):
        target = gpu_target("cuda", 90, 32)
        asm = compile_kernel(tiled, signature, {"BLOCK": 64}, {}, target, {}, __file__).asm
    print(json.dumps({"records": asm["ttgir"].count("proton.record"), "stages": sorted(asm),
                      "notes": scope_notes(asm["ttir"], asm["ttgir"])}))
    """
)


def test_records_survive_to_ttgir_and_the_hoisted_work_is_named(tmp_path: Path) -> None:
    """Compiled in a fresh process (the test session runs Triton's interpreter)."""
    script = tmp_path / "tiled.py"
    script.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    # REPO first, and whatever PYTHONPATH already holds after it (CI's Triton 3.6 folders)
    path = os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))
    env.update(PYTHONPATH=path, TRITON_DEFAULT_FP_FUSION="1", TRITON_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["records"] == 4 and "cubin" in found["stages"]  # Triton's Proton passes lowered it all
    notes = found["notes"]
    assert "load" in notes and "now run outside it" in notes["load"]
    assert "tt.splat" in notes["load"] or "tt.make_range" in notes["load"]


def test_a_scope_the_compiler_left_alone_has_no_note() -> None:
    ttir = """
    tt.func @k() {
      %a = tt.get_program_id x : i32 loc(#loc1)
      proton.record start "s" loc(#loc2)
      %b = arith.addi %a, %a : i32 loc(#loc3)
      proton.record end "s" loc(#loc2)
      tt.return loc(#loc1)
    }
#loc1 = loc("k.py":1:0)
#loc2 = loc("k.py":2:0)
#loc3 = loc("k.py":3:0)
"""
    assert scope_notes(ttir, ttir) == {}
    start, work = 'proton.record start "s" loc(#loc2)', "%b = arith.addi %a, %a : i32 loc(#loc3)"
    moved = ttir.replace(f"{start}\n      {work}", f"{work}\n      {start}")
    assert "1 ops of its lines now run outside it (arith.addi)" in scope_notes(ttir, moved)["s"]
    assert scope_notes("garbage", "more garbage") == {}


def test_stage_listing_shows_tabs_as_spaces_not_escapes() -> None:
    """PTX indents with tabs: a listing shows them as spaces, never as a literal backslash-t."""
    import io
    from types import SimpleNamespace

    from deuteron.explain.stages import IRLine
    from deuteron.explain.views import render_stage

    spec = SimpleNamespace(name="k", file="k.py", target=SimpleNamespace(name="sm90"))
    line = IRLine(1, "\tld.global.b32 \t%r1, [%rd1];", (("k.py", 3),))
    a = SimpleNamespace(spec=spec, stages={"ptx": [line]})
    out = io.StringIO()
    render_stage(a, "ptx", None, out)  # type: ignore[arg-type]
    assert "\\t" not in out.getvalue() and "ld.global.b32" in out.getvalue()
    assert out.getvalue().splitlines()[1].startswith("    3 |         ld.global.b32")


def test_the_ranking_keeps_every_header_whole_in_80_columns() -> None:
    import io

    from rich.console import Console

    from deuteron.render.explain_report import _render_ranking

    row = {
        "name": "a_very_long_kernel_name_matmul_kernel", "launched": True, "time_ns": 1.2e6, "count": 3,
        "tflops_per_s": 1.5, "gbytes_per_s": 200.0, "util": 0.4, "bound": "memory", "opportunity_ns": 7e5,
    }  # fmt: skip
    out = io.StringIO()
    _render_ranking(Console(file=out, width=80), {"device": "h100", "ranking": [row]})
    text = out.getvalue()
    assert "[device: h100]" in text  # the title's brackets are text, not markup
    header = next(line for line in text.splitlines() if line.startswith("kernel "))
    columns = ["kernel", "time/ms", "calls", "TFLOP/s", "GB/s", "util", "bound", "opportunity/ms"]
    assert header.split() == columns
