"""Explain's own text views of one kernel's compilation: a stage with each IR line tagged with its
source line (``--stage``, ``--line``), and the MLIR passes run (``--passes``, ``--pass``)."""

from __future__ import annotations

import difflib
import linecache
from typing import IO

from deuteron.explain.analysis import KernelAnalysis
from deuteron.explain.cross_compile import ir_after
from deuteron.explain.stages import IRLine, at_line, source_line
from deuteron.process.terminal import printable


def render_stage(a: KernelAnalysis, stage: str, line: int | None, file: IO[str]) -> int:
    """Print one stage, each IR line tagged with its source line; with ``line``, only what it became."""
    lines: list[IRLine] = a.stages.get(stage, [])
    shown = at_line(lines, a.spec.file, line) if line is not None else lines
    head = f"{a.spec.name} {a.spec.target.name} {stage}"
    if line is not None:
        src = linecache.getline(a.spec.file, line).strip()
        head += f", source line {line}: {src}" if src else f", source line {line}"
    print(printable(f"// {head} ({len(shown)} of {len(lines)} lines)"), file=file)
    for ir in shown:
        src_line = source_line(ir, a.spec.file)
        tag = f"{src_line:>5}" if src_line is not None else "     "
        print(f"{tag} | {printable(ir.text.expandtabs(8))}", file=file)  # PTX indents with tabs
    return len(shown)


def render_passes(a: KernelAnalysis, which: str | None, file: IO[str]) -> None:
    dumps = a.compiled.passes
    if which is None:
        print(
            f"// {a.spec.name} {a.spec.target.name}: {len(dumps)} MLIR passes run, in order "
            "(show one with --pass NAME or --pass INDEX)",
            file=file,
        )
        for d in dumps:
            print(f"{d.index:>4}  {d.name}  [{d.scope}]", file=file)
        return
    chosen = [d for d in dumps if which.isdigit() and d.index == int(which)] or [
        d for d in dumps if which.lower() in d.name.lower()
    ]
    if not chosen:
        names = sorted({d.name for d in dumps})
        raise LookupError(f"no pass {which!r} ran for {a.spec.name}; passes: {', '.join(names)}")
    d = chosen[0]
    after = ir_after(a.compiled, d.index)
    more = f" (first of {len(chosen)} runs; pick one by index)" if len(chosen) > 1 else ""
    print(f"// pass {d.index} {d.name} [{d.scope}]{more}: IR before → after", file=file)
    diff = list(
        difflib.unified_diff(
            d.ir_before.splitlines(), after.splitlines(), "before", "after", lineterm="", n=2
        )
    )
    if not diff:
        print("// (the pass changed nothing)", file=file)
    for row in diff:
        print(printable(row), file=file)
