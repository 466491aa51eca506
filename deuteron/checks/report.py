"""The report: a terminal rendering (rich) and a JSON file, from the same grouped findings."""

from __future__ import annotations

import json
import linecache
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .findings import SEVERITIES, Finding

_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    launches: int = 0
    programs: int = 0
    failed_launches: int = 0
    kernels: dict[str, int] = field(default_factory=dict)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def at_least(self, severity: str) -> list[Finding]:
        """Findings of this severity or worse ("error" < "warning" < "info")."""
        rank = SEVERITIES.index(severity)
        return [f for f in self.findings if SEVERITIES.index(f.severity) <= rank]

    def summary(self) -> str:
        parts = [
            f"{self.count(s)} {s}{'s' if self.count(s) != 1 and s != 'info' else ''}" for s in SEVERITIES
        ]
        failed = f" ({self.failed_launches} raised)" if self.failed_launches else ""
        return (
            f"{self.launches} launch{'es' if self.launches != 1 else ''}{failed} and "
            f"{self.programs} program{'s' if self.programs != 1 else ''} checked: {', '.join(parts)}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "deuteron-check",
            "version": 1,
            "findings": [f.to_json() for f in self.findings],
            "launches": self.launches,
            "programs": self.programs,
            "failed_launches": self.failed_launches,
            "kernels": self.kernels,
            "summary": {s: self.count(s) for s in SEVERITIES},
        }

    def write_json(self, path: str | Path) -> Path:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        os.replace(tmp, path)
        return path

    def render(self, file: IO[str] | None = None, color: bool | None = None) -> None:
        from rich.console import Console
        from rich.text import Text

        console = Console(
            file=file, highlight=False, no_color=color is False, force_terminal=color or None, soft_wrap=True
        )
        for f in self.findings:
            head = Text()
            head.append(f"{f.severity:<7}", style=_STYLE[f.severity])
            head.append(f" {f.kind}", style="bold")
            head.append(f"  {f.kernel}  {_short(f.file)}:{f.line}")
            scope = f"{f.programs} program{'s' if f.programs != 1 else ''}" if f.programs else ""
            if f.launches > 1:
                scope += f"{' in ' if scope else ''}{f.launches} launches"
            if scope:
                head.append(f"  ({scope})", style="dim")
            console.print(head)
            console.print(Text("  " + f.message))
            for line in _source(f):
                console.print(Text(line, style="dim" if line.lstrip().startswith("|") else ""))
            if f.program is not None:
                console.print(Text(f"  e.g. program {f.program}", style="dim"))
            console.print()
        style = (
            "bold red" if self.count("error") else ("bold yellow" if self.count("warning") else "bold green")
        )
        console.print(Text(f"deuteron check: {self.summary()}", style=style))


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def _source(f: Finding) -> list[str]:
    text = linecache.getline(f.file, f.line).rstrip("\n")
    if not text:
        return []
    gutter = f"  {f.line:>5} | "
    lines = [gutter + text]
    if f.col is not None:
        width = max(1, (f.end_col if f.end_col is not None else len(text)) - f.col)
        lines.append(" " * (len(gutter) - 2) + "| " + " " * f.col + "^" * width)
    return lines
