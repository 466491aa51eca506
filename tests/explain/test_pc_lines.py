"""Where each instruction's PC samples go (``deuteron.explain.pc_lines``), on the kernels of
``benchmarks/hot_line_kernel.py`` compiled for an H100 on this CPU machine, and on small
hand-made tables for the rules' edges.

The benchmark's kernels keep their time on one ``# HOT`` line each; the GPU run checks the
samples, here every instruction counts once (an instruction's share, not its samples'): the
``tl.sin``/``tl.exp`` loop's instructions must sit on its line, not on ``<no source line>`` (PTX
line 0) nor on the store below it (libdevice's inline asm printing ``.loc`` 13 and 14 for a call
on 12); ``tl.sum``'s must sit on the calling line, with ``tl.sum (standard.py:N)`` below it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from deuteron.explain.pc_lines import (
    IN_BLOCK,
    INLINED,
    NO_LINE,
    ON_LINE,
    UNPLACED,
    LineTable,
    PcSite,
    callee_frame,
    is_library_file,
    line_rows,
    place,
    site_path,
    split_frames,
)
from deuteron.explain.sass import Instruction
from tests.helpers.paths import REPO

SCRIPT = REPO / "benchmarks" / "hot_line_kernel.py"
COMPILE = textwrap.dedent(
    """
    import importlib.util, json, sys
    from deuteron.triton.compiler.compile import compile_kernel
    from deuteron.triton.compiler.targets import gpu_target

    path, out = sys.argv[1], sys.argv[2]
    spec = importlib.util.spec_from_file_location("hot_line_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    target = gpu_target("cuda", 90, 32)
    kernels = {
        "sin_exp_loop": ({"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}, {"STEPS": 256, "BLOCK": 2048}),
        "row_sum_loop": ({"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"STEPS": 256, "ROWS": 32, "COLS": 128}),
    }
    for name, (signature, constants) in kernels.items():
        asm = compile_kernel(getattr(module, name), signature, constants, {}, target, {}, path).asm
        open(f"{out}/{name}.cubin", "wb").write(asm["cubin"])
        open(f"{out}/{name}.ptx", "w").write(asm["ptx"])
    print(json.dumps(sorted(kernels)))
    """
)


def _hot_lines() -> dict[str, int]:
    kernel, out = "", {}
    for number, text in enumerate(SCRIPT.read_text().splitlines(), start=1):
        if text.startswith("def "):
            kernel = text[4:].split("(")[0]
        elif text.rstrip().endswith("# HOT"):
            out[kernel] = number
    return out


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, str]]:
    """The benchmark's two kernels compiled for cuda:90 once (in a fresh process: the test
    session runs Triton's interpreter): each one's cubin and PTX."""
    out = tmp_path_factory.mktemp("hot_line_cubins")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env["TRITON_CACHE_DIR"] = str(out / "cache")
    proc = subprocess.run(
        [sys.executable, "-c", COMPILE, str(SCRIPT), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = json.loads(proc.stdout.strip().splitlines()[-1])
    return {name: ((out / f"{name}.cubin").read_bytes(), (out / f"{name}.ptx").read_text()) for name in names}


@pytest.fixture(scope="module")
def tables(compiled: dict[str, tuple[bytes, str]]) -> dict[str, LineTable]:
    return {name: LineTable.build(cubin, ptx) for name, (cubin, ptx) in compiled.items()}


def _lines(table: LineTable) -> Counter[int | None]:
    return Counter(site.line[1] if site.line and Path(site.line[0]).name == SCRIPT.name else None
                   for site in table.sites.values())  # fmt: skip


@pytest.mark.slow
def test_a_loop_of_transcendentals_is_on_its_line(tables: dict[str, LineTable]) -> None:
    table, hot = tables["sin_exp_loop"], _hot_lines()["sin_exp_loop"]
    lines, total = _lines(table), len(table.sites)
    assert lines[hot] / total >= 0.9, lines
    assert lines[hot + 1] / total < 0.05, lines  # the store: no leak of libdevice's asm .loc lines
    placement = table.placement()
    assert placement[UNPLACED] / total < 0.02 and lines[None] == placement[UNPLACED]
    # PTX line 0 (libdevice's polynomial picks, if-converted) and the prologue: placed from their
    # basic block; those in the loop go on the hot line
    line0 = [s for s in table.sites.values() if not s.frames and s.line is not None]
    assert line0 and all(s.placed == IN_BLOCK for s in line0)
    assert sum(s.line is not None and s.line[1] == hot for s in line0) / len(line0) > 0.9
    # every instruction counted once, as samples would be: the rows say the same
    rows = line_rows("sin_exp_loop", np.array(sorted(table.sites)), {"num_samples": np.ones(total)}, table)
    assert rows[0].path[0].endswith(f"{SCRIPT.name}:{hot}@sin_exp_loop") and len(rows[0].path) == 1
    assert rows[0].metrics["num_samples"] / total >= 0.9


@pytest.mark.slow
def test_an_inlined_tl_sum_is_on_the_calling_line_with_the_callee_below(tables: dict[str, LineTable]) -> None:
    table, hot = tables["row_sum_loop"], _hot_lines()["row_sum_loop"]
    lines, total = _lines(table), len(table.sites)
    assert lines[hot] / total >= 0.8, lines
    assert not any(s.line and is_library_file(s.line[0]) for s in table.sites.values())
    inlined = [s for s in table.sites.values() if s.placed == INLINED]
    assert inlined and all(s.line is not None and s.line[1] == hot for s in inlined)
    assert all(s.frames[0][0].endswith("standard.py") for s in inlined)  # what the debug info said
    paths = Counter(site_path("row_sum_loop", s)[1:] for s in inlined)
    assert all(p[0].startswith("tl.sum (standard.py:") for p in paths), paths
    assert any(len(p) == 2 and p[1].startswith("_sum_combine (standard.py:") for p in paths), paths
    assert table.placement()[UNPLACED] / total < 0.02
    rows = line_rows("row_sum_loop", np.array(sorted(table.sites)), {"num_samples": np.ones(total)}, table)
    below = [r for r in rows if len(r.path) > 1]
    assert below and all(r.path[0].endswith(f":{hot}@row_sum_loop") for r in below)


@pytest.mark.slow
def test_without_the_ptx_the_cubins_own_inlined_chains_give_the_same_callees(
    compiled: dict[str, tuple[bytes, str]], tables: dict[str, LineTable]
) -> None:
    """A kernel found as a cubin alone: ``nvdisasm -gi`` prints each chain one frame per marker.
    Where the PTX had ``inlined_at`` (ptxas then keeps the chain), it gives the PTX's callees."""
    cubin, ptx = compiled["row_sum_loop"]
    alone, hot = LineTable.build(cubin, None), _hot_lines()["row_sum_loop"]
    assert not any(s.line and is_library_file(s.line[0]) for s in alone.sites.values())
    assert alone.placement()[UNPLACED] == 0 and _lines(alone)[hot] / len(alone.sites) >= 0.8
    if "inlined_at" in ptx:
        via_ptx = tables["row_sum_loop"].sites
        same = sum(site.callees == via_ptx[offset].callees for offset, site in alone.sites.items())
        assert same / len(alone.sites) > 0.98 and alone.placement()[INLINED] > 0


def _instr(offset: int, text: str = "FADD R0, R1, R2", label: bool = False) -> Instruction:
    return Instruction(offset, text, None, label)


def test_an_instruction_without_a_location_takes_its_blocks_nearest_line() -> None:
    k = "/src/k.py"
    instrs = [
        _instr(0x00, label=True),
        _instr(0x10),  # no location: 0x00 and 0x20 are equally near; the earlier one wins
        _instr(0x20),
        _instr(0x30, "@!P0 BRA `(.L_x_1)"),
        _instr(0x40),  # no location, and none in its block (0x40, then a label): unplaced
        _instr(0x50, label=True),  # no location: the nearest in its block comes after it
        _instr(0x60),
    ]
    chains = [((k, 11),), (), ((k, 12),), ((k, 13),), (), (), ((k, 21),)]
    sites = {s.offset: s for s in place(instrs, chains)}
    assert (sites[0x10].line, sites[0x10].placed) == ((k, 11), IN_BLOCK)
    assert (sites[0x40].line, sites[0x40].placed) == (None, UNPLACED)
    assert sites[0x50].line == (k, 21)
    assert sites[0x00].placed == ON_LINE
    assert site_path("k", sites[0x40]) == (NO_LINE,)


def test_the_outermost_line_of_your_source_holds_the_inlined_chain() -> None:
    std = "/venv/lib/python3.11/site-packages/triton/language/standard.py"
    helper = ((std, 287), (std, 314), ("/src/k.py", 7), ("/src/k.py", 17))
    assert split_frames(helper, "/src/k.py") == (
        ("/src/k.py", 17),
        (("/src/k.py", 7), (std, 314), (std, 287)),
    )
    # a chain the PTX left open (no call site in the kernel): no line of its own
    assert split_frames(((std, 287), (std, 314)), "/src/k.py") == (None, ((std, 314), (std, 287)))
    # Triton's own kernels (in its package) are the user's source there
    own = "/venv/lib/python3.11/site-packages/triton/tools/kernels.py"
    assert split_frames(((std, 287), (own, 40)), own) == ((own, 40), ((std, 287),))
    assert is_library_file(std) and is_library_file("") and not is_library_file("/home/me/triton_work/k.py")


def test_callees_are_named_by_the_function_around_their_line(tmp_path: Path) -> None:
    lib = tmp_path / "triton" / "language" / "standard.py"
    lib.parent.mkdir(parents=True)
    lib.write_text(
        "@jit\ndef _sum_combine(a, b):\n    return a + b\n\n\n@jit\ndef sum(x, axis):\n    return reduce(x)\n"
    )
    assert callee_frame(str(lib), 8) == "tl.sum (standard.py:8)"
    assert callee_frame(str(lib), 3) == "_sum_combine (standard.py:3)"
    assert callee_frame("/gone/elsewhere/standard.py", 314) == "standard.py:314"  # a replay elsewhere


def test_unplaced_pcs_keep_their_callees_under_no_source_line() -> None:
    std = "/t/triton/language/standard.py"
    site = PcSite(0x10, "FADD", None, ((std, 287),), None, ((std, 287),), UNPLACED)
    table = LineTable({0x10: site})
    rows = line_rows("k", np.array([0x10, 0x20]), {"num_samples": np.array([3, 4])}, table)
    assert {r.path: r.metrics["num_samples"] for r in rows} == {
        (NO_LINE,): 4,
        (NO_LINE, "standard.py:287"): 3,
    }
    assert table.placement(np.array([0x10, 0x20]), np.array([3, 4]))[UNPLACED] == 7
