"""The rules every profile Deuteron writes or reads keeps, and a checker that names each break.

Why (issue 39): every view sums a tree under one rule (:func:`deuteron.view.processors.inclusive`):
an inclusive-kind metric (time, bytes, flops, count, num_samples) is a frame's own value plus its
descendants'; a span metric (:data:`deuteron.model.metrics.SPAN_METRICS`, cpu_time, recorded
exclusive in Proton's sense) is the frame's whole span, so it must already hold its children's.
A file that breaks the rule still shows, but its numbers contradict each other: a module whose CPU
time is below its backward's, a kernel whose line rows hold more samples than were taken. The
views cannot tell such a file from a good one; this checker can, in one line per break, so
``deuteron view --check`` and the tests (which check every file they write) catch a collector
that regresses, and a peer's file (Proton's) is judged by the same rules.

The rules on a recorded (raw) tree:

- ``numbers``: every summable value (inclusive kind, or a span metric) is finite and not negative
  (not for a diff, whose values are changes);
- ``spans``: a frame's own span value is at least the sum of its children's inclusive values
  (integers exactly, floats to :data:`RELATIVE` of the larger);
- ``root``: ROOT's own span values, where it has any, likewise cover its children;
- ``samples``: each sampled kernel's ``num_samples`` in the tree (its own and its line rows') is
  what the file's metadata says was sampled of it (``pc_sampling``, written by ``--sample``);
- ``ranks``: several files of one job say one job id and world size, and no rank twice or missing.

On an inclusive tree (``Profile.inclusive``, made by the views), ``covers``: every frame's
summable value is at least its children's sum. The trace rules are in :mod:`.trace_invariants`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from deuteron.model.metrics import INC, PROPERTY_METRICS, span_names
from deuteron.model.tree import KERNEL, Node, Profile

RELATIVE = 1e-9  # how far below its children's sum a float may fall (rounding, not a break)
NUM_SAMPLES = "num_samples"
SAMPLING_META = "pc_sampling"  # what --sample writes in the metadata (collect.backends.cupti.sampled_lines)

NUMBERS, SPANS, ROOT_RULE, COVERS, SAMPLES, RANKS = "numbers", "spans", "root", "covers", "samples", "ranks"


@dataclass(frozen=True)
class Violation:
    """One break of one rule: where (a frame's path ``ROOT > a > b``, a file, a trace lane), which
    metric, and the numbers that disagree."""

    rule: str
    where: str
    metric: str
    detail: str
    # A frame's value and what it should be at least (its children's sum), for a rule that compares
    # the two: how far short it falls, for code that weighs breaks (the tests' known ones).
    value: float | None = None
    bound: float | None = None

    def __str__(self) -> str:
        return f"{self.rule}: {self.where}: {self.metric} {self.detail}"


@dataclass(frozen=True)
class RuleOutcome:
    """Whether a rule was checked, and if not, why it could not apply (said, never a silent pass)."""

    rule: str
    applied: bool = True
    note: str = ""  # why it could not apply, or what part of it did

    def __str__(self) -> str:
        if not self.applied:
            return f"{self.rule} n/a ({self.note})"
        return f"{self.rule} ({self.note})" if self.note else self.rule


@dataclass
class Audit:
    """What a check found: the violations, and each rule's outcome."""

    violations: list[Violation] = field(default_factory=list)
    rules: list[RuleOutcome] = field(default_factory=list)

    def rule(self, name: str, applied: bool = True, note: str = "") -> None:
        self.rules.append(RuleOutcome(name, applied, note))


def number_text(value: float) -> str:
    """A number as a violation shows it: integers with thousands separators, floats to 12 digits."""
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.12g}" if math.isfinite(value) else str(value)


def falls_short(own: float, below: float) -> bool:
    """Whether ``own`` is below ``below``: exactly for integers, beyond :data:`RELATIVE` for floats."""
    if isinstance(own, int) and isinstance(below, int):
        return own < below
    return below - own > RELATIVE * max(abs(own), abs(below))


def _number(value: Any) -> int | float | None:
    """A plain number (not a bool, string or vector), else None."""
    return value if value.__class__ in (int, float) else None


class _Walk:
    """The tree in parent-before-child order, with each node's parent index, so a path is made
    only for a violation (a million-node tree keeps one tuple per node, no path strings)."""

    def __init__(self, root: Node) -> None:
        self.nodes: list[Node] = []
        self.parent: list[int] = []
        stack: list[tuple[Node, int]] = [(root, -1)]
        while stack:
            node, up = stack.pop()
            here = len(self.nodes)
            self.nodes.append(node)
            self.parent.append(up)
            stack.extend((child, here) for child in reversed(node.children.values()))

    def path(self, index: int) -> str:
        names = []
        while index >= 0:
            names.append(self.nodes[index].name)
            index = self.parent[index]
        return " > ".join(reversed(names))


