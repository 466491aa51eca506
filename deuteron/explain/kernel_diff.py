"""One kernel compiled twice, side by side: ``deuteron diff before.py after.py --kernel NAME``.

Each script (a reproducer written by ``deuteron repro``, or any script that launches the kernel)
is explained as ``deuteron explain`` explains it: run, its launch captured, cross-compiled for the
target without a GPU (:func:`deuteron.explain.runner.run`). Then, before → after: the launch
options and constexprs that differ, registers, spills, shared memory and occupancy; the IR lines
each source line became in each stage; and a unified diff of each stage in which every changed
line carries the source line it came from.

**Matching IR lines.** Value names are renumbered whenever one op is added (``%a_16`` becomes
``%a_17``, PTX's ``%r25`` becomes ``%r26``), which would make every later line differ; lines are
matched with their numbers masked (:func:`_masked`) and shown as written. Source locations are
not part of a line (MLIR's ``loc(...)``, PTX's ``.loc`` and ``.file``, and its debug sections,
which spell the file's name): the two scripts are different files.

**Aligning source lines.** The two files need not keep the kernel on the same lines (a helper
added above it moves it down): their lines are matched with :mod:`difflib`, and a line of the
after file is shown by its number in the before file when it has one.
"""

from __future__ import annotations

import difflib
import linecache
import re
from dataclasses import dataclass, field
from typing import Any

from deuteron.explain.analysis import KernelAnalysis
from deuteron.explain.errors import ExplainError
from deuteron.explain.stages import IRLine, source_line
from deuteron.process.program import Program

DEFAULT_STAGES = ("ttir", "ttgir", "ptx")
CONTEXT = 2  # unchanged IR lines shown around each change

_NUMBERED = re.compile(r"(%[A-Za-z_]*?)_?\d+\b")
_LABEL = re.compile(r"(\$L__\w+?)\d+\b|(\^bb)\d+\b|(#loc)\d*\b")


def _masked(text: str) -> str:
    """The line with value and label numbers masked, so a renumbering is no change."""
    text = _NUMBERED.sub(lambda m: m.group(1) + "#", text)
    return _LABEL.sub(lambda m: (m.group(1) or m.group(2) or m.group(3)) + "#", text)


def _without_locs(text: str) -> str:
    """MLIR's inline ``loc(...)`` (the arguments' own, left in a line by :mod:`.stages`) removed."""
    out, i = [], 0
    while True:
        j = text.find(" loc(", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out).rstrip()
        out.append(text[i:j])
        depth, k, quoted = 0, j + 4, False
        while k < len(text):
            ch = text[k]
            if ch == '"':
                quoted = not quoted
            elif not quoted and ch == "(":
                depth += 1
            elif not quoted and ch == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1


def compile_script(path: str, kernel: str | None, target: str | None) -> KernelAnalysis:
    """The kernel ``path`` launches, compiled for ``target``; ExplainError when it launches none,
    several kernels named like ``kernel``, or one that does not compile."""
    from deuteron.explain.runner import run

    if target is not None and "," in target:
        raise ExplainError("--target: diff compares one target at a time, e.g. --target cuda:90")
    result = run(Program.script(path), targets=[target] if target else None, kernel=kernel)
    report = result.report
    if report.errors:
        raise ExplainError(report.errors[0])
    if result.ended_by and not report.kernels:
        raise ExplainError(f"{path} {result.ended_by} before launching a kernel")
    names = sorted({a.spec.name for a in report.kernels})
    if kernel is not None and kernel in names:
        names = [kernel]
    if len(names) != 1:
        ask = "give more of the name with --kernel" if kernel else "choose one with --kernel NAME"
        raise ExplainError(f"{path} launches {len(names)} kernels ({', '.join(names)}): {ask}")
    chosen = [a for a in report.kernels if a.spec.name == names[0]]
    return chosen[-1]  # a reproducer has one launch; a script's last specialization otherwise


# --- what changed ---------------------------------------------------------------------------------


@dataclass
class Row:
    """One fact, before and after (None where the target cannot say)."""

    what: str
    before: Any
    after: Any

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass
class Hunk:
    """A stretch of one stage's diff: its lines as ``(tag, source line, text)``, tag ``-``, ``+`` or
    `` ``, and the source lines its changed ops came from (before-file numbers)."""

    before_start: int
    before_count: int
    after_start: int
    after_count: int
    lines: list[tuple[str, int | None, str]]
    sources: list[int]


@dataclass
class StageDiff:
    stage: str
    before_lines: int
    after_lines: int
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return sum(1 for h in self.hunks for tag, _, _ in h.lines if tag != " ")


@dataclass
class SourceRow:
    """One source line (its number in each file) and how many lines of each stage it became."""

    before_line: int | None
    after_line: int | None
    text: str
    counts: dict[str, tuple[int, int]]


