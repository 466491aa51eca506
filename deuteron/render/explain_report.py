"""The explain report in a terminal (rich): the ranking by opportunity, then each kernel's
resources, SASS mix and findings.

It reads the report's JSON document (``deuteron.formats.explain_json``), the same data the web UI
and ``--json`` get, so every view of a kernel shows the same numbers.
"""

from __future__ import annotations

import linecache
import os
from typing import IO, Any, Literal

from deuteron.model.names import display_name
from deuteron.process.terminal import printable

_STYLE = {"warning": "bold yellow", "info": "bold cyan"}


def render(doc: dict[str, Any], file: IO[str], color: bool | None = None) -> None:
    from rich.console import Console

    console = Console(
        file=file,
        no_color=color is False,
        highlight=False,
        soft_wrap=True,
        force_terminal=color if color else None,
    )
    if doc.get("ranking"):
        _render_ranking(console, doc)
    for kernel in doc.get("kernels", []):
        _render_kernel(console, kernel)


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 1024:.1f} KiB" if n >= 4096 else f"{n} B"


def _render_ranking(console: Any, doc: dict[str, Any]) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=escape(f"kernels by opportunity = time × (1 − util)  [device: {doc.get('device') or '?'}]"),
        title_justify="left",
        box=box.SIMPLE_HEAD,  # no side rules: an 80-column terminal keeps every header whole
        pad_edge=False,
        collapse_padding=True,
        show_edge=False,
    )
    for col in ("kernel", "time/ms", "calls", "TFLOP/s", "GB/s", "util", "bound", "opportunity/ms"):
        # headers never cut ("opportunit…" said nothing): numbers keep their width, the name folds
        if col == "kernel":
            table.add_column(col, justify="left", min_width=16, overflow="fold")
        else:
            side: Literal["left", "right"] = "left" if col == "bound" else "right"
            table.add_column(col, justify=side, no_wrap=True, min_width=len(col))
    for c in doc["ranking"]:
        shown = printable(display_name(c["name"]))  # a C++ kernel (cuBLAS, aten) as its short name
        name = shown if c["launched"] else f"{shown} (not launched by this run)"
        table.add_row(
            name,
            f"{c['time_ns'] / 1e6:.3f}",
            str(c["count"]),
            "-" if c["tflops_per_s"] is None else f"{c['tflops_per_s']:.2f}",
            "-" if c["gbytes_per_s"] is None else f"{c['gbytes_per_s']:.1f}",
            "-" if c["util"] is None else f"{c['util']:.0%}",
            c["bound"] or "-",
            f"{c['opportunity_ns'] / 1e6:.3f}",
        )
    console.print(table)


def _render_kernel(console: Any, k: dict[str, Any]) -> None:
    """One kernel's block: header, resources and occupancy, SASS mix, profile, then the findings.

    One function so the block reads top to bottom as it prints. Every string from the document goes
    through ``printable`` and rich's ``escape``: names, paths and argument values come from the
    user's program and may hold control characters or ``[`` (rich markup).
    """
    from rich.markup import escape

    launches = k["launches"]
    heard = f"{launches} launch{'es' if launches != 1 else ''}"
    if k.get("origin") == "inductor":  # keyed from Inductor's description of the kernel, not a launch
        heard = "a config of Inductor's" + (f", {heard}" if launches else "")
    console.print()
    console.print(
        f"[bold]{escape(printable(k['name']))}[/bold]  {escape(printable(k['target']))}  "
        f"num_warps={k['num_warps']} num_stages={k['num_stages']}  "
        f"{heard}  "
        f"[dim]{escape(printable(os.path.relpath(k['file'])))}:{k['line']}[/dim]"
    )
    console.print(f"  args: {escape(printable(', '.join(k['args'])))}")
    occ = k["occupancy"]
    occ_text = (
        (
            f"{occ['blocks_per_sm']} blocks, {occ['warps_per_sm']}/{occ['max_warps_per_sm']} warps per SM "
            f"({occ['fraction']:.0%}), limited by {occ['limiter']}"
        )
        if occ
        else "n/a"
    )
    registers = k["registers"]
    console.print(
        f"  registers {registers if registers is not None else '?'}/thread · spills "
        f"{_fmt_bytes(k['spills'])} · shared {_fmt_bytes(k['shared_bytes'])} · occupancy {occ_text}"
    )
    mix = k["sass"]
    if mix:
        tc = ", ".join(f"{name} {n}" for name, n in mix["tensor_core_ops"].items()) or "none"
        loads = ", ".join(f"{w}×{n}" for w, n in mix["global_loads"].items()) or "none"
        stores = ", ".join(f"{w}×{n}" for w, n in mix["global_stores"].items()) or "none"
        console.print(
            f"  SASS {mix['total']} instructions: tensor-core {mix['tensor_core']} ({tc}) · global "
            f"loads {loads} · stores {stores} · async copies {mix['async_copies']} · local "
            f"{mix['local_loads']}/{mix['local_stores']} · shared {mix['shared_loads']}/"
            f"{mix['shared_stores']} (ld/st)"
        )
    cost = k.get("profile")
    if cost is not None:
        util = "-" if cost["util"] is None else f"{cost['util']:.0%}"
        tflops, gbytes = cost["tflops_per_s"], cost["gbytes_per_s"]
        console.print(
            f"  profile: {cost['time_ns'] / 1e6:.3f} ms in {cost['count']} calls · "
            f"{'-' if tflops is None else f'{tflops:.2f}'} TFLOP/s · "
            f"{'-' if gbytes is None else f'{gbytes:.1f}'} GB/s · util {util} · "
            f"{cost['bound'] or 'bound unknown'}"
        )
    for hot in k.get("hot_lines", []):
        stall = (hot["stall"] or "no dominant stall").removeprefix("stalled_")
        console.print(
            f"  [bold]hot line {hot['line']}[/bold]: {hot['samples']:,} PC samples ({hot['share']:.0%} "
            f"of the kernel's), {escape(stall)}"
            + (f" ({hot['stall_share']:.0%})" if hot["stall"] else "")
        )
        if hot["meaning"]:
            console.print(f"      it {escape(hot['meaning'])}; try: {escape(hot['change'])}")
        for lint in hot["lints"]:
            console.print(f"      explain on the same line: {escape(printable(lint))}")
    if not k["findings"]:
        console.print("  [green]no findings[/green]")
    for f in k["findings"]:
        style = _STYLE.get(f["severity"], "bold")
        line = f["line"]
        where = f"line {line}" if line else "kernel"
        message = escape(printable(f["message"]))
        console.print(f"  [{style}]{f['severity']}[/{style}] {where} [bold]{f['kind']}[/bold]: {message}")
        if line:
            text = linecache.getline(k["file"], line).rstrip()
            if text:
                console.print(f"      [dim]{line:>5} │[/dim] {escape(printable(text))}")
