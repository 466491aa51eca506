"""The check report in a terminal (rich): one entry per grouped finding with its source line and a
caret under the expression, then the summary."""

from __future__ import annotations

import linecache
from typing import IO

from deuteron.model.finding import CheckReport, Finding
from deuteron.process.terminal import printable, short_path

_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}


def render(report: CheckReport, file: IO[str] | None = None, color: bool | None = None) -> None:
    from rich.console import Console
    from rich.text import Text

    console = Console(
        file=file, highlight=False, no_color=color is False, force_terminal=color or None, soft_wrap=True
    )
    for f in report.findings:
        head = Text()
        head.append(f"{f.severity:<7}", style=_STYLE[f.severity])
        head.append(f" {f.kind}", style="bold")
        head.append(f"  {printable(f.kernel)}  {printable(short_path(f.file))}:{f.line}")
        scope = f"{f.programs} program{'s' if f.programs != 1 else ''}" if f.programs else ""
        if f.launches > 1:
            scope += f"{' in ' if scope else ''}{f.launches} launches"
        if scope:
            head.append(f"  ({scope})", style="dim")
        console.print(head)
        console.print(Text("  " + printable(f.message)))
        for line in _source(f):
            console.print(Text(line, style="dim" if line.lstrip().startswith("|") else ""))
        example = []
        if f.program is not None:
            example.append(f"program {f.program}")
        if f.index is not None and f.tensor:
            example.append(f"{f.tensor}[{', '.join(str(i) for i in f.index)}]")
        if example:
            console.print(Text(printable(f"  e.g. {', '.join(example)}"), style="dim"))
        if f.tests:
            more = " and others" if len(f.tests) >= 5 else ""
            console.print(Text(printable(f"  in test {', '.join(f.tests)}{more}"), style="dim"))
        console.print()
    style = (
        "bold red" if report.count("error") else ("bold yellow" if report.count("warning") else "bold green")
    )
    console.print(Text(f"deuteron check: {report.summary()}", style=style))


def _source(f: Finding) -> list[str]:
    if not f.line:
        return []
    text = linecache.getline(f.file, f.line).rstrip("\n")
    if not text:
        return []
    gutter = f"  {f.line:>5} | "
    lines = [gutter + printable(text)]
    if f.column is not None:
        width = max(1, (f.end_column if f.end_column is not None else len(text)) - f.column)
        lines.append(" " * (len(gutter) - 2) + "| " + " " * f.column + "^" * width)
    return lines
