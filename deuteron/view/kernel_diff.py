"""One kernel in two profiles, side by side: ``deuteron diff BEFORE AFTER --kernel NAME``.

A kernel's time is summed over every place it ran (a kernel node holds its own launches' time and
count), so a change of the calling context does not hide a change of the kernel. When the profiles
are sampled (``deuteron run --sample``: ``file:line@kernel`` frames with ``num_samples`` and stall
columns), each source line's samples are shown side by side, as shares of the kernel's samples too
(a run that is longer or shorter moves every count; the shares say where the time moved within the
kernel), with each line's dominant stall, through :func:`deuteron.view.hot_lines.sampled_kernels`.

The kernel is matched by name: an exact name (raw or as shown) first, else a part of it. No match,
or parts of several names, is a :class:`DeuteronError` naming the candidates, one line.
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field
from typing import Any

from deuteron.model.errors import DeuteronError
from deuteron.model.names import display_name
from deuteron.model.tree import KERNEL, Node, Profile
from deuteron.view.hot_lines import SampledKernel, SampledLine, sampled_kernels

TIME = "time (ns)"
COUNT = "count"
AMOUNTS = ("bytes", "flops")  # per launch, when the profile has them (the interpreter's do)
MAX_CANDIDATES = 12  # names listed in an error


class KernelDiffError(DeuteronError):
    """A kernel that cannot be compared: no such kernel, or a name matching several."""


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _kernel_nodes(profile: Profile) -> list[Node]:
    """Every kernel frame. Deuteron types them; Proton's files do not, so there a kernel is a frame
    with a launch count and a time of its own."""
    typed = [n for n in profile.root.walk() if n.type == KERNEL]
    if typed:
        return typed
    return [
        n for n in profile.root.walk() if COUNT in n.metrics and TIME in n.metrics and n is not profile.root
    ]


def kernel_names(profile: Profile) -> set[str]:
    return {n.name for n in _kernel_nodes(profile)}


def match_kernel(query: str, names: set[str]) -> str:
    """The one name ``query`` means: equal to a name (raw or shown), else a part of exactly one."""
    if not query:
        raise KernelDiffError("--kernel: give a kernel's name or a part of it")
    exact = sorted(n for n in names if query in (n, display_name(n), display_name(n, full=True)))
    if len(exact) == 1:
        return exact[0]
    found = exact or sorted(n for n in names if query in n or query in display_name(n, full=True))
    if len(found) == 1:
        return found[0]
    if not found:
        raise KernelDiffError(f"no kernel named like {query!r} in either profile; kernels: {_listed(names)}")
    raise KernelDiffError(
        f"{query!r} matches {len(found)} kernels: {_listed(set(found))}; give more of the name"
    )


def _listed(names: set[str]) -> str:
    counts: dict[str, int] = {}
    for n in names:
        counts[display_name(n)] = counts.get(display_name(n), 0) + 1
    # Several C++ kernels share a short name (their template arguments differ): one entry, counted.
    shown = [f"{s} ×{counts[s]}" if counts[s] > 1 else s for s in sorted(counts)]
    if not shown:
        return "none (did the program launch any?)"
    more = f", ... ({len(shown) - MAX_CANDIDATES} more)" if len(shown) > MAX_CANDIDATES else ""
    return ", ".join(shown[:MAX_CANDIDATES]) + more


@dataclass
class KernelTime:
    """One kernel's launches in one profile, summed over the places it ran."""

    calls: int = 0
    time_ns: float = 0.0
    places: int = 0
    amounts: dict[str, float] = field(default_factory=dict)  # bytes, flops: totals

    @property
    def present(self) -> bool:
        return self.places > 0

    @property
    def average_ns(self) -> float | None:
        return self.time_ns / self.calls if self.calls else None


