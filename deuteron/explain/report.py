"""The explain report: a terminal rendering (rich) and a JSON file from the same analyses."""

from __future__ import annotations

import difflib
import json
import linecache
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .analysis import KernelAnalysis
from .compiler import ir_after
from .roofline import KernelCost, ranked
from .stages import IRLine, at_line, source_line

_STYLE = {"warning": "bold yellow", "info": "bold cyan"}


@dataclass
class ExplainReport:
    kernels: list[KernelAnalysis] = field(default_factory=list)
    costs: dict[str, KernelCost] = field(default_factory=dict)
    device: str | None = None
    errors: list[str] = field(default_factory=list)

    # --- JSON ------------------------------------------------------------------------------
    def kernel_json(self, a: KernelAnalysis) -> dict[str, Any]:
        spec = a.spec
        out: dict[str, Any] = {
            "name": spec.name,
            "target": spec.target.name,
            "file": spec.file,
            "line": spec.first_line,
            "num_warps": spec.option("num_warps"),
            "num_stages": spec.option("num_stages"),
            "num_ctas": spec.option("num_ctas"),
            "args": [arg.describe() for arg in spec.args],
            "launches": spec.launches,
            "grids": [list(g) for g in spec.grids],
            "registers": a.registers,
            "spills": a.spill_bytes,
            "shared_bytes": a.shared_bytes,
            "occupancy": a.occupancy.as_json() if a.occupancy else None,
            "sass": a.mix,
            "stages": {name: len(lines) for name, lines in a.stages.items()},
            "source_map": a.source_map(),
            "findings": [f.as_json() for f in a.findings],
        }
        cost = self.costs.get(spec.name)
        if cost is not None:
            out["profile"] = cost.as_json()
        return out

    def as_json(self) -> dict[str, Any]:
        launched = {a.spec.name for a in self.kernels}
        order = ranked(self.costs.values())
        return {
            "kernels": [self.kernel_json(a) for a in self.kernels],
            "ranking": [
                {"name": c.name, "opportunity_ns": c.opportunity_ns, "launched": c.name in launched}
                for c in order
            ],
            "device": self.device,
            "errors": list(self.errors),
        }

    def write_json(self, path: str | os.PathLike[str]) -> Path:
        p = Path(path)
        p.write_text(json.dumps(self.as_json(), indent=1, default=str) + "\n", encoding="utf-8")
        return p

    # --- terminal --------------------------------------------------------------------------
    def render(self, file: IO[str], color: bool | None = None) -> None:
        from rich.console import Console

        console = Console(
            file=file,
            no_color=color is False,
            highlight=False,
            soft_wrap=True,
            force_terminal=color if color else None,
        )
        if self.costs:
            _render_ranking(console, self)
        for a in self.kernels:
            _render_kernel(console, a, self.costs.get(a.spec.name))


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 1024:.1f} KiB" if n >= 4096 else f"{n} B"


def _render_ranking(console: Any, report: ExplainReport) -> None:
    from rich.table import Table

    launched = {a.spec.name for a in report.kernels}
    table = Table(
        title=f"kernels by opportunity = time × (1 − util)  [device: {report.device or '?'}]",
        title_justify="left",
    )
    for col in ("kernel", "time/ms", "calls", "TFLOP/s", "GB/s", "util", "bound", "opportunity/ms"):
        table.add_column(col, justify="left" if col in ("kernel", "bound") else "right")
    for c in ranked(report.costs.values()):
        name = c.name if c.name in launched else f"{c.name} (not launched by this run)"
        table.add_row(
            name,
            f"{c.time_ns / 1e6:.3f}",
            str(c.count),
            "-" if c.tflops_per_s is None else f"{c.tflops_per_s:.2f}",
            "-" if c.gbytes_per_s is None else f"{c.gbytes_per_s:.1f}",
            "-" if c.util is None else f"{c.util:.0%}",
            c.bound or "-",
            f"{c.opportunity_ns / 1e6:.3f}",
        )
    console.print(table)


