"""What ``deuteron learn`` prints: the list with progress, an exercise's page, a check's verdict
with the findings as hints. Plain text, so a terminal, a pipe and a notebook show the same."""

from __future__ import annotations

import linecache
import os

from deuteron.learn.catalog import Exercise
from deuteron.learn.exercises import all_exercises
from deuteron.learn.grade import CaseResult, Grade
from deuteron.learn.hints import for_finding
from deuteron.learn.progress import Progress
from deuteron.model.finding import Finding
from deuteron.process.terminal import printable, short_path

MARK = {"done": "done", "tried": "tried", "new": "new"}


def listing(exercises: list[Exercise], progress: Progress) -> str:
    lines = [f"{'#':>3}  {'status':<6}  exercise"]
    for ex in exercises:
        lines.append(f"{ex.number:>3}  {progress.status(ex.name):<6}  {ex.slug:<16}  {ex.title}")
    done = sum(progress.status(ex.name) == "done" for ex in exercises)
    lines.append("")
    lines.append(f"{done} of {len(exercises)} done; progress in {progress.path}")
    upcoming = next((ex for ex in exercises if progress.status(ex.name) != "done"), None)
    if upcoming is not None:
        lines.append(f"next: deuteron learn show {upcoming.number}")
    return "\n".join(lines)


def page(ex: Exercise, status: str) -> str:
    """The statement, then what the checker does with the kernel and the commands to go on."""
    shapes = "; ".join(c.label for c in ex.cases)
    tolerance = f"atol {ex.atol:g}, rtol {ex.rtol:g}"
    lines = [
        f"Exercise {ex.number} of {len(all_exercises())} ({ex.name}), {status}",
        "",
        ex.statement().rstrip(),
        "",
        "Your kernel:",
        f"  @triton.jit def {ex.signature()}",
        "How the checker launches it:",
        f"  {ex.launch_text}",
        "What is checked, on each of the shapes " + shapes + ":",
        f"  the outputs against torch ({ex.reference_text}; {tolerance}),",
        "  and no finding of deuteron check (out of bounds, races, NaN, ...) at warning or worse",
        "",
        f"Start:  deuteron learn start {ex.number}          (writes learn/{ex.name}.py)",
        f"Check:  deuteron learn check {ex.number} learn/{ex.name}.py",
        f"Stuck:  deuteron learn hint {ex.number}",
    ]
    if ex.buggy_starter:
        lines.insert(2, "The starter is a whole kernel with a bug in it: run the check first.\n")
    return "\n".join(lines)


def verdict(result: Grade) -> str:
    ex = result.exercise
    who = "the reference solution" if result.solution else short_path(result.path)
    lines = [f"deuteron learn: exercise {ex.number} ({ex.name}): {ex.kernel} in {who}"]
    shown: set[tuple[str, str, int | None]] = set()
    for c in result.cases:
        lines += case_lines(ex, c, shown)
    good = sum(c.passed for c in result.cases)
    total = len(result.cases)
    took = f" ({result.seconds:.2f} s)"
    if result.passed:
        tail = f"all {total} shapes pass{took}."
        if not result.solution:
            tail += f" Exercise {ex.number} done." + (
                f" Next: deuteron learn show {ex.number + 1}"
                if ex.number < len(all_exercises())
                else " That was the last one."
            )
    else:
        tail = f"{good} of {total} shapes pass{took}; stuck? deuteron learn hint {ex.number}"
    lines.append(f"deuteron learn: {tail}")
    for path in result.written:
        lines.append(f"deuteron learn: wrote {short_path(path)}")
    if result.written:
        pattern = os.path.join(short_path(os.path.dirname(result.written[0])), f"{ex.name}.*")
        yours = any(".yours." in os.path.basename(str(path)) for path in result.written)
        whose = "your accesses beside the reference's" if yours else "the reference's accesses"
        lines.append(f"deuteron learn: see {whose}: deuteron serve {pattern}")
    return "\n".join(lines)


def case_lines(ex: Exercise, c: CaseResult, shown: set[tuple[str, str, int | None]]) -> list[str]:
    """A case's verdict line, then why it failed: the error, the wrong outputs, and the findings
    grouped by kind and line: each group in full the first time (its first finding, the tensors
    of the others), one line when an earlier case already showed it."""
    label = c.case.label
    if c.passed:
        return [f"  pass  {label}"]
    lines = [printable(f"  FAIL  {label}: {why}") for why in ([c.error] if c.error else []) + c.wrong]
    groups: dict[tuple[str, str, int | None], list[Finding]] = {}
    for f in c.failing:
        groups.setdefault((f.kind, f.file, f.line), []).append(f)
    for key, found in groups.items():
        first = found[0]
        tensors = list(dict.fromkeys(f.tensor for f in found if f.tensor))
        where = f"{first.severity} {first.kind} at {short_path(first.file)}:{first.line}"
        if key in shown:
            example = _example(first)
            lines.append(printable(f"  FAIL  {label}: {where}{', ' + example if example else ''} (as above)"))
            continue
        shown.add(key)
        lines.append(f"  FAIL  {label}: {first.severity} {first.kind}")
        lines += ["        " + line for line in finding_lines(first)]
        if len(tensors) > 1:
            lines.append(printable(f"        and on the same line: {', '.join(tensors[1:])}"))
        hint = for_finding(ex, first)
        if hint:
            lines.append(f"        hint: {hint}")
    return lines


def finding_lines(f: Finding) -> list[str]:
    """A finding as ``deuteron check`` shows it: where, what, the source line with a caret, and
    the example lane (program and tensor index)."""
    head = f"{f.kind} in {f.kernel} at {short_path(f.file)}:{f.line}"
    if f.programs:
        head += f" ({f.programs} program{'s' if f.programs != 1 else ''})"
    lines = [printable(head), printable(f.message)]
    text = linecache.getline(f.file, f.line).rstrip("\n") if f.line else ""
    if text:
        gutter = f"{f.line:>5} | "
        lines.append(gutter + printable(text))
        if f.column is not None:
            width = max(1, (f.end_column if f.end_column is not None else len(text)) - f.column)
            lines.append(" " * (len(gutter) - 2) + "| " + " " * f.column + "^" * width)
    example = _example(f)
    if example:
        lines.append(printable(example))
    return lines


def _example(f: Finding) -> str:
    """The finding's example lane: ``e.g. program (1, 0, 0), x_ptr[100]``, or ""."""
    example = []
    if f.program is not None:
        example.append(f"program {f.program}")
    if f.index is not None and f.tensor:
        example.append(f"{f.tensor}[{', '.join(str(i) for i in f.index)}]")
    return "e.g. " + ", ".join(example) if example else ""