def summable(profile: Profile) -> dict[str, bool]:
    """Per metric name of the tree: whether it is summed (inclusive kind, or a span metric)."""
    spans = span_names(profile.kinds)
    return {
        name: (profile.kind(name) == INC and name not in PROPERTY_METRICS) or name in spans
        for name in profile.metric_names()
    }


def audit_profile(profile: Profile) -> Audit:
    """Every rule that applies to one profile (a raw tree or an inclusive one), with outcomes."""
    audit = Audit()
    if "diff_against" in profile.metadata:
        why = "a diff: its values are changes"
        for name in (COVERS,) if profile.inclusive else (NUMBERS, SPANS, ROOT_RULE):
            audit.rule(name, False, why)
    elif profile.inclusive:
        _covers(profile, _Walk(profile.root), audit)
    else:
        walk = _Walk(profile.root)
        _numbers(profile, walk, audit)
        _spans(profile, walk, audit)
    _samples(profile, audit)
    return audit


def check_profile(profile: Profile) -> list[Violation]:
    """The violations of :func:`audit_profile`: an empty list for a profile that keeps every rule."""
    return audit_profile(profile).violations


def _numbers(profile: Profile, walk: _Walk, audit: Audit) -> None:
    """Summable values are finite and not negative (a vector's elements too)."""
    summed = summable(profile)
    for index, node in enumerate(walk.nodes):
        for name, value in node.metrics.items():
            if not summed.get(name):
                continue
            for item in value if isinstance(value, list) else (value,):
                v = _number(item)
                if v is None:
                    continue
                if not math.isfinite(v):
                    audit.violations.append(Violation(NUMBERS, walk.path(index), name, f"is {v}, not finite"))
                elif v < 0:
                    shown = number_text(v)
                    audit.violations.append(
                        Violation(NUMBERS, walk.path(index), name, f"is {shown}, below 0")
                    )
    audit.rule(NUMBERS)


def _children_text(node: Node, name: str, inc: dict[int, float]) -> str:
    """The largest children's inclusive values, for a violation's line."""
    values = sorted(
        ((inc[id(c)], c.name) for c in node.children.values() if id(c) in inc), key=lambda t: -t[0]
    )
    shown = ", ".join(f"{child} {number_text(v)}" for v, child in values[:3])
    return shown + (f", and {len(values) - 3} more" if len(values) > 3 else "")


def _spans(profile: Profile, walk: _Walk, audit: Audit) -> None:
    """A span metric's own value covers its children's inclusive sum; ROOT's too (its own rule).

    Children first: a node's inclusive value is its own, or its children's sum where it has none
    or (on a broken tree) where that is larger, as the views take it, so one break is named once
    and not again at every frame above it."""
    spans = sorted(span_names(profile.kinds) & profile.metric_names())
    if not spans:
        audit.rule(SPANS, False, "no span metric")
        audit.rule(ROOT_RULE, False, "no span metric")
        return
    root_has = False
    for name in spans:
        inc: dict[int, float] = {}
        below: dict[int, float] = {}
        for index in range(len(walk.nodes) - 1, -1, -1):
            node = walk.nodes[index]
            own = _number(node.metrics.get(name))
            own = own if own is not None and math.isfinite(own) else None
            kids = below.pop(index, None)
            if index == 0:
                root_has = root_has or own is not None
            if own is not None and kids is not None and falls_short(own, kids):
                text = f"{number_text(own)} is below its children's {number_text(kids)}"
                text += f" ({_children_text(node, name, inc)})"
                audit.violations.append(
                    Violation(SPANS if index else ROOT_RULE, walk.path(index), name, text, own, kids)
                )
            value = own if kids is None else kids if own is None else max(own, kids)
            if value is None:
                continue
            inc[id(node)] = value
            up = walk.parent[index]
            if up >= 0:
                below[up] = below.get(up, 0) + value
    audit.rule(SPANS)
    audit.rule(ROOT_RULE, root_has, "" if root_has else "ROOT has no span value of its own")


def _covers(profile: Profile, walk: _Walk, audit: Audit) -> None:
    """On an inclusive tree: each summable number covers its children's sum."""
    summed = summable(profile)
    for index, node in enumerate(walk.nodes):
        if not node.children:
            continue
        sums: dict[str, float] = {}
        for child in node.children.values():
            for name, value in child.metrics.items():
                v = _number(value)
                if v is not None and summed.get(name):
                    sums[name] = sums.get(name, 0) + v
        for name, kids in sums.items():
            own = _number(node.metrics.get(name))
            if own is None or falls_short(own, kids):
                shown = "missing" if own is None else number_text(own)
                audit.violations.append(
                    Violation(
                        COVERS,
                        walk.path(index),
                        name,
                        f"{shown} is below its children's {number_text(kids)}",
                        own,
                        kids,
                    )
                )
    audit.rule(COVERS)