def _render_kernel(console: Any, a: KernelAnalysis, cost: KernelCost | None) -> None:
    from rich.markup import escape

    spec = a.spec
    console.print()
    console.print(
        f"[bold]{escape(spec.name)}[/bold]  {spec.target.name}  "
        f"num_warps={spec.option('num_warps')} num_stages={spec.option('num_stages')}  "
        f"{spec.launches} launch{'es' if spec.launches != 1 else ''}  "
        f"[dim]{escape(os.path.relpath(spec.file))}:{spec.first_line}[/dim]"
    )
    console.print(f"  args: {escape(', '.join(arg.describe() for arg in spec.args))}")
    occ = a.occupancy
    occ_text = (
        (
            f"{occ.blocks_per_sm} blocks, {occ.warps_per_sm}/{occ.max_warps_per_sm} warps per SM "
            f"({occ.fraction:.0%}), limited by {occ.limiter}"
        )
        if occ
        else "n/a"
    )
    console.print(
        f"  registers {a.registers if a.registers is not None else '?'}/thread · spills "
        f"{_fmt_bytes(a.spill_bytes)} · shared {_fmt_bytes(a.shared_bytes)} · occupancy {occ_text}"
    )
    mix = a.mix
    if mix:
        tc = ", ".join(f"{k} {v}" for k, v in mix["tensor_core_ops"].items()) or "none"
        loads = ", ".join(f"{k}×{v}" for k, v in mix["global_loads"].items()) or "none"
        stores = ", ".join(f"{k}×{v}" for k, v in mix["global_stores"].items()) or "none"
        console.print(
            f"  SASS {mix['total']} instructions: tensor-core {mix['tensor_core']} ({tc}) · global "
            f"loads {loads} · stores {stores} · async copies {mix['async_copies']} · local "
            f"{mix['local_loads']}/{mix['local_stores']} · shared {mix['shared_loads']}/"
            f"{mix['shared_stores']} (ld/st)"
        )
    if cost is not None:
        util = "-" if cost.util is None else f"{cost.util:.0%}"
        console.print(
            f"  profile: {cost.time_ns / 1e6:.3f} ms in {cost.count} calls · "
            f"{'-' if cost.tflops_per_s is None else f'{cost.tflops_per_s:.2f}'} TFLOP/s · "
            f"{'-' if cost.gbytes_per_s is None else f'{cost.gbytes_per_s:.1f}'} GB/s · util {util} · "
            f"{cost.bound or 'bound unknown'}"
        )
    if not a.findings:
        console.print("  [green]no findings[/green]")
    for f in a.findings:
        style = _STYLE.get(f.severity, "bold")
        where = f"line {f.line}" if f.line else "kernel"
        console.print(f"  [{style}]{f.severity}[/{style}] {where} [bold]{f.kind}[/bold]: {escape(f.message)}")
        if f.line:
            text = linecache.getline(spec.file, f.line).rstrip()
            if text:
                console.print(f"      [dim]{f.line:>5} │[/dim] {escape(text)}")


def render_stage(a: KernelAnalysis, stage: str, line: int | None, file: IO[str]) -> int:
    """Print one stage, each IR line tagged with its source line; with ``line``, only what it became."""
    lines: list[IRLine] = a.stages.get(stage, [])
    shown = at_line(lines, a.spec.file, line) if line is not None else lines
    head = f"{a.spec.name} {a.spec.target.name} {stage}"
    if line is not None:
        src = linecache.getline(a.spec.file, line).strip()
        head += f", source line {line}: {src}" if src else f", source line {line}"
    print(f"// {head} ({len(shown)} of {len(lines)} lines)", file=file)
    for ir in shown:
        src_line = source_line(ir, a.spec.file)
        tag = f"{src_line:>5}" if src_line is not None else "     "
        print(f"{tag} | {ir.text}", file=file)
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
        print(row, file=file)