@dataclass
class CompiledDiff:
    """What ``deuteron diff before.py after.py`` shows of one kernel compiled from each."""

    name: str
    target: str
    before_path: str
    after_path: str
    rows: list[Row]
    sources: list[SourceRow]
    stages: list[StageDiff]

    def as_json(self) -> dict[str, Any]:
        return {
            "kernel": self.name,
            "target": self.target,
            "before": self.before_path,
            "after": self.after_path,
            "facts": [{"what": r.what, "before": r.before, "after": r.after} for r in self.rows],
            "source_lines": [
                {"before": s.before_line, "after": s.after_line, "text": s.text, "stages": s.counts}
                for s in self.sources
            ],
            "stages": [
                {
                    "stage": d.stage,
                    "before_lines": d.before_lines,
                    "after_lines": d.after_lines,
                    "hunks": [{"sources": h.sources, "lines": [list(x) for x in h.lines]} for h in d.hunks],
                }
                for d in self.stages
            ],
        }


def _args(a: KernelAnalysis) -> dict[str, str]:
    return {arg.name: arg.describe() for arg in a.spec.args}


def facts(before: KernelAnalysis, after: KernelAnalysis) -> list[Row]:
    """Launch options, the arguments that differ, resources and occupancy, before and after."""
    rows = [
        Row(name, before.spec.option(name), after.spec.option(name)) for name in ("num_warps", "num_stages")
    ]
    args_b, args_a = _args(before), _args(after)
    for name in list(args_b) + [n for n in args_a if n not in args_b]:
        if args_b.get(name) != args_a.get(name):
            rows.append(Row(f"argument {name}", args_b.get(name), args_a.get(name)))
    rows += [
        Row("registers/thread", before.registers, after.registers),
        Row("spill bytes", before.spill_bytes, after.spill_bytes),
        Row("shared memory bytes", before.shared_bytes, after.shared_bytes),
    ]
    ob, oa = before.occupancy, after.occupancy
    rows += [
        Row("blocks/SM", ob.blocks_per_sm if ob else None, oa.blocks_per_sm if oa else None),
        Row("warps/SM", ob.warps_per_sm if ob else None, oa.warps_per_sm if oa else None),
        Row("occupancy", round(ob.fraction, 4) if ob else None, round(oa.fraction, 4) if oa else None),
        Row("limited by", ob.limiter if ob else None, oa.limiter if oa else None),
    ]
    if before.instructions or after.instructions:
        rows.append(Row("SASS instructions", len(before.instructions), len(after.instructions)))
    return rows