def _sampled_kernels(root: Node) -> tuple[dict[str, int | float], dict[str, list[Node]]]:
    """Per kernel name: the num_samples of its nodes' subtrees (its own and its line rows'), and
    the nodes (a kernel launched from several places has its samples shared among them)."""
    totals: dict[str, int | float] = {}
    places: dict[str, list[Node]] = {}
    for node in root.walk():
        if node.type != KERNEL:
            continue
        count: int | float = 0
        for below in node.walk():
            count += _number(below.metrics.get(NUM_SAMPLES)) or 0
        if count:
            totals[node.name] = totals.get(node.name, 0) + count
            places.setdefault(node.name, []).append(node)
    return totals, places


def _samples(profile: Profile, audit: Audit) -> None:
    """Each sampled kernel's samples in the tree agree with the metadata's count of them."""
    meta = profile.metadata.get(SAMPLING_META)
    has_samples = NUM_SAMPLES in profile.metric_names()
    if not isinstance(meta, dict) or not isinstance(meta.get("kernels"), dict):
        why = "no sampled totals in the metadata" if has_samples else "not a sampled profile"
        audit.rule(SAMPLES, False, why)
        return
    entries: dict[str, int | float] = {}
    for name, entry in meta["kernels"].items():
        said = _number(entry.get("samples")) if isinstance(entry, dict) else None
        if said is not None:
            entries[str(name)] = said
    in_tree, places = _sampled_kernels(profile.root)
    total = _number(meta.get("samples"))
    if total is not None and total != sum(in_tree.values()):
        audit.violations.append(
            Violation(
                SAMPLES,
                profile.root.name,
                NUM_SAMPLES,
                f"{number_text(sum(in_tree.values()))} under the kernels, but the metadata says "
                f"{number_text(total)} were sampled",
            )
        )
    if total is not None and sum(entries.values()) != total:
        # A kernel compiled twice (two cubins of one name) keeps one entry: kernels cannot be checked.
        held = number_text(sum(entries.values()))
        audit.rule(
            SAMPLES, True, f"the total only: the metadata's kernels hold {held} of {number_text(total)}"
        )
        return
    for name in sorted(set(entries) | set(in_tree)):
        said, found = entries.get(name, 0), in_tree.get(name, 0)
        if said != found:
            nodes = places.get(name, [])
            where = f"kernel {name}" + (f" ({len(nodes)} places)" if len(nodes) > 1 else "")
            audit.violations.append(
                Violation(
                    SAMPLES,
                    where,
                    NUM_SAMPLES,
                    f"{number_text(found)} in the tree (own and line rows), but the metadata says "
                    f"{number_text(said)} were sampled",
                )
            )
    audit.rule(SAMPLES)


def _meta_text(profile: Profile, key: str) -> str | None:
    value = profile.metadata.get(key)
    return str(value) if isinstance(value, (str, int)) and str(value) else None


def audit_job(files: Sequence[tuple[str, Profile]]) -> Audit:
    """The ``ranks`` rule over several files given together: one job (one ``job_id`` and
    ``world_size``, as :mod:`deuteron.collect.job` writes them), each rank once, none missing."""
    audit = Audit()
    if len(files) < 2:
        audit.rule(RANKS, False, "one file")
        return audit
    jobs = {source: _meta_text(p, "job_id") for source, p in files}
    ranks = {source: _meta_text(p, "rank") for source, p in files}
    sizes = {source: _meta_text(p, "world_size") for source, p in files}
    if not any(jobs.values()) and not any(ranks.values()):
        audit.rule(RANKS, False, "no file says its job or rank")
        return audit
    for key, said in (("job_id", jobs), ("world_size", sizes)):
        if len(set(said.values())) > 1:
            text = "; ".join(f"{source} says {value or 'nothing'}" for source, value in said.items())
            audit.violations.append(Violation(RANKS, "the files", key, f"differs: {text}"))
    seen: dict[str, str] = {}
    for source, rank in ranks.items():
        if rank is None:
            audit.violations.append(Violation(RANKS, source, "rank", "is not said"))
        elif rank in seen:
            audit.violations.append(Violation(RANKS, f"{seen[rank]} and {source}", "rank", f"{rank} twice"))
        else:
            seen[rank] = source
    size_texts = {s for s in sizes.values() if s is not None}
    if len(size_texts) == 1 and (size := size_texts.pop()).isdigit():
        missing = sorted(set(range(int(size))) - {int(r) for r in seen if r.isdigit()})
        outside = sorted(r for r in seen if not r.isdigit() or int(r) >= int(size))
        if missing:
            shown = ", ".join(str(r) for r in missing[:8]) + (", ..." if len(missing) > 8 else "")
            audit.violations.append(
                Violation(
                    RANKS, "the files", "rank", f"{shown} missing of the job's {size} ({len(seen)} given)"
                )
            )
        for rank in outside:
            audit.violations.append(
                Violation(RANKS, seen[rank], "rank", f"{rank} is not one of 0 to {int(size) - 1}")
            )
    audit.rule(RANKS)
    return audit