def kernel_time(profile: Profile, name: str) -> KernelTime:
    out = KernelTime()
    for node in _kernel_nodes(profile):
        if node.name != name:
            continue
        out.places += 1
        out.calls += int(_number(node.metrics.get(COUNT)))
        out.time_ns += _number(node.metrics.get(TIME))
        for metric in AMOUNTS:
            if metric in node.metrics:
                out.amounts[metric] = out.amounts.get(metric, 0.0) + _number(node.metrics[metric])
    return out


@dataclass
class LineRow:
    """One source line's samples in both profiles (0 where it has none)."""

    file: str
    line: int
    before: int
    after: int
    before_share: float
    after_share: float
    before_stall: str | None
    after_stall: str | None


@dataclass
class KernelDiff:
    """What ``deuteron diff --kernel`` shows of one kernel in two profiles."""

    name: str
    before_path: str
    after_path: str
    before: KernelTime
    after: KernelTime
    before_samples: int = 0
    after_samples: int = 0
    lines: list[LineRow] = field(default_factory=list)

    @property
    def sampled(self) -> bool:
        return bool(self.before_samples or self.after_samples)

    def as_json(self) -> dict[str, Any]:
        def side(t: KernelTime, samples: int) -> dict[str, Any]:
            return {
                "present": t.present,
                "calls": t.calls,
                "time_ns": t.time_ns,
                "average_ns": t.average_ns,
                "places": t.places,
                **{m: v for m, v in t.amounts.items()},
                "samples": samples,
            }

        return {
            "kernel": self.name,
            "before": {"file": self.before_path, **side(self.before, self.before_samples)},
            "after": {"file": self.after_path, **side(self.after, self.after_samples)},
            "change": _change(self.before.time_ns, self.after.time_ns),
            "lines": [
                {
                    "file": r.file,
                    "line": r.line,
                    "before": r.before,
                    "after": r.after,
                    "before_share": round(r.before_share, 4),
                    "after_share": round(r.after_share, 4),
                    "before_stall": r.before_stall,
                    "after_stall": r.after_stall,
                }
                for r in self.lines
            ],
        }


def _change(old: float, new: float) -> float | None:
    return (new - old) / old if old else None


def _stall(line: SampledLine | None) -> str | None:
    found = line.dominant() if line is not None else None
    return found[0].removeprefix("stalled_") if found else None


def _line_rows(before: SampledKernel | None, after: SampledKernel | None) -> list[LineRow]:
    """Each sampled line of either side, matched by file base name and line number (the two runs
    may have read the kernel from different folders), most samples first."""
    by_key: dict[tuple[str, int], list[SampledLine | None]] = {}
    for i, kernel in enumerate((before, after)):
        for line in kernel.lines.values() if kernel else ():
            key = (os.path.basename(line.file), line.line)
            by_key.setdefault(key, [None, None])[i] = line
    rows = []
    for (_, number), (b, a) in by_key.items():
        b_total = before.samples if before else 0
        a_total = after.samples if after else 0
        rows.append(
            LineRow(
                (b or a).file if (b or a) else "",  # type: ignore[union-attr]
                number,
                b.samples if b else 0,
                a.samples if a else 0,
                (b.samples / b_total) if b and b_total else 0.0,
                (a.samples / a_total) if a and a_total else 0.0,
                _stall(b),
                _stall(a),
            )
        )
    return sorted(rows, key=lambda r: (-max(r.before, r.after), r.line))


def diff_kernel(
    before: Profile, after: Profile, query: str, before_path: str = "before", after_path: str = "after"
) -> KernelDiff:
    """One kernel (``query``: its name or a part of it) in both profiles."""
    name = match_kernel(query, kernel_names(before) | kernel_names(after))
    out = KernelDiff(name, before_path, after_path, kernel_time(before, name), kernel_time(after, name))
    b = sampled_kernels(before).get(name)
    a = sampled_kernels(after).get(name)
    out.before_samples = b.samples if b else 0
    out.after_samples = a.samples if a else 0
    if b or a:
        out.lines = _line_rows(b, a)
    return out


# --- text ---------------------------------------------------------------------------------------