def line_map(before_file: str, after_file: str) -> dict[int, int]:
    """after-file line → before-file line, for the lines the two files share."""
    b = linecache.getlines(before_file)
    a = linecache.getlines(after_file)
    out: dict[int, int] = {}
    for block in difflib.SequenceMatcher(None, b, a, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            out[block.b + k + 1] = block.a + k + 1
    return out


def _kept(stage: str, ir: IRLine) -> bool:
    text = ir.text.strip()
    return bool(text) and not (stage in ("ptx", "amdgcn") and text.startswith(".file"))


def _side(a: KernelAnalysis, stage: str, to_before: dict[int, int] | None) -> list[tuple[str, int | None]]:
    out = []
    for ir in a.stages.get(stage, []):
        if stage in ("ptx", "amdgcn") and ir.text.strip().startswith(".section") and ".debug" in ir.text:
            break  # the debug sections: bytes of the line table and the file's name, no code
        if not _kept(stage, ir):
            continue
        line = source_line(ir, a.spec.file)
        if to_before is not None and line is not None:
            line = to_before.get(line, line)
        out.append((_without_locs(ir.text.expandtabs(8)).rstrip(), line))
    return out


def stage_diff(
    before: KernelAnalysis, after: KernelAnalysis, stage: str, to_before: dict[int, int]
) -> StageDiff:
    b = _side(before, stage, None)
    a = _side(after, stage, to_before)
    out = StageDiff(stage, len(b), len(a))
    matcher = difflib.SequenceMatcher(
        None, [_masked(t) for t, _ in b], [_masked(t) for t, _ in a], autojunk=False
    )
    for group in matcher.get_grouped_opcodes(CONTEXT):
        lines: list[tuple[str, int | None, str]] = []
        sources: set[int] = set()
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [(" ", line, text) for text, line in b[i1:i2]]
                continue
            for text, line in b[i1:i2]:
                lines.append(("-", line, text))
                if line is not None:
                    sources.add(line)
            for text, line in a[j1:j2]:
                lines.append(("+", line, text))
                if line is not None:
                    sources.add(line)
        first, last = group[0], group[-1]
        out.hunks.append(
            Hunk(first[1] + 1, last[2] - first[1], first[3] + 1, last[4] - first[3], lines, sorted(sources))
        )
    return out


def source_rows(
    before: KernelAnalysis, after: KernelAnalysis, stages: list[str], to_before: dict[int, int]
) -> list[SourceRow]:
    """Each source line whose IR changed in size in any stage, in file order."""
    counts: dict[int, dict[str, list[int]]] = {}
    to_after = {b: a for a, b in to_before.items()}
    for i, (a, mapping) in enumerate(((before, None), (after, to_before))):
        for stage in stages:
            for _, line in _side(a, stage, mapping):
                if line is not None:
                    counts.setdefault(line, {}).setdefault(stage, [0, 0])[i] += 1
    rows = []
    for line in sorted(counts):
        per = {s: (c[0], c[1]) for s, c in counts[line].items()}
        if all(b == a for b, a in per.values()):
            continue
        text = linecache.getline(before.spec.file, line).strip()
        rows.append(SourceRow(line, to_after.get(line), text, per))
    return rows


def diff_compiled(
    before_path: str,
    after_path: str,
    kernel: str | None,
    target: str | None = None,
    stages: list[str] | None = None,
) -> CompiledDiff:
    """Compile the kernel each script launches and compare the two (see the module's text)."""
    before = compile_script(before_path, kernel, target)
    after = compile_script(after_path, kernel, target)
    chosen = (
        list(stages) if stages else [s for s in DEFAULT_STAGES if s in before.stages or s in after.stages]
    )
    for stage in chosen:
        if stage not in before.stages and stage not in after.stages:
            have = ", ".join(before.stages)
            raise ExplainError(f"--stage {stage}: {before.spec.target.name} has no {stage} (it has {have})")
    to_before = line_map(before.spec.file, after.spec.file)
    name = (
        before.spec.name if before.spec.name == after.spec.name else f"{before.spec.name} → {after.spec.name}"
    )
    return CompiledDiff(
        name,
        before.spec.target.name,
        before_path,
        after_path,
        facts(before, after),
        source_rows(before, after, chosen, to_before),
        [stage_diff(before, after, s, to_before) for s in chosen],
    )


# --- text -----------------------------------------------------------------------------------------


def _value(value: Any, what: str) -> str:
    if value is None:
        return "-"
    if what == "occupancy" and isinstance(value, float):
        return f"{value:.0%}"
    return str(value)


def _change(before: Any, after: Any) -> str:
    if before == after:
        return ""
    if isinstance(before, (int, float)) and isinstance(after, (int, float)) and not isinstance(before, bool):
        delta = after - before
        if isinstance(delta, float):
            return f"{delta * 100:+.0f} pt" if abs(before) <= 1 and abs(after) <= 1 else f"{delta:+.4g}"
        return f"{delta:+d}" + (f" ({delta / before:+.0%})" if before else "")
    return "changed"


def text_lines(diff: CompiledDiff, show_ir: bool = True) -> list[str]:
    """The comparison as text: facts, the source lines whose IR changed, then each stage's diff."""
    out = [f"{diff.name} on {diff.target}: {diff.before_path} → {diff.after_path}"]
    table = [["", "before", "after", "change"]]
    for r in diff.rows:
        table.append([r.what, _value(r.before, r.what), _value(r.after, r.what), _change(r.before, r.after)])
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    for row in table:
        out.append(
            "  "
            + "  ".join(
                [row[0].ljust(widths[0]), row[1].rjust(widths[1]), row[2].rjust(widths[2]), row[3]]
            ).rstrip()
        )
    stage_names = [d.stage for d in diff.stages]
    if diff.sources:
        out.append("")
        out.append(
            f"IR lines per source line, before → after (lines whose IR changed in size: {len(diff.sources)})"
        )
        for s in diff.sources:
            where = (
                f"{s.before_line}"
                if s.after_line in (None, s.before_line)
                else f"{s.before_line}/{s.after_line}"
            )
            counts = "  ".join(
                f"{st} {s.counts[st][0]}→{s.counts[st][1]}" for st in stage_names if st in s.counts
            )
            out.append(f"  {where:>7} │ {counts:<40} │ {s.text[:70]}")
    for d in diff.stages:
        out.append("")
        if not d.hunks:
            out.append(f"{d.stage}: the same {d.before_lines} lines (value numbers aside)")
            continue
        out.append(f"{d.stage}: {d.before_lines} → {d.after_lines} lines, {d.changed} changed")
        if not show_ir:
            continue
        for h in d.hunks:
            src = ", ".join(str(n) for n in h.sources[:8]) + (" ..." if len(h.sources) > 8 else "")
            out.append(
                f"@@ -{h.before_start},{h.before_count} +{h.after_start},{h.after_count} @@"
                + (f" source line{'s' if len(h.sources) > 1 else ''} {src}" if h.sources else "")
            )
            for tag, line, text in h.lines:
                out.append(f"{tag}{line if line is not None else '':>5} │ {text}")
    return out