def _ms(ns: float | None) -> str:
    if ns is None:
        return "-"
    ms = ns / 1e6
    return f"{ms:.3f} ms" if ms >= 0.001 else f"{ns / 1e3:.3f} us"


def _percent(old: float | None, new: float | None) -> str:
    if old is None or new is None:
        return ""
    if not old:
        return "" if not new else "new"
    return f"{(new - old) / old:+.1%}"


def _ratio(old: float | None, new: float | None) -> str:
    if not old or new is None:
        return ""
    return f"×{new / old:.2f}"


def _amount(value: float | None, metric: str) -> str:
    if value is None:
        return "-"
    if metric == "bytes":
        for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
            if value >= size:
                return f"{value / size:.2f} {unit}"
        return f"{value:.0f} B"
    return f"{value:.4g}"


def _points(change: float) -> str:
    text = f"{change * 100:+.1f} pt"
    return "0.0 pt" if text in ("+0.0 pt", "-0.0 pt") else text


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return out


def text_lines(diff: KernelDiff, full_names: bool = False, top: int = 0) -> list[str]:
    """The comparison as text: the time table, then the sampled lines (``top``: at most so many; 0: all)."""
    b, a = diff.before, diff.after
    shown = display_name(diff.name, full=full_names)
    head = f"{shown}: {diff.before_path} → {diff.after_path}"
    out = [head]
    for t, path in ((b, diff.before_path), (a, diff.after_path)):
        if not t.present:
            out.append(f"  (not launched in {path})")
    rows = [
        ["", "before", "after", "change", ""],
        ["time", _ms(b.time_ns) if b.present else "-", _ms(a.time_ns) if a.present else "-",
         _percent(b.time_ns, a.time_ns) if b.present and a.present else "", _ratio(b.time_ns, a.time_ns)],
        ["calls", str(b.calls) if b.present else "-", str(a.calls) if a.present else "-",
         f"{a.calls - b.calls:+d}" if b.present and a.present else "", ""],
        ["per launch", _ms(b.average_ns), _ms(a.average_ns), _percent(b.average_ns, a.average_ns),
         _ratio(b.average_ns, a.average_ns)],
    ]  # fmt: skip
    for metric in AMOUNTS:
        if metric in b.amounts or metric in a.amounts:
            per_b = b.amounts[metric] / b.calls if metric in b.amounts and b.calls else None
            per_a = a.amounts[metric] / a.calls if metric in a.amounts and a.calls else None
            rows.append(
                [
                    f"{metric} per launch",
                    _amount(per_b, metric),
                    _amount(per_a, metric),
                    _percent(per_b, per_a),
                    "",
                ]
            )
    if b.places > 1 or a.places > 1:
        rows.append(["places", str(b.places), str(a.places), "", ""])
    out += ["  " + line for line in _table(rows, {1, 2, 3, 4})]
    if not diff.sampled:
        return out
    out.append("")
    out.append(
        f"samples per source line ({diff.before_samples} → {diff.after_samples} in all; "
        "share: of the kernel's samples)"
    )
    line_rows = [["line", "before", "share", "after", "share", "change", "stall before → after", "source"]]
    chosen = diff.lines[:top] if top else diff.lines
    for r in chosen:
        source = linecache.getline(r.file, r.line).strip() if r.file else ""
        stall = (
            f"{r.before_stall or '-'} → {r.after_stall or '-'}"
            if r.before_stall != r.after_stall
            else (r.before_stall or "-")
        )
        line_rows.append(
            [
                f"{os.path.basename(r.file)}:{r.line}",
                str(r.before),
                f"{r.before_share:.1%}",
                str(r.after),
                f"{r.after_share:.1%}",
                _points(r.after_share - r.before_share),
                stall,
                source[:60],
            ]
        )
    out += ["  " + line for line in _table(line_rows, {1, 2, 3, 4, 5})]
    if top and len(diff.lines) > top:
        out.append(f"  ... {len(diff.lines) - top} more lines")
    return out
